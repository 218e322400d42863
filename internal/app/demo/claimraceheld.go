package demo

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fenced/fenced"
)

// heldRace: both run fenced's claim statement inside a transaction of their
// own; whoever claims the job holds the transaction open for claimRaceHold.
// On PostgreSQL with skipLocked false the lock clause is plain FOR UPDATE.
func heldRace(ctx context.Context, t *timeline, e *env, ps []*peer, q string, skipLocked bool) {
	j, err := enqueue(ctx, e.c, q)
	if err != nil {
		t.fail("—", "enqueue a job", "queued", err)
		return
	}
	t.add("—", fmt.Sprintf("enqueue job %d", j.ID), "queued", string(j.State))
	rowLocks := e.dialect != fenced.DialectSQLite // PostgreSQL, MySQL: row locks; SQLite: one writer
	how, want := "BEGIN IMMEDIATE (one writer)", "the other waits for the write lock, then finds nothing"
	switch {
	case rowLocks && skipLocked:
		how, want = "FOR UPDATE SKIP LOCKED, as ClaimJobs", "the other skips the locked row: nothing, at once"
	case rowLocks:
		how, want = "plain FOR UPDATE, no SKIP LOCKED", "the other blocks on the row lock, then finds it running: nothing"
	}
	claim := heldClaim(e.dialect, skipLocked)

	// PostgreSQL's and MySQL's BEGIN take no lock, so both transactions open
	// before the race; SQLite's BEGIN IMMEDIATE takes the write lock, so it
	// races too.
	txs := make([]*txn, len(ps))
	pids := make([]int64, len(ps)) // each racer's server process or connection id
	for i, p := range ps {
		if !rowLocks {
			break
		}
		if txs[i], err = begin(ctx, p.d); err == nil {
			err = txs[i].QueryRow(ctx, map[fenced.Dialect]string{fenced.DialectPostgres: `SELECT pg_backend_pid()`,
				fenced.DialectMySQL: `SELECT CONNECTION_ID()`}[e.dialect]).Scan(&pids[i])
		}
		if err != nil {
			t.fail(p.name, "begin a transaction", "begun", err)
			for _, tx := range txs[:i+1] {
				if tx != nil {
					tx.rollback(ctx)
				}
			}
			return
		}
	}
	rs := make([]*race, len(ps))
	won := make(chan int, len(ps))
	var seen string
	var fns []func()
	for i, p := range ps {
		fns = append(fns, func() { rs[i] = claimHeld(ctx, p, i, txs[i], claim, q, won) })
	}
	watch := rowLocks && !skipLocked
	if watch {
		fns = append(fns, func() { seen = watchLoser(ctx, e, ps, pids, won) })
	}
	together(fns...)

	win, lose, ok := split(rs, j.ID, j.Fence+1)
	t.check(ok, "A+B", fmt.Sprintf("released together, each claims in a transaction (%s); the winner holds it %s", how, claimRaceHold),
		fmt.Sprintf("one claims it (fence %d); %s", j.Fence+1, want), describe(rs))
	defer finish(ctx, t, win)
	if !ok {
		return
	}
	if watch {
		t.check(strings.HasPrefix(seen, lose.who+" waiting on Lock"),
			"—", lockView[e.dialect]+" while the winner holds the row", "the loser waiting on a Lock", seen)
	}
	if rowLocks && skipLocked {
		t.check(returnedDuringHold(lose, win), lose.who, "when its claim returned vs the winner's commit",
			"before it: it never waited", order(lose, win))
		return
	}
	t.check(blockedUntilCommit(lose, win), lose.who, "when its claim returned vs the winner's commit",
		"only after it: blocked until the commit", order(lose, win))
}

// claimHeld runs the claim in tx (nil: begin it now) after the release; on
// winning it reports its index on won, holds the transaction open for
// claimRaceHold, then commits.
func claimHeld(ctx context.Context, p *peer, i int, tx *txn, claim claimFunc, q string, won chan<- int) *race {
	r := &race{who: p.name, peer: p}
	start := time.Now()
	if tx == nil {
		if tx, r.err = begin(ctx, p.d); r.err != nil {
			return r
		}
	}
	var err error
	r.id, r.fence, err = claim(ctx, tx, q, p.name)
	r.returned = time.Now()
	r.took = r.returned.Sub(start)
	claimedAt := r.returned
	if err != nil {
		tx.rollback(ctx)
		r.err = err
		return r
	}
	if r.id != 0 {
		won <- i
		time.Sleep(claimRaceHold)
		r.committed = time.Now()
	}
	r.err = tx.commit(ctx)
	if r.id != 0 {
		r.held = time.Since(claimedAt)
	}
	return r
}

// lockView names where each backend shows a session waiting for a row lock.
var lockView = map[fenced.Dialect]string{fenced.DialectPostgres: "pg_stat_activity", fenced.DialectMySQL: "information_schema.INNODB_TRX"}

// lockWaitSQL reads one session's wait: PostgreSQL's wait event (type
// "Lock" for a row lock), or InnoDB's transaction state ("LOCK WAIT").
var lockWaitSQL = map[fenced.Dialect]string{
	fenced.DialectPostgres: `SELECT COALESCE(wait_event_type, ''), COALESCE(wait_event, '') FROM pg_stat_activity WHERE pid = $1`,
	fenced.DialectMySQL:    `SELECT trx_state, COALESCE(trx_operation_state, '') FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = $1`,
}

// lockPoll is how long watchLoser waits before each read of lockView.
// InnoDB serves information_schema.INNODB_TRX from a cache that it
// refreshes only when nobody read it for 0.1 s: polled faster, the first
// read's picture (the loser perhaps not yet queued on the lock) is all it
// ever shows. So MySQL's reads are spaced above that, the first a little
// after the win so the loser has reached the lock.
var lockPoll = map[fenced.Dialect]struct{ first, every time.Duration }{
	fenced.DialectPostgres: {0, 2 * time.Millisecond},
	fenced.DialectMySQL:    {20 * time.Millisecond, 110 * time.Millisecond},
}

// watchLoser waits for a winner, then reads the other racer's session
// until it is seen waiting on a lock or the hold is over.
func watchLoser(ctx context.Context, e *env, ps []*peer, pids []int64, won <-chan int) string {
	var w int
	select {
	case w = <-won:
	case <-time.After(10 * claimRaceHold):
		return "no winner seen"
	}
	l := 1 - w
	state := "not waiting"
	poll := lockPoll[e.dialect]
	deadline := time.Now().Add(claimRaceHold)
	for time.Sleep(poll.first); time.Now().Before(deadline); time.Sleep(poll.every) {
		var typ, event string
		err := scanSQL(ctx, e.d, lockWaitSQL[e.dialect], []any{pids[l]}, &typ, &event)
		switch {
		case noRows(err): // MySQL: no transaction begun yet
		case err != nil:
			return "error: " + err.Error()
		case typ == "Lock": // PostgreSQL: event is the lock's kind, e.g. transactionid
			return fmt.Sprintf("%s waiting on Lock (%s)", ps[l].name, event)
		case typ == "LOCK WAIT": // InnoDB: event is what the statement was doing
			return fmt.Sprintf("%s waiting on Lock (InnoDB lock wait, %s)", ps[l].name, cmp.Or(event, "row lock"))
		case typ != "" && typ != "RUNNING":
			state = "waiting on " + typ + " (" + event + ")"
		}
	}
	return ps[l].name + " " + state
}
