package mysqldriver_test

import (
	"net/url"
	"regexp"
	"testing"

	"github.com/fenced/fenced/fencedtest"
	"github.com/fenced/fenced/internal/testdb"
)

// Backend is the conformance-suite view of MySQL/MariaDB. Every session of
// the suite runs in time zone +05:00, to show that the session zone changes
// no outcome (the driver's clock is UTC_TIMESTAMP(6)).
//
// The suite skips one test here, AnIdleWorkerIsWokenByEnqueue: it needs
// enqueue notifications (driver.JobNotifier), and MySQL and MariaDB have
// nothing like PostgreSQL's LISTEN/NOTIFY to push them; idle workers poll.
var Backend = fencedtest.Backend{
	Name:        "mysql",
	NewURL:      func(t testing.TB) string { return inZone(t, testdb.MySQL(t), "+05:00") },
	Exec:        func(t testing.TB, url, sql string) { testdb.MySQLExec(t, url, sql) },
	Snapshot:    testdb.MySQLSnapshot,
	WaitBlocked: testdb.MySQLWaitBlocked,
	Bind:        bind,
}

func TestConformance(t *testing.T) { fencedtest.Run(t, Backend) }

var dollar = regexp.MustCompile(`\$[0-9]+`)

// bind rewrites $1-style placeholders into ?; the suite's statements use
// them in order.
func bind(sql string) string { return dollar.ReplaceAllString(sql, "?") }

// inZone adds a session time_zone to a URL.
func inZone(t testing.TB, rawURL, zone string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("parse url: %v", err)
	}
	q := u.Query()
	q.Set("time_zone", "'"+zone+"'")
	u.RawQuery = q.Encode()
	return u.String()
}
