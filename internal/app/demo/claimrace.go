package demo

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fenced/fenced"
)

// claimRaceHold is how long the winner of a held race keeps the transaction
// of its claim open, so the loser meets its lock.
const claimRaceHold = 300 * time.Millisecond

// fenced's claim statement for one job (the drivers' own, with LIMIT 1 and a
// one-minute lease), which the demo runs inside a transaction it holds open:
// ClaimJobs commits at once, too soon for anyone to see the lock. On
// PostgreSQL the lock clause is plain FOR UPDATE or, as ClaimJobs has it,
// FOR UPDATE SKIP LOCKED.
const (
	pgHeldClaimPick = `
WITH picked AS (
    SELECT id FROM fenced_jobs
    WHERE state = 'queued' AND queue = $1 AND run_at <= clock_timestamp()
    ORDER BY priority, run_at, id
    LIMIT 1
    `
	pgHeldClaimUpdate = `
)
UPDATE fenced_jobs j SET
    state = 'running', attempt = j.attempt + 1, fence = j.fence + 1, owner = $2,
    lease_expires_at = clock_timestamp() + interval '1 minute',
    attempted_at = clock_timestamp(), updated_at = clock_timestamp(),
    cancel_requested = false, progress = NULL
FROM picked WHERE j.id = picked.id
RETURNING j.id, j.fence`
	sqliteNow          = `(CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) * 1000)`
	sqliteHeldClaimSQL = `
UPDATE fenced_jobs SET
    state = 'running', attempt = attempt + 1, fence = fence + 1, owner = $2,
    lease_expires_us = ` + sqliteNow + ` + 60000000,
    attempted_us = ` + sqliteNow + `, updated_us = ` + sqliteNow + `,
    cancel_requested = 0, progress = NULL
WHERE id IN (
    SELECT id FROM fenced_jobs
    WHERE state = 'queued' AND queue = $1 AND run_at_us <= ` + sqliteNow + `
    ORDER BY priority, run_at_us, id
    LIMIT 1)
RETURNING id, fence`
)

// MySQL and MariaDB have no UPDATE … RETURNING: the held claim is the
// driver's three steps (pick and lock, start, read back) in one transaction.
const (
	mysqlHeldClaimPick = `
SELECT id FROM fenced_jobs
WHERE state = 'queued' AND queue = $1 AND run_at <= UTC_TIMESTAMP(6)
ORDER BY priority, run_at, id
LIMIT 1
`
	mysqlHeldClaimStart = `
UPDATE fenced_jobs SET
    state = 'running', attempt = attempt + 1, fence = fence + 1, owner = $2,
    lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE,
    attempted_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6),
    cancel_requested = FALSE, progress = NULL
WHERE id = $1 AND state = 'queued'`
	mysqlHeldClaimRead = `SELECT fence FROM fenced_jobs WHERE id = $1`
)

// claimFunc claims one job of queue q for owner inside tx; id 0 when there
// was none to claim.
type claimFunc func(ctx context.Context, tx *txn, q, owner string) (id, fence int64, err error)

// heldClaim is the claim statement of dialect, with plain FOR UPDATE or
// FOR UPDATE SKIP LOCKED where the backend has row locks.
func heldClaim(dialect fenced.Dialect, skipLocked bool) claimFunc {
	lock := "FOR UPDATE"
	if skipLocked {
		lock += " SKIP LOCKED"
	}
	one := func(query string) claimFunc {
		return func(ctx context.Context, tx *txn, q, owner string) (id, fence int64, err error) {
			err = tx.QueryRow(ctx, query, q, owner).Scan(&id, &fence)
			if noRows(err) {
				return 0, 0, nil
			}
			return id, fence, err
		}
	}
	switch dialect {
	case fenced.DialectPostgres:
		return one(pgHeldClaimPick + lock + pgHeldClaimUpdate)
	case fenced.DialectMySQL:
		return func(ctx context.Context, tx *txn, q, owner string) (id, fence int64, err error) {
			err = tx.QueryRow(ctx, mysqlHeldClaimPick+lock, q).Scan(&id)
			if noRows(err) {
				return 0, 0, nil
			}
			if err != nil {
				return 0, 0, err
			}
			n, err := tx.Exec(ctx, mysqlHeldClaimStart, id, owner)
			if err != nil || n != 1 {
				return 0, 0, cmp.Or(err, fmt.Errorf("job %d: started %d rows after locking it", id, n))
			}
			err = tx.QueryRow(ctx, mysqlHeldClaimRead, id).Scan(&fence)
			return id, fence, err
		}
	}
	return one(sqliteHeldClaimSQL)
}

// claimRace: workers A and B, each with its own client, are released through
// a barrier to claim the same queued job. First with ClaimJobs: one gets it,
// the other nothing. Then inside transactions the winner holds open for
// claimRaceHold, to make the lock visible. On PostgreSQL, with a plain
// FOR UPDATE the loser blocks on the row lock for about as long as the
// winner holds it (pg_stat_activity shows it waiting), then re-checks the row,
// finds it running and claims nothing; with SKIP LOCKED, as ClaimJobs runs
// it, the loser returns at once with nothing. On SQLite there is a single
// writer: the loser waits for the write lock, then finds nothing to claim.
func claimRace(ctx context.Context, e *env) []Step {
	var t timeline
	ps, closeAll, err := e.peers(ctx, "A", "B")
	if err != nil {
		t.fail("A+B", "open a client each", "open", err)
		return t.steps
	}
	defer closeAll()
	apiRace(ctx, &t, e, ps, e.queue("claim-race-api"))
	heldRace(ctx, &t, e, ps, e.queue("claim-race-held"), false)
	if e.dialect != fenced.DialectSQLite {
		heldRace(ctx, &t, e, ps, e.queue("claim-race-skip"), true)
	}
	return t.steps
}

// race is one racer's claim.
type race struct {
	who       string
	peer      *peer
	id, fence int64         // the job claimed; 0 when nothing
	took      time.Duration // release → claim returned (on SQLite with its BEGIN)
	held      time.Duration // claim returned → commit returned, for a winner
	returned  time.Time     // when the claim returned
	committed time.Time     // a winner: when it began its commit, the hold over
	err       error
}

func (r *race) String() string {
	switch {
	case r.err != nil:
		return r.who + ": error: " + r.err.Error()
	case r.id != 0 && r.held > 0:
		return fmt.Sprintf("%s claimed it (fence %d), held it %s", r.who, r.fence, ms(r.held))
	case r.id != 0:
		return fmt.Sprintf("%s got job %d, fence %d", r.who, r.id, r.fence)
	}
	return fmt.Sprintf("%s got nothing after %s", r.who, ms(r.took))
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// split finds the winner and the loser: exactly one claimed job id with
// fence, the other nothing.
func split(rs []*race, id, fence int64) (win, lose *race, ok bool) {
	if len(rs) != 2 || rs[0].err != nil || rs[1].err != nil {
		return nil, nil, false
	}
	win, lose = rs[0], rs[1]
	if lose.id != 0 {
		win, lose = lose, win
	}
	return win, lose, win.id == id && win.fence == fence && lose.id == 0
}

func describe(rs []*race) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, "; ")
}

// The held races judge the loser by the order of two instants rather than
// by how long it waited, so a loaded machine that starts a racer late
// cannot change the verdict: a loser blocked by the winner's lock cannot
// return before the winner begins to commit, and one that skipped the
// locked row returns while the winner still holds it (the winner holds it
// for claimRaceHold, far longer than a claim takes).

// blockedUntilCommit: the loser's claim returned only once the winner had
// begun its commit.
func blockedUntilCommit(loser, winner *race) bool { return !loser.returned.Before(winner.committed) }

// returnedDuringHold: the loser's claim returned while the winner still
// held the row.
func returnedDuringHold(loser, winner *race) bool { return loser.returned.Before(winner.committed) }

// order describes when the loser returned against the winner's commit.
func order(loser, winner *race) string {
	d := loser.returned.Sub(winner.committed)
	rel := "after"
	if d < 0 {
		d, rel = -d, "before"
	}
	return fmt.Sprintf("%s returned %s %s %s began to commit (it waited %s; %s held the row %s)",
		loser.who, ms(d), rel, winner.who, ms(loser.took), winner.who, ms(winner.held))
}

// apiRace: both call ClaimJobs at the same moment.
func apiRace(ctx context.Context, t *timeline, e *env, ps []*peer, q string) {
	j, err := enqueue(ctx, e.c, q)
	if err != nil {
		t.fail("—", "enqueue a job", "queued", err)
		return
	}
	t.add("—", fmt.Sprintf("enqueue job %d", j.ID), "queued", string(j.State))
	rs := make([]*race, len(ps))
	var fns []func()
	for i, p := range ps {
		fns = append(fns, func() {
			r := &race{who: p.name, peer: p}
			start := time.Now()
			jobs, err := p.c.ClaimJobs(ctx, q, p.name, 1, time.Minute)
			r.took, r.err = time.Since(start), err
			if len(jobs) > 0 {
				r.id, r.fence = jobs[0].ID, jobs[0].Fence
			}
			rs[i] = r
		})
	}
	together(fns...)
	win, _, ok := split(rs, j.ID, j.Fence+1)
	t.check(ok, "A+B", "released together (a barrier), each calls ClaimJobs on its own pool",
		fmt.Sprintf("one gets job %d (fence %d), the other nothing", j.ID, j.Fence+1), describe(rs))
	finish(ctx, t, win)
}

// finish completes the winner's job, so no demo job is left running.
func finish(ctx context.Context, t *timeline, win *race) {
	if win == nil || win.id == 0 {
		return
	}
	if err := win.peer.c.CompleteJob(ctx, fenced.JobRef{ID: win.id, Fence: win.fence}, nil); err != nil {
		t.fail(win.who, "complete the job it won", "accepted", err)
	}
}
