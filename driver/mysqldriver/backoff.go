package mysqldriver

// backoffUS is the one statement of the retry backoff on MySQL and MariaDB
// (see fencedtype.Backoff), used by every statement that puts a job back
// to queued after a failed or lost attempt (endJobsSQL, recoverJobsSQL):
// the delay in microseconds after attempt number attempt (1-based),
// min(max, base·2^(attempt−1)) scaled by 1 − jitter·RAND(), a factor in
// (1−jitter, 1]. The arguments are SQL expressions: base and max in
// microseconds, jitter from 0 to 1. It is computed in DOUBLE, the exponent
// capped at 62, so no attempt number overflows it, and the result is at
// most max. Given ? placeholders, their arguments go in the order max,
// base, jitter. The statements that embed it are package variables, built
// once.
func backoffUS(attempt, base, max, jitter string) string {
	return `CAST(LEAST(` + max + `, ` + base + ` * POW(2, LEAST(` + attempt + ` - 1, 62))) * (1 - ` + jitter + ` * RAND()) AS SIGNED)`
}
