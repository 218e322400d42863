package sqlguard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/sqlguard"
)

// racingDBs are isolatedDBs and SQLite in its default rollback-journal
// mode, where a reader holds a writer's commit off instead of keeping an
// old snapshot.
var racingDBs = append(slices.Clone(isolatedDBs), isolated{userDBs[2], sql.LevelDefault, false, false})

// historySQL creates the table of the writes that committed, in the order
// they committed: each winner inserts its row while it holds invoice 42's
// write lock, which it took with its update and keeps until it commits.
var historySQL = map[sqlguard.Dialect]string{
	sqlguard.Postgres: `CREATE TABLE history (seq BIGSERIAL PRIMARY KEY, fence BIGINT NOT NULL, status VARCHAR(20) NOT NULL)`,
	sqlguard.MySQL:    `CREATE TABLE history (seq BIGINT AUTO_INCREMENT PRIMARY KEY, fence BIGINT NOT NULL, status VARCHAR(20) NOT NULL)`,
	sqlguard.SQLite:   `CREATE TABLE history (seq INTEGER PRIMARY KEY, fence BIGINT NOT NULL, status VARCHAR(20) NOT NULL)`,
}

// recordSQL records a write that won in history.
var recordSQL = map[sqlguard.Dialect]string{
	sqlguard.Postgres: `INSERT INTO history (fence, status) VALUES ($1, $2)`,
	sqlguard.MySQL:    `INSERT INTO history (fence, status) VALUES (?, ?)`,
	sqlguard.SQLite:   `INSERT INTO history (fence, status) VALUES (?, ?)`,
}

// racer is one holder in a round: its fence and what its write ended as.
type racer struct {
	fence  int64
	status string
	won    bool
	err    error // the final refusal; nil when it won
}

// TestRacingHoldersLeaveTheNewestFencesValue races, round after round, the
// holders of three generations on invoice 42, which holds fence F from the
// round before: the new holder (F+1), two holders of the generation it
// superseded (F) and two of the one before (F-1). Each, in a transaction of
// its own at the database's level, reads the row, waits until all have read
// (so every snapshot predates every write of the round), updates it with its
// fence and, if that succeeded, records the write in a history table and
// commits. A transaction the database refused (a *ConflictError, SQLite's
// busy refusal of a reader that writes, a serialization failure at commit)
// is rolled back and run again, as a caller would. In every round the new
// holder wins, once; no holder of F-1 does; a holder of F wins only before
// the new holder's write, never after it; every other holder is told stale
// by a higher fence, not above the new one; and the row ends with the new
// holder's value. Across the rounds, the history of committed writes never
// goes down in fence.
func TestRacingHoldersLeaveTheNewestFencesValue(t *testing.T) {
	for _, d := range racingDBs {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			db := d.open(t)
			db.SetMaxOpenConns(8)
			createInvoice(t, db, 1)
			if _, err := db.ExecContext(ctx(t), historySQL[d.dialect]); err != nil {
				t.Fatal(err)
			}
			c := ctx(t)
			inv := invoices(d.dialect)
			var retries atomic.Int64
			var newest []string // each round's new holder's status
			won, stale := 0, 0  // the superseded generation's outcomes
			const rounds = 12
			for round := 1; round <= rounds; round++ {
				f := int64(round + 1) // the row holds fence round; round-1, round and round+1 race
				racers := []*racer{{fence: f}, {fence: f - 1}, {fence: f - 1}, {fence: f - 2}, {fence: f - 2}}
				var read sync.WaitGroup
				read.Add(len(racers))
				start := make(chan struct{})
				go func() { read.Wait(); close(start) }()
				var done sync.WaitGroup
				for i, r := range racers {
					r.status = fmt.Sprintf("r%d-h%d-f%d", round, i, r.fence)
					done.Add(1)
					go func() {
						defer done.Done()
						first := true
						for {
							err := raceOnce(c, db, d, inv, r, func() {
								if first {
									first = false
									read.Done()
									<-start
								}
							})
							if err == nil {
								r.won = true
								return
							}
							if !mustRetry(d, err) || c.Err() != nil {
								r.err = err
								if first { // failed before its read: let the round go on
									first = false
									read.Done()
								}
								return
							}
							retries.Add(1)
						}
					}()
				}
				done.Wait()
				checkRound(t, db, round, racers)
				newest = append(newest, racers[0].status)
				for _, r := range racers[1:3] {
					if r.won {
						won++
					} else {
						stale++
					}
				}
			}
			checkHistory(t, db, newest)
			t.Logf("%d rounds: the superseded generation's holders won %d times (before the new holder's write) and were stale %d; "+
				"transactions run again after a refusal: %d", rounds, won, stale, retries.Load())
		})
	}
}

// raceOnce runs r's transaction once: read the row, ready(), update it with
// r's fence and, if that succeeded, record the write and commit.
func raceOnce(c context.Context, db *sql.DB, d isolated, inv sqlguard.Table, r *racer, ready func()) error {
	tx, err := db.BeginTx(c, &sql.TxOptions{Isolation: d.level})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seen int64
	if err := tx.QueryRowContext(c, `SELECT fence FROM invoices WHERE id = 42`).Scan(&seen); err != nil {
		return err
	}
	ready()
	if mathrand.IntN(2) == 0 { // vary who reaches the row first
		time.Sleep(time.Duration(mathrand.IntN(2000)) * time.Microsecond)
	}
	if err := inv.Update(c, tx, 42, r.fence, sqlguard.Column{Name: "status", Value: r.status}); err != nil {
		return err
	}
	if _, err := tx.ExecContext(c, recordSQL[d.dialect], r.fence, r.status); err != nil {
		return err
	}
	return tx.Commit()
}

// mustRetry reports whether err refused r's whole transaction, which a
// caller rolls back and runs again: a conflict (PostgreSQL above READ
// COMMITTED, SQLite in WAL mode), a serialization failure at PostgreSQL's
// commit, or SQLite's busy refusal of a transaction that read and then
// writes while another connection writes (no busy timeout applies to it).
// MySQL's updates wait for the row's lock and never need one.
func mustRetry(d isolated, err error) bool {
	var pe *pgconn.PgError
	var se *sqlite.Error
	switch {
	case errors.Is(err, sqlguard.ErrConflict):
		return d.conflict
	case d.dialect == sqlguard.Postgres:
		return d.conflict && errors.As(err, &pe) && pe.Code == "40001"
	case d.dialect == sqlguard.SQLite:
		return errors.As(err, &se) && se.Code()&0xff == 5 // SQLITE_BUSY and its extended codes
	}
	return false
}

// checkRound checks one round's outcomes and the row it left.
func checkRound(t *testing.T, db *sql.DB, round int, racers []*racer) {
	t.Helper()
	newest := racers[0]
	if !newest.won {
		t.Fatalf("round %d: the new holder (fence %d) lost: %v", round, newest.fence, newest.err)
	}
	for _, r := range racers[1:] {
		var se *fenced.StaleError
		switch {
		case r.won && r.fence < newest.fence-1:
			t.Fatalf("round %d: a holder of fence %d, below the stored %d, won", round, r.fence, newest.fence-1)
		case r.won:
		case !errors.As(r.err, &se):
			t.Fatalf("round %d: a holder of fence %d was refused with %v, want stale", round, r.fence, r.err)
		case se.Fence != r.fence || se.CurrentFence <= r.fence || se.CurrentFence > newest.fence || se.Reason != fenced.ReasonSuperseded:
			t.Fatalf("round %d: a holder of fence %d told %v", round, r.fence, r.err)
		}
	}
	if s, f := invoice(t, db); s != newest.status || f != newest.fence {
		t.Fatalf("round %d: invoice 42 = %s fence %d, want the new holder's %s fence %d", round, s, f, newest.status, newest.fence)
	}
}

// checkHistory checks that the committed writes, in commit order, never go
// down in fence, and that each of the new holders' writes committed once.
func checkHistory(t *testing.T, db *sql.DB, newest []string) {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), `SELECT fence, status FROM history ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var fences []int64
	var statuses []string
	for rows.Next() {
		var f int64
		var s string
		if err := rows.Scan(&f, &s); err != nil {
			t.Fatal(err)
		}
		if len(fences) > 0 && f < fences[len(fences)-1] {
			t.Fatalf("a write of fence %d (%s) committed after one of fence %d; history %v", f, s, fences[len(fences)-1], fences)
		}
		fences, statuses = append(fences, f), append(statuses, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range newest {
		if n := slices.Index(statuses, s); n < 0 || slices.Contains(statuses[n+1:], s) {
			t.Fatalf("the new holder's write %s is not in history %v exactly once", s, statuses)
		}
	}
}
