package sqlguard_test

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/sqlguard"
)

// isolated is a user's database with the isolation level its transactions
// begin with, and what a stale holder whose snapshot predates the newer
// holder's write is told: stale, or a conflict (the database refused the
// transaction's write outright); snapshot says that an explained refusal
// reads the row in the transaction's snapshot (PostgreSQL above READ
// COMMITTED: its UPDATE judged that version).
type isolated struct {
	userDB
	level              sql.IsolationLevel
	conflict, snapshot bool
}

// sqliteWAL is a user's SQLite file in WAL mode, where a transaction's
// snapshot outlives other connections' commits (in rollback-journal mode
// a reader holds writers' commits off).
var sqliteWAL = userDB{"SQLite-WAL", sqlguard.SQLite, func(t *testing.T) *sql.DB {
	return sqlOpen(t, "sqlite", "file:"+t.TempDir()+"/user.db?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)")
}}

// isolatedDBs are the user's databases at each level their transactions
// can run at: PostgreSQL at READ COMMITTED, REPEATABLE READ and
// SERIALIZABLE, MySQL at READ COMMITTED and REPEATABLE READ (its default),
// SQLite at its one level (serializable).
var isolatedDBs = []isolated{
	{userDBs[0], sql.LevelReadCommitted, false, false},
	{userDBs[0], sql.LevelRepeatableRead, true, true},
	{userDBs[0], sql.LevelSerializable, true, true},
	{userDBs[1], sql.LevelReadCommitted, false, false},
	{userDBs[1], sql.LevelRepeatableRead, false, false},
	{sqliteWAL, sql.LevelDefault, true, false},
}

func (d isolated) String() string { return d.name + "/" + d.level.String() }

// isConflict reports whether err is a *sqlguard.ConflictError that wraps
// the backend's own refusal: PostgreSQL's serialization failure, or
// SQLite's SQLITE_BUSY_SNAPSHOT.
func isConflict(err error) bool {
	var ce *sqlguard.ConflictError
	var pe *pgconn.PgError
	var se *sqlite.Error
	return errors.As(err, &ce) && errors.Is(err, sqlguard.ErrConflict) &&
		(errors.As(err, &pe) && pe.Code == "40001" || errors.As(err, &se) && se.Code() == 517)
}

// TestAStaleUpdateInAnOldSnapshotIsRefused: invoice 42 holds fence 1. A
// stale holder of fence 1 opens a transaction and reads the row; the new
// holder writes it with fence 2 and commits; the stale holder's update
// is refused, though its snapshot still shows fence 1: stale where the
// transaction can still read the row (MySQL reads it with a lock, which
// reads the newest), a *ConflictError where the database refused the
// transaction's write itself (PostgreSQL above READ COMMITTED, SQLite).
func TestAStaleUpdateInAnOldSnapshotIsRefused(t *testing.T) {
	for _, d := range isolatedDBs {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			db := d.open(t)
			createInvoice(t, db, 1)
			inv := invoices(d.dialect)
			tx, err := db.BeginTx(ctx(t), &sql.TxOptions{Isolation: d.level})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var seen int64
			if err := tx.QueryRowContext(ctx(t), `SELECT fence FROM invoices WHERE id = 42`).Scan(&seen); err != nil || seen != 1 {
				t.Fatalf("the stale holder's read: fence %d, %v", seen, err)
			}
			if err := inv.Update(ctx(t), db, 42, 2, sqlguard.Column{Name: "status", Value: "sent"}); err != nil {
				t.Fatalf("the new holder's update: %v", err)
			}
			err = inv.Update(ctx(t), tx, 42, 1, sqlguard.Column{Name: "status", Value: "cancelled"})
			var se *fenced.StaleError
			switch {
			case d.conflict && !isConflict(err):
				t.Fatalf("the stale holder's update = %v, want a conflict wrapping the database's refusal", err)
			case !d.conflict && (!errors.As(err, &se) || se.Fence != 1 || se.CurrentFence != 2 || se.Reason != fenced.ReasonSuperseded):
				t.Fatalf("the stale holder's update = %v, want stale: superseded by fence 2", err)
			}
			// Even a stale holder that commits next (PostgreSQL refuses the
			// commit of an aborted transaction, SQLite's commits its reads)
			// writes nothing of the refused update.
			_ = tx.Commit()
			if s, f := invoice(t, db); s != "sent" || f != 2 {
				t.Fatalf("invoice 42 = %s fence %d, want sent fence 2", s, f)
			}
		})
	}
}

// TestAStaleHolderWhoseSnapshotShowsANewerFenceIsToldStale: invoice 42
// holds fence 5, above the fence 1 of a stale holder that opens a
// transaction and reads the row; a newer holder then writes fence 6. The
// stale holder's update is stale wherever the transaction can still read
// the row. On PostgreSQL above READ COMMITTED the UPDATE judged the
// snapshot's fence 5, and the refusal reads that same version, so it is
// explained by fence 5: a locking read would instead fail with a
// serialization error for the newer write. SQLite refuses the write of an
// old snapshot outright.
func TestAStaleHolderWhoseSnapshotShowsANewerFenceIsToldStale(t *testing.T) {
	for _, d := range isolatedDBs {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			db := d.open(t)
			createInvoice(t, db, 5)
			inv := invoices(d.dialect)
			tx, err := db.BeginTx(ctx(t), &sql.TxOptions{Isolation: d.level})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var seen int64
			if err := tx.QueryRowContext(ctx(t), `SELECT fence FROM invoices WHERE id = 42`).Scan(&seen); err != nil || seen != 5 {
				t.Fatalf("the stale holder's read: fence %d, %v", seen, err)
			}
			if err := inv.Update(ctx(t), db, 42, 6, sqlguard.Column{Name: "status", Value: "sent"}); err != nil {
				t.Fatalf("the newer holder's update: %v", err)
			}
			err = inv.Update(ctx(t), tx, 42, 1, sqlguard.Column{Name: "status", Value: "cancelled"})
			want := int64(6)
			if d.snapshot {
				want = 5
			}
			var se *fenced.StaleError
			switch {
			case d.dialect == sqlguard.SQLite && !isConflict(err):
				t.Fatalf("the stale holder's update = %v, want a conflict wrapping the database's refusal", err)
			case d.dialect != sqlguard.SQLite && (!errors.As(err, &se) || se.Fence != 1 || se.CurrentFence != want):
				t.Fatalf("the stale holder's update = %v, want stale: superseded by fence %d", err, want)
			}
			_ = tx.Commit()
			if s, f := invoice(t, db); s != "sent" || f != 6 {
				t.Fatalf("invoice 42 = %s fence %d, want sent fence 6", s, f)
			}
		})
	}
}
