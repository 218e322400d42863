package mysqldriver_test

import (
	"context"
	"database/sql"
	"net/url"
	"regexp"
	"sync"
	"testing"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/drivertest"
	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/internal/test/testdb"
	"github.com/go-sql-driver/mysql"
)

// Backend is the conformance-suite view of MySQL/MariaDB. Every session of
// the suite runs in time zone +05:00, to show that the session zone changes
// no outcome (the driver's clock is UTC_TIMESTAMP(6)).
//
// The suite skips one test here, AnIdleWorkerIsWokenByEnqueue: it needs
// enqueue notifications (driver.JobListener), and MySQL and MariaDB have
// nothing like PostgreSQL's LISTEN/NOTIFY to push them; idle workers poll.
var Backend = drivertest.Backend{
	Name:        "mysql",
	OpenDriver:  func(ctx context.Context, url string) (driver.Driver, error) { return mysqldriver.Open(ctx, url) },
	NewURL:      func(t testing.TB) string { return withParam(t, testdb.MySQL(t), "time_zone", "'+05:00'") },
	Exec:        func(t testing.TB, url, sql string) { testdb.MySQLExec(t, url, sql) },
	Snapshot:    testdb.MySQLSnapshot,
	WaitBlocked: testdb.MySQLWaitBlocked,
	Bind:        bind,
	Backdate:    testdb.MySQLBackdate,
}

func TestConformance(t *testing.T) { drivertest.Run(t, Backend) }

// TestConformanceRepeatableRead runs the suite again with every session in
// InnoDB's default REPEATABLE READ instead of the driver's READ COMMITTED:
// no decision may come from a snapshot read, so nothing may change. It runs
// after TestConformance, not beside it: the suite's timing tests (leases of
// a few hundred milliseconds) need the machine not doubly loaded.
func TestConformanceRepeatableRead(t *testing.T) {
	rr := Backend
	rr.Name = "mysql-repeatable-read"
	rr.NewURL = func(t testing.TB) string {
		return withParam(t, Backend.NewURL(t), isolationVariable(t), "'REPEATABLE-READ'")
	}
	drivertest.Run(t, rr)
}

var dollar = regexp.MustCompile(`\$[0-9]+`)

// bind rewrites $1-style placeholders into ?; the suite's statements use
// them in order.
func bind(sql string) string { return dollar.ReplaceAllString(sql, "?") }

// withParam sets a URL parameter (a session variable, for go-sql-driver).
func withParam(t testing.TB, rawURL, name, value string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("parse url: %v", err)
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

var (
	isolationOnce sync.Once
	isolationVar  string
)

// isolationVariable names the session's isolation level variable:
// transaction_isolation on MySQL 8 and MariaDB 11.1+, tx_isolation before.
func isolationVariable(t testing.TB) string {
	isolationOnce.Do(func() {
		isolationVar = "tx_isolation"
		db := openDB(t, testdb.MySQL(t))
		if db.QueryRowContext(context.Background(), `SELECT @@transaction_isolation`).Scan(new(string)) == nil {
			isolationVar = "transaction_isolation"
		}
	})
	return isolationVar
}

// openDB opens a plain pool on url, closed when the test ends.
func openDB(t testing.TB, rawURL string) *sql.DB {
	t.Helper()
	cfg, _, err := mysqldriver.ParseURL(rawURL)
	if err != nil {
		t.Fatalf("parse url: %v", err)
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatalf("connector: %v", err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db
}
