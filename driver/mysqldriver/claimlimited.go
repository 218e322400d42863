package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

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
// A round of a queue without a global limit is seven round trips: the
// transaction's isolation level and its start, the pick (whole rows, and
// whether the queue has a global limit), the gate locks, the read of the
// load, the start and the COMMIT. With a global limit, its limits and the
// queue's running jobs by kind are read after the locks (two more).
//
// Gate rows missing (the first claim of keys) end the transaction; the
// rows are added, by one statement that commits at once, and the round
// runs again. They are never added inside the claim's transaction: two
// claimers inserting the same row there would deadlock, and adding them on
// another connection while the transaction holds one could exhaust the
// pool.
func (d *Driver) claimLimitedRound(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, int, error) {
	retried := false
	for try := 1; ; try++ {
		full := !d.noFullKeys.Has(p.Queue)
		jobs, picked, missing, err := d.claimLimitedTx(ctx, p, full)
		if err == nil && len(missing) == 0 && !full && len(jobs) == 0 && picked > 0 && !retried {
			// A pick without the full keys found only jobs that could not
			// run: pick again with them (the hint now says so) rather than
			// end the claim with nothing.
			retried = true
			continue
		}
		if err != nil || len(missing) == 0 || try == 5 {
			return jobs, picked, err
		}
		if err := d.addGates(ctx, missing); err != nil {
			return nil, 0, err
		}
	}
}

// addGates adds the gate rows of names (sorted) that are missing, in one
// statement of its own transaction, retried when it deadlocked with
// another claimer's adding some of the same rows.
func (d *Driver) addGates(ctx context.Context, names []string) error {
	rows := strings.TrimSuffix(strings.Repeat("(?), ", len(names)), ", ")
	return d.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, fmt.Sprintf(claimGatesAddSQL, rows), anys(names)...)
		return err
	})
}

// claimLimitedTx runs a limited round's transaction once, its pick with
// the full keys or without them (Driver.noFullKeys), and updates that
// hint. When gate rows are missing it claims nothing and returns their
// names.
func (d *Driver) claimLimitedTx(ctx context.Context, p driver.ClaimJobsParams, full bool) (jobs []*fencedtype.Job, picked int, missing []string, err error) {
	var anyFull bool
	err = d.inTxOpts(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, func(tx *sql.Tx) error {
		jobs, picked, missing = nil, 0, nil
		args := make([]any, 0, claimLimitedPickQueues(full)+len(p.Kinds)+1)
		for range claimLimitedPickQueues(full) {
			args = append(args, p.Queue)
		}
		args = append(append(args, anys(p.Kinds)...), claimlimit.Window(p.Limit))
		var global bool
		locked, err := sqldb.All(ctx, tx, func(r sqldb.Scanner) (*fencedtype.Job, error) {
			var s jobScan
			if err := r.Scan(append(s.dest(), &global, &anyFull)...); err != nil {
				return nil, err
			}
			return s.row(), nil
		}, claimLimitedPick(len(p.Kinds), full), args...)
		picked = len(locked)
		if err != nil || len(locked) == 0 {
			return err // an empty pick leaves the hints: the next pick decides
		}
		cands := make([]claimlimit.Candidate, len(locked))
		ids := make([]int64, len(locked))
		byID := make(map[int64]*fencedtype.Job, len(locked))
		for i, j := range locked {
			cands[i] = claimlimit.Candidate{ID: j.ID, Kind: j.Kind, ConcurrencyKey: j.ConcurrencyKey, SequenceKey: j.SequenceKey}
			ids[i] = j.ID
			byID[j.ID] = j
		}
		names := claimlimit.LockNames(p.Queue, cands, global)
		d.limited.Set(p.Queue, len(names) > 0)
		if missing, err = lockGates(ctx, tx, names); err != nil || len(missing) > 0 {
			return err
		}
		read, err := sqldb.All(ctx, tx, func(r sqldb.Scanner) (claimlimit.Candidate, error) {
			return claimlimit.ScanCandidate(r)
		}, fmt.Sprintf(claimLimitLoadSQL, placeholders(len(ids))), append([]any{p.Queue}, anys(ids)...)...)
		if err != nil {
			return err
		}
		cands = inClaimOrder(read, ids)
		var load claimlimit.Load
		if global {
			if err := readKindCounts(ctx, tx, claimGlobalLimitsSQL, p.Queue, load.AddGlobal); err != nil {
				return err
			}
			if err := readKindCounts(ctx, tx, claimRunningByKindSQL, p.Queue, load.AddRunning); err != nil {
				return err
			}
		}
		admitted := claimlimit.Admit(cands, load, p.Limit)
		if len(admitted) == 0 {
			return nil
		}
		start := make([]*fencedtype.Job, len(admitted))
		for i, id := range admitted {
			start[i] = byID[id]
		}
		jobs, err = startPicked(ctx, tx, p, start)
		return err
	})
	if err == nil && len(missing) == 0 && picked > 0 {
		// Every candidate admitted (but the window's spare ones) and, with
		// the full keys, none full: the next pick goes without them.
		if all := len(jobs) == min(picked, p.Limit); full && all && !anyFull {
			d.noFullKeys.Set(p.Queue, true)
		} else if !full && !all {
			d.noFullKeys.Set(p.Queue, false)
		}
	}
	return jobs, picked, missing, err
}

// inClaimOrder returns the candidates of read in the order of ids.
func inClaimOrder(read []claimlimit.Candidate, ids []int64) []claimlimit.Candidate {
	byID := make(map[int64]claimlimit.Candidate, len(read))
	for _, c := range read {
		byID[c.ID] = c
	}
	out := make([]claimlimit.Candidate, 0, len(read))
	for _, id := range ids {
		if c, ok := byID[id]; ok {
			out = append(out, c)
		}
	}
	return out
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
