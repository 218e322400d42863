package testdb

import (
	"fmt"
	"testing"
	"time"
)

// PostgresBackdate moves every time of the jobs, attempts and workflows of the
// PostgreSQL database at url d into the past, as if all had happened d
// earlier (drivertest.Backend.Backdate).
func PostgresBackdate(t testing.TB, url string, d time.Duration) {
	t.Helper()
	iv := fmt.Sprintf("interval '%d microseconds'", d.Microseconds())
	Exec(t, url, fmt.Sprintf(`UPDATE fenced_jobs SET run_at = run_at - %[1]s, created_at = created_at - %[1]s,
updated_at = updated_at - %[1]s, attempted_at = attempted_at - %[1]s, finished_at = finished_at - %[1]s,
lease_expires_at = lease_expires_at - %[1]s`, iv))
	Exec(t, url, fmt.Sprintf(`UPDATE fenced_job_attempts SET started_at = started_at - %[1]s, ended_at = ended_at - %[1]s`, iv))
	Exec(t, url, fmt.Sprintf(`UPDATE fenced_workflows SET created_at = created_at - %[1]s, cancelled_at = cancelled_at - %[1]s`, iv))
}

// SQLiteBackdate is PostgresBackdate on a SQLite database.
func SQLiteBackdate(t testing.TB, url string, d time.Duration) {
	t.Helper()
	us := d.Microseconds()
	SQLiteExec(t, url, fmt.Sprintf(`UPDATE fenced_jobs SET run_at_us = run_at_us - %[1]d, created_us = created_us - %[1]d,
updated_us = updated_us - %[1]d, attempted_us = attempted_us - %[1]d, finished_us = finished_us - %[1]d,
lease_expires_us = lease_expires_us - %[1]d`, us))
	SQLiteExec(t, url, fmt.Sprintf(`UPDATE fenced_job_attempts SET started_us = started_us - %[1]d, ended_us = ended_us - %[1]d`, us))
	SQLiteExec(t, url, fmt.Sprintf(`UPDATE fenced_workflows SET created_us = created_us - %[1]d, cancelled_us = cancelled_us - %[1]d`, us))
}

// MySQLBackdate is PostgresBackdate on a MySQL or MariaDB database.
func MySQLBackdate(t testing.TB, url string, d time.Duration) {
	t.Helper()
	iv := fmt.Sprintf("INTERVAL %d MICROSECOND", d.Microseconds())
	MySQLExec(t, url, fmt.Sprintf(`UPDATE fenced_jobs SET run_at = run_at - %[1]s, created_at = created_at - %[1]s,
updated_at = updated_at - %[1]s, attempted_at = attempted_at - %[1]s, finished_at = finished_at - %[1]s,
lease_expires_at = lease_expires_at - %[1]s`, iv))
	MySQLExec(t, url, fmt.Sprintf(`UPDATE fenced_job_attempts SET started_at = started_at - %[1]s, ended_at = ended_at - %[1]s`, iv))
	MySQLExec(t, url, fmt.Sprintf(`UPDATE fenced_workflows SET created_at = created_at - %[1]s, cancelled_at = cancelled_at - %[1]s`, iv))
}
