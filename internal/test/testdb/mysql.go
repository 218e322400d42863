package testdb

import (
	"context"
	"database/sql"
	"fmt"
	mathrand "math/rand/v2"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/go-sql-driver/mysql"
)

// DefaultMySQLURL is used when FENCED_TEST_MYSQL_URL is unset: this
// machine's MariaDB.
const DefaultMySQLURL = "mysql://root@127.0.0.1:3306/test"

// MySQLURL is the MySQL or MariaDB server the tests use.
func MySQLURL() string {
	if u := os.Getenv("FENCED_TEST_MYSQL_URL"); u != "" {
		return u
	}
	return DefaultMySQLURL
}

var (
	myOnce sync.Once
	myErr  error
)

// MySQL creates an empty database for this test, dropped when it ends, and
// returns a URL that uses it. Under CI=true an unreachable server fails the
// test; otherwise it skips.
func MySQL(t testing.TB) string {
	t.Helper()
	base := MySQLURL()
	myOnce.Do(func() {
		db, err := openMySQL(base)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = db.PingContext(ctx)
			db.Close()
		}
		myErr = err
	})
	requireServer(t, "MySQL at "+redacted(base), myErr)
	name := "fenced_t_" + randomHex(6)
	MySQLExec(t, base, `CREATE DATABASE `+name+` CHARACTER SET utf8mb4`)
	t.Cleanup(func() { MySQLExec(t, base, `DROP DATABASE `+name) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", redacted(base), err)
	}
	u.Path = "/" + name
	return u.String()
}

// openMySQL opens a pool of its own on url, with multiStatements so that
// test set-up can run scripts.
func openMySQL(rawURL string) (*sql.DB, error) {
	cfg, _, err := mysqldriver.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg.MultiStatements = true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector), nil
}

// MySQLExec runs one statement (or a script) on a fresh connection to url.
func MySQLExec(t testing.TB, url, query string, args ...any) {
	t.Helper()
	db, err := openMySQL(url)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// mysqlTables are the fenced tables, parents before children.
var mysqlTables = []string{"fenced_meta", "fenced_leases", "fenced_resources", "fenced_resource_ops",
	"fenced_workflows", "fenced_jobs", "fenced_job_attempts", "fenced_job_deps"}

// MySQLSnapshot copies the fenced tables of url's database (a "backup") and
// returns a function that restores them, as a dump and restore would.
func MySQLSnapshot(t testing.TB, url string) func() {
	t.Helper()
	for _, tb := range mysqlTables {
		MySQLExec(t, url, `CREATE TABLE snap_`+tb+` LIKE `+tb+`; INSERT INTO snap_`+tb+` SELECT * FROM `+tb)
	}
	return func() {
		for i := len(mysqlTables) - 1; i >= 0; i-- {
			MySQLExec(t, url, `DELETE FROM `+mysqlTables[i])
		}
		for _, tb := range mysqlTables {
			MySQLExec(t, url, `INSERT INTO `+tb+` SELECT * FROM snap_`+tb)
		}
	}
}

// MySQLWaitBlocked returns once a connection to url's database waits on a
// row lock: an InnoDB transaction in LOCK WAIT whose session uses that
// database. information_schema.INNODB_TRX is served from a cache that the
// server refreshes only when it was not read for 0.1 s, so it is polled at
// random intervals well above that (several tests may poll at once).
func MySQLWaitBlocked(t testing.TB, rawURL string) {
	t.Helper()
	cfg, _, err := mysqldriver.ParseURL(rawURL)
	if err != nil {
		t.Fatalf("parse url: %v", err)
	}
	db, err := openMySQL(rawURL)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		var n int
		err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.INNODB_TRX t
			JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
			WHERE t.trx_state = 'LOCK WAIT' AND p.DB = ?`, cfg.DBName).Scan(&n)
		if err != nil {
			t.Fatalf("no connection of %s blocked on a lock: %v; sessions: %s", cfg.DBName, err, mysqlSessions(db, cfg.DBName))
		}
		if n > 0 {
			return
		}
		time.Sleep(time.Duration(150+mathrand.IntN(200)) * time.Millisecond)
	}
}

// mysqlSessions describes the sessions using database name and their
// transactions, for a failure message.
func mysqlSessions(db *sql.DB, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT p.ID, COALESCE(p.COMMAND, ''), COALESCE(p.STATE, ''), COALESCE(p.INFO, ''),
			COALESCE(t.trx_state, 'no transaction')
		FROM information_schema.PROCESSLIST p LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID
		WHERE p.DB = ?`, name)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id int64
		var command, state, info, trx string
		if err := rows.Scan(&id, &command, &state, &info, &trx); err != nil {
			return err.Error()
		}
		out = append(out, fmt.Sprintf("[%d %s %q %s: %.200s]", id, command, state, trx, info))
	}
	return strings.Join(out, " ")
}

// redacted is url with its password, if any, replaced.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	return u.Redacted()
}
