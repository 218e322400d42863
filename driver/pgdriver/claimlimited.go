package pgdriver

import (
	"context"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/claimlimit"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// claimLimitedJobs is the claim of a queue gated by keys or limits: the
// rounds of claimlimit.Claim, each a claimLimitedRound.
func (d *Driver) claimLimitedJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, error) {
	return claimlimit.Claim(p.Limit, func(limit int) ([]*fencedtype.Job, int, error) {
		p.Limit = limit
		return d.claimLimitedRound(ctx, p)
	})
}

// limitedPickOf is the limited pick of p's kind filter, with or without
// the full keys, and its arguments.
func limitedPickOf(p driver.ClaimJobsParams, full bool) (string, []any) {
	args := []any{p.Queue, claimlimit.Window(p.Limit)}
	switch {
	case len(p.Kinds) == 0 && full:
		return claimLimitedPickAnyKindSQL, args
	case len(p.Kinds) == 0:
		return claimLimitedPickAnyKindNoFullSQL, args
	case len(p.Kinds) == 1 && full:
		return claimLimitedPickOneKindSQL, append(args, p.Kinds[0])
	case len(p.Kinds) == 1:
		return claimLimitedPickOneKindNoFullSQL, append(args, p.Kinds[0])
	case full:
		return claimLimitedPickOfKindsSQL, append(args, p.Kinds)
	default:
		return claimLimitedPickOfKindsNoFullSQL, append(args, p.Kinds)
	}
}

// claimLimitedRound is one round of a limited claim: one READ COMMITTED
// transaction in three round trips. The first begins it, picks and locks
// the candidates and reads the queue's global limits; the second takes the
// advisory locks of the candidates' keys in order and, in a new statement
// (a snapshot taken after the locks, so it sees every attempt a claimer
// that held them before committed), reads their load; the third starts
// the jobs claimlimit.Admit admitted and commits. JIT compilation is off
// for the transaction (the pick's estimated cost invites it, and it costs
// more than the statements), and its statements use generic plans from
// their first run on a connection (planning the candidates' arrays anew
// each time costs more than the plan saves). A deadlock (possible only
// with another user of advisory locks whose id collides) is retried. It
// returns the jobs it started and how many candidates it picked.
func (d *Driver) claimLimitedRound(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, int, error) {
	full := !d.noFullKeys.Has(p.Queue)
	pick, args := limitedPickOf(p, full)
	var jobs []*fencedtype.Job
	var picked int
	err := retryDeadlock(ctx, func() error {
		jobs, picked = nil, 0
		var conn *pgxpool.Conn
		var cands []claimlimit.Candidate
		var anyFull bool
		var load claimlimit.Load
		// Retried while the batch could not be sent: it writes nothing.
		err := d.pool.retry(ctx, func() error {
			if conn != nil {
				endTx(ctx, conn)
			}
			var err error
			if conn, err = d.pool.Pool.Acquire(ctx); err != nil {
				conn = nil
				return err
			}
			var b pgx.Batch
			b.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
			b.Queue(`SET LOCAL jit = off`)
			b.Queue(`SET LOCAL plan_cache_mode = force_generic_plan`)
			b.Queue(pick, args...)
			b.Queue(claimGlobalLimitsSQL, p.Queue)
			br := conn.SendBatch(ctx, &b)
			cands, anyFull, load, err = readPick(br)
			return closeBatch(br, err)
		})
		if conn != nil {
			defer endTx(ctx, conn)
		}
		picked = len(cands)
		if err != nil || len(cands) == 0 {
			if err == nil {
				d.limited.Set(p.Queue, load.HasGlobal())
			}
			return err
		}
		defer func() {
			// Every candidate admitted (but the window's spare ones) and,
			// with the full keys, none full: the next pick goes without them.
			if all := len(jobs) == min(len(cands), p.Limit); full && all && !anyFull {
				d.noFullKeys.Set(p.Queue, true)
			} else if !full && !all {
				d.noFullKeys.Set(p.Queue, false)
			}
		}()
		locks := claimlimit.LockIDs(claimlimit.LockNames(p.Queue, cands, load.HasGlobal()))
		d.limited.Set(p.Queue, len(locks) > 0)
		jobs, err = admitAndStart(ctx, conn, p, cands, load, locks)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return jobs, picked, nil
}

// admitAndStart is the rest of a limited round, on the transaction open on
// conn: in one batch it takes the locks (when there are any) and reads the
// load of cands; then, in another, it starts the admitted and commits.
func admitAndStart(ctx context.Context, conn *pgxpool.Conn, p driver.ClaimJobsParams, cands []claimlimit.Candidate, load claimlimit.Load, locks []int64) ([]*fencedtype.Job, error) {
	ids := make([]int64, len(cands))
	kinds, keys, seqs := make([]string, len(cands)), make([]string, len(cands)), make([]string, len(cands))
	for i, c := range cands {
		ids[i], kinds[i], keys[i], seqs[i] = c.ID, c.Kind, c.ConcurrencyKey, c.SequenceKey
	}
	var b pgx.Batch
	if len(locks) > 0 {
		b.Queue(claimLimitLocksSQL, locks)
	}
	b.Queue(claimLimitLoadSQL, p.Queue, ids, kinds, keys, seqs)
	if load.HasGlobal() {
		b.Queue(claimRunningByKindSQL, p.Queue)
	}
	br := conn.SendBatch(ctx, &b)
	cands, err := readLoad(br, len(locks) > 0, &load)
	if err = closeBatch(br, err); err != nil {
		return nil, err
	}
	admitted := claimlimit.Admit(cands, load, p.Limit)
	var jobs []*fencedtype.Job
	b = pgx.Batch{}
	if len(admitted) > 0 {
		b.Queue(claimLimitedStartSQL, p.Queue, p.Owner, admitted, p.TTL.Microseconds())
	}
	b.Queue(`COMMIT`)
	br = conn.SendBatch(ctx, &b)
	if len(admitted) > 0 {
		jobs, err = collectJobs(br.Query())
	}
	if err == nil {
		var tag pgconn.CommandTag
		if tag, err = br.Exec(); err == nil && tag.String() != "COMMIT" {
			err = fmt.Errorf("commit ended in %s", tag)
		}
	}
	if err = closeBatch(br, err); err != nil {
		return nil, unknownOutcome(err) // the commit was sent
	}
	return jobs, nil
}

// endTx returns a connection of claimLimitedRound to the pool, rolling back
// the transaction it may have left open (the pool closes a connection it
// cannot tell to be idle).
func endTx(ctx context.Context, conn *pgxpool.Conn) {
	if pc := conn.Conn().PgConn(); !pc.IsClosed() && !pc.IsBusy() && pc.TxStatus() != 'I' {
		conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
	}
	conn.Release()
}

// readPick reads the first batch's replies: the BEGIN, the SETs, the
// picked candidates (and whether the pick found a full key) and the
// queue's global limits.
func readPick(br pgx.BatchResults) (cands []claimlimit.Candidate, anyFull bool, load claimlimit.Load, err error) {
	for range 3 {
		if _, err := br.Exec(); err != nil {
			return nil, false, load, err
		}
	}
	rows, err := br.Query()
	cands, err = collectRows(rows, err, func(r pgx.CollectableRow) (claimlimit.Candidate, error) {
		var c claimlimit.Candidate
		return c, r.Scan(&c.ID, &c.Kind, &c.ConcurrencyKey, &c.SequenceKey, &anyFull)
	})
	if err != nil {
		return nil, false, load, err
	}
	err = readNamedCounts(br, load.AddGlobal)
	return cands, anyFull, load, err
}

// readLoad reads the second batch's replies: the locks when taken, the
// candidates as claimLimitLoadSQL read them and, when the queue has a
// global limit, its running jobs by kind.
func readLoad(br pgx.BatchResults, locked bool, load *claimlimit.Load) ([]claimlimit.Candidate, error) {
	if locked {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	rows, err := br.Query()
	cands, err := collectRows(rows, err, func(r pgx.CollectableRow) (claimlimit.Candidate, error) {
		return claimlimit.ScanCandidate(r)
	})
	if err != nil || !load.HasGlobal() {
		return cands, err
	}
	return cands, readNamedCounts(br, load.AddRunning)
}

// closeBatch closes a batch's results, keeping err when there is one.
func closeBatch(br pgx.BatchResults, err error) error {
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// readNamedCounts reads the next reply of br, rows of (name, count), into
// add: the queue's global limits or its running jobs by kind.
func readNamedCounts(br pgx.BatchResults, add func(string, int)) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	var kind string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&kind, &n}, func() error { add(kind, n); return nil })
	return err
}
