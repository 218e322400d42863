package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/claimlimit"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// claimLimitedJobs is the claim of a queue gated by keys or limits: the
// rounds of claimlimit.Claim, each a claimLimitedRound. kinds is the kind
// filter's argument (nil for none).
func (d *Driver) claimLimitedJobs(ctx context.Context, p driver.ClaimJobsParams, kinds any) ([]*fencedtype.Job, error) {
	return claimlimit.Claim(p.Limit, func(limit int) ([]*fencedtype.Job, int, error) {
		p.Limit = limit
		return d.claimLimitedRound(ctx, p, kinds)
	})
}

// claimLimitedRound is one round of a limited claim, in one write
// transaction: pick, read the candidates' load, admit and start. It
// returns the jobs it started and how many candidates it picked.
func (d *Driver) claimLimitedRound(ctx context.Context, p driver.ClaimJobsParams, kinds any) ([]*fencedtype.Job, int, error) {
	pick, args := claimLimitedPickAnyKindSQL, []any{p.Queue, claimlimit.Window(p.Limit)}
	switch len(p.Kinds) {
	case 0:
	case 1:
		pick, args = claimLimitedPickOneKindSQL, append(args, kinds)
	default:
		pick, args = claimLimitedPickOfKindsSQL, append(args, kinds)
	}
	var jobs []*fencedtype.Job
	var picked int
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		jobs, picked = nil, 0
		ids, err := sqldb.All(ctx, tx, sqldb.Value[int64], pick, args...)
		picked = len(ids)
		if err != nil || len(ids) == 0 {
			return err
		}
		idsJSON, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		cands, err := sqldb.All(ctx, tx, func(r sqldb.Scanner) (claimlimit.Candidate, error) {
			return claimlimit.ScanCandidate(r)
		}, claimLimitLoadSQL, string(idsJSON))
		if err != nil {
			return err
		}
		var load claimlimit.Load
		if err := readClaimGlobals(ctx, tx, p.Queue, &load); err != nil {
			return err
		}
		admitted := claimlimit.Admit(cands, load, p.Limit)
		if len(admitted) == 0 {
			return nil
		}
		admittedJSON, err := json.Marshal(admitted)
		if err != nil {
			return err
		}
		jobs, err = sqldb.All(ctx, tx, scanJob, claimLimitedStartSQL, p.Queue, p.Owner, string(admittedJSON), p.TTL.Microseconds())
		if err == nil && len(jobs) != len(admitted) {
			err = fmt.Errorf("started %d of %d admitted jobs", len(jobs), len(admitted))
		}
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return jobs, picked, nil
}

// readClaimGlobals reads the queue's global limits into load and, when it
// has any, its running jobs by kind.
func readClaimGlobals(ctx context.Context, tx *sql.Tx, queue string, load *claimlimit.Load) error {
	type kindCount struct {
		kind string
		n    int
	}
	scan := func(r sqldb.Scanner) (kindCount, error) {
		var k kindCount
		return k, r.Scan(&k.kind, &k.n)
	}
	globals, err := sqldb.All(ctx, tx, scan, claimGlobalLimitsSQL, queue)
	if err != nil || len(globals) == 0 {
		return err
	}
	for _, g := range globals {
		load.AddGlobal(g.kind, g.n)
	}
	running, err := sqldb.All(ctx, tx, scan, claimRunningByKindSQL, queue)
	for _, r := range running {
		load.AddRunning(r.kind, r.n)
	}
	return err
}
