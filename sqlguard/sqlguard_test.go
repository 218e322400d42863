package sqlguard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql on PostgreSQL, as a user's program has it

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/internal/test/testdb"
	"github.com/fenced/fenced/internal/test/testetcd"
	"github.com/fenced/fenced/sqlguard"
)

// cluster keeps the leases: an etcd cluster of three embedded members.
var cluster *testetcd.Cluster

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fenced-sqlguard-")
	if err == nil {
		cluster, err = testetcd.Start(dir, 3)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cluster.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// userDB is a fresh database of the user's, with its dialect.
type userDB struct {
	name    string
	dialect sqlguard.Dialect
	open    func(t *testing.T) *sql.DB
}

var userDBs = []userDB{
	{"PostgreSQL", sqlguard.Postgres, func(t *testing.T) *sql.DB { return sqlOpen(t, "pgx", testdb.Postgres(t)) }},
	{"MySQL", sqlguard.MySQL, func(t *testing.T) *sql.DB {
		cfg, _, err := mysqldriver.ParseURL(testdb.MySQL(t))
		if err != nil {
			t.Fatal(err)
		}
		cfg.ClientFoundRows = false // a user's pool counts changed rows, the default
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(c)
		t.Cleanup(func() { db.Close() })
		return db
	}},
	{"SQLite", sqlguard.SQLite, func(t *testing.T) *sql.DB {
		return sqlOpen(t, "sqlite", "file:"+t.TempDir()+"/user.db?_pragma=busy_timeout(30000)")
	}},
}

func sqlOpen(t *testing.T, driverName, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A lease held in etcd protects a row in the user's database: after a
// takeover the old holder's update is stale and changes nothing.
func TestLeaseInEtcdProtectsRows(t *testing.T) {
	for _, u := range userDBs {
		t.Run(u.name, func(t *testing.T) {
			t.Parallel()
			db := u.open(t)
			createInvoice(t, db, 0)
			c, err := fenced.Open(ctx(t), cluster.URL(), fenced.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			inv := invoices(u.dialect)
			row := func() (string, int64) { return invoice(t, db) }

			a, err := c.AcquireLease(ctx(t), "invoice-42", "A", time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := inv.Update(ctx(t), db, 42, a.Fence, sqlguard.Column{Name: "status", Value: "draft"}); err != nil {
				t.Fatalf("A's update: %v", err)
			}
			// The same values again: MySQL reports the row unaffected; still success.
			if err := inv.Update(ctx(t), db, 42, a.Fence, sqlguard.Column{Name: "status", Value: "draft"}); err != nil {
				t.Fatalf("A's repeated update: %v", err)
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if l, err := c.GetLease(ctx(t), "invoice-42"); err == nil && !l.Held {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("A's lease never ended")
				}
			}
			b, err := c.AcquireLease(ctx(t), "invoice-42", "B", 30*time.Second)
			if err != nil || b.Fence != a.Fence+1 {
				t.Fatalf("B's takeover: %+v %v", b, err)
			}
			if err := inv.Update(ctx(t), db, 42, b.Fence, sqlguard.Column{Name: "status", Value: "sent"}); err != nil {
				t.Fatalf("B's update: %v", err)
			}
			err = inv.Update(ctx(t), db, 42, a.Fence, sqlguard.Column{Name: "status", Value: "cancelled"})
			var se *fenced.StaleError
			if !errors.As(err, &se) || se.CurrentFence != b.Fence || se.Fence != a.Fence || se.Reason != fenced.ReasonSuperseded {
				t.Fatalf("A's late update: %v, want stale with current fence %d", err, b.Fence)
			}
			if s, f := row(); s != "sent" || f != b.Fence {
				t.Fatalf("row after A's late update = %s fence %d, want sent fence %d", s, f, b.Fence)
			}
			if err := inv.Update(ctx(t), db, 7, b.Fence, sqlguard.Column{Name: "status", Value: "x"}); !errors.Is(err, fenced.ErrNotFound) {
				t.Fatalf("update of a missing row: %v", err)
			}
		})
	}
}

// createInvoice creates the table invoices holding one row, invoice 42,
// status new, stored with fence.
func createInvoice(t *testing.T, db *sql.DB, fence int64) {
	t.Helper()
	for _, s := range []string{
		`CREATE TABLE invoices (id INTEGER PRIMARY KEY, status VARCHAR(20) NOT NULL, fence BIGINT NOT NULL)`,
		fmt.Sprintf(`INSERT INTO invoices (id, status, fence) VALUES (42, 'new', %d)`, fence),
	} {
		if _, err := db.ExecContext(ctx(t), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// invoices is the guarded table createInvoice makes.
func invoices(d sqlguard.Dialect) sqlguard.Table {
	return sqlguard.Table{Dialect: d, Name: "invoices", KeyColumn: "id", FenceColumn: "fence"}
}

// invoice reads invoice 42's status and fence as committed.
func invoice(t *testing.T, db *sql.DB) (string, int64) {
	t.Helper()
	var s string
	var f int64
	if err := db.QueryRowContext(ctx(t), `SELECT status, fence FROM invoices WHERE id = 42`).Scan(&s, &f); err != nil {
		t.Fatal(err)
	}
	return s, f
}

func TestBadNamesAreRefused(t *testing.T) {
	ok := sqlguard.Table{Dialect: sqlguard.SQLite, Name: "t", KeyColumn: "k", FenceColumn: "f"}
	for name, tbl := range map[string]sqlguard.Table{
		"table":    {Dialect: sqlguard.SQLite, Name: "t; DROP TABLE x", KeyColumn: "k", FenceColumn: "f"},
		"key":      {Dialect: sqlguard.SQLite, Name: "t", KeyColumn: "k k", FenceColumn: "f"},
		"same":     {Dialect: sqlguard.SQLite, Name: "t", KeyColumn: "f", FenceColumn: "f"},
		"dialect":  {Name: "t", KeyColumn: "k", FenceColumn: "f"},
		"etcd":     {Dialect: fenced.DialectEtcd, Name: "t", KeyColumn: "k", FenceColumn: "f"}, // no SQL
		"setfence": ok,
	} {
		set := sqlguard.Column{Name: "v", Value: 1}
		if name == "setfence" {
			set.Name = "f"
		}
		if err := tbl.Update(context.Background(), nil, 1, 1, set); !errors.Is(err, fenced.ErrInvalid) {
			t.Errorf("%s: want invalid, got %v", name, err)
		}
	}
}

// TestAnUpdateThatChangedNoRowIsNotSuccess: PostgreSQL and SQLite count the
// rows an UPDATE matched, so one that changed no row wrote nothing, even
// when the row's fence is not above the caller's (here a trigger of the
// user's skips every update). Only MySQL, which counts a row already holding
// the written values as unaffected, reads such a row as success.
func TestAnUpdateThatChangedNoRowIsNotSuccess(t *testing.T) {
	for _, u := range userDBs {
		if u.dialect == sqlguard.MySQL {
			continue // no trigger can skip a row silently: SIGNAL fails the statement
		}
		t.Run(u.name, func(t *testing.T) {
			t.Parallel()
			db := u.open(t)
			createInvoice(t, db, 1)
			skip := []string{`CREATE TRIGGER frozen BEFORE UPDATE ON invoices BEGIN SELECT RAISE(IGNORE); END`}
			if u.dialect == sqlguard.Postgres {
				skip = []string{
					`CREATE FUNCTION frozen() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
					`CREATE TRIGGER frozen BEFORE UPDATE ON invoices FOR EACH ROW EXECUTE FUNCTION frozen()`,
				}
			}
			for _, s := range skip {
				if _, err := db.ExecContext(ctx(t), s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			err := invoices(u.dialect).Update(ctx(t), db, 42, 2, sqlguard.Column{Name: "status", Value: "sent"})
			if err == nil || errors.Is(err, fenced.ErrStale) || errors.Is(err, fenced.ErrNotFound) {
				t.Fatalf("an update that changed no row = %v, want an error saying nothing was written", err)
			}
			if s, f := invoice(t, db); s != "new" || f != 1 {
				t.Fatalf("invoice 42 = %s fence %d, want new fence 1", s, f)
			}
		})
	}
}
