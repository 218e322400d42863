package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/claimlimit"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// claimLimitedJobs is the claim of a queue gated by keys or limits: the
// rounds of claimlimit.Claim, each a claimLimitedRound.
func (d *Driver) claimLimitedJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, error) {
	return claimlimit.Claim(p.Limit, func(limit int) ([]*fencedtype.Job, int, error) {
		p.Limit = limit
		return d.claimLimitedRound(ctx, p)
	})
}

// claimLimitedRound is one round of a limited claim: one transaction that
// picks and locks candidates, locks the gate rows of their keys in name
// order, reads their load afresh, admits and starts. The transaction is
// READ COMMITTED whatever the session's level, so that each read after
// the gate locks takes a snapshot of its own: under REPEATABLE READ the
// load would be read from the snapshot of the pick, before the locks. A
// deadlock is retried. It returns the jobs it started and how many
// candidates it picked.
//
// A gate row missing (a key's first claim) ends the transaction; the rows
// are added, each by a statement that commits at once, and the round runs
// again. They are never added inside the claim's transaction: two claimers
// inserting the same row there would deadlock, and adding them on another
// connection while the transaction holds one could exhaust the pool.
func (d *Driver) claimLimitedRound(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, int, error) {
	for try := 1; ; try++ {
		jobs, picked, missing, err := d.claimLimitedTx(ctx, p)
		if err != nil || len(missing) == 0 || try == 5 {
			return jobs, picked, err
		}
		for _, n := range missing {
			if _, err := d.db.ExecContext(ctx, claimGateAddSQL, n); err != nil {
				return nil, 0, err
			}
		}
	}
}

// claimLimitedTx runs a limited round's transaction once. When gate rows
// are missing it claims nothing and returns their names.
func (d *Driver) claimLimitedTx(ctx context.Context, p driver.ClaimJobsParams) (jobs []*fencedtype.Job, picked int, missing []string, err error) {
	err = d.inTxOpts(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, func(tx *sql.Tx) error {
		jobs, picked, missing = nil, 0, nil
		args := make([]any, 0, claimLimitedPickQueues+len(p.Kinds)+1)
		for range claimLimitedPickQueues {
			args = append(args, p.Queue)
		}
		args = append(append(args, anys(p.Kinds)...), claimlimit.Window(p.Limit))
		cands, err := sqldb.All(ctx, tx, func(r sqldb.Scanner) (claimlimit.Candidate, error) {
			var c claimlimit.Candidate
			return c, r.Scan(&c.ID, &c.Kind, &c.ConcurrencyKey, &c.SequenceKey)
		}, claimLimitedPick(len(p.Kinds)), args...)
		picked = len(cands)
		if err != nil || len(cands) == 0 {
			return err // an empty pick leaves the hint: the next pick decides
		}
		var load claimlimit.Load
		if err := readKindCounts(ctx, tx, claimGlobalLimitsSQL, p.Queue, load.AddGlobal); err != nil {
			return err
		}
		names := claimlimit.LockNames(p.Queue, cands, load.HasGlobal())
		d.limited.Set(p.Queue, len(names) > 0)
		if missing, err = lockGates(ctx, tx, names); err != nil || len(missing) > 0 {
			return err
		}
		ids := make([]int64, len(cands))
		for i, c := range cands {
			ids[i] = c.ID
		}
		cands, err = sqldb.All(ctx, tx, func(r sqldb.Scanner) (claimlimit.Candidate, error) {
			return claimlimit.ScanCandidate(r)
		}, fmt.Sprintf(claimLimitLoadSQL, placeholders(len(ids))), anys(ids)...)
		if err != nil {
			return err
		}
		if load.HasGlobal() {
			if err := readKindCounts(ctx, tx, claimRunningByKindSQL, p.Queue, load.AddRunning); err != nil {
				return err
			}
		}
		admitted := claimlimit.Admit(cands, load, p.Limit)
		if len(admitted) == 0 {
			return nil
		}
		jobs, err = startJobs(ctx, tx, p, admitted)
		return err
	})
	return jobs, picked, missing, err
}

// lockGates locks the gate rows of names (sorted) inside tx, in name order,
// and returns the names that have no row yet (then it locked nothing that
// matters: the caller ends the transaction).
func lockGates(ctx context.Context, tx *sql.Tx, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	locked, err := sqldb.All(ctx, tx, sqldb.Value[string], fmt.Sprintf(claimGatesLockSQL, placeholders(len(names))), anys(names)...)
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(locked))
	for _, n := range locked {
		have[n] = true
	}
	var missing []string
	for _, n := range names {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	return missing, nil
}

// readKindCounts reads the rows of query (kind, count) for queue into add:
// the queue's global limits, or its running jobs by kind.
func readKindCounts(ctx context.Context, tx *sql.Tx, query, queue string, add func(string, int)) error {
	type kindCount struct {
		kind string
		n    int
	}
	rows, err := sqldb.All(ctx, tx, func(r sqldb.Scanner) (kindCount, error) {
		var k kindCount
		return k, r.Scan(&k.kind, &k.n)
	}, query, queue)
	for _, r := range rows {
		add(r.kind, r.n)
	}
	return err
}
