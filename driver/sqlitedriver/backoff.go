package sqlitedriver

// backoffUS is the one statement of the retry backoff on SQLite (see
// fencedtype.Backoff), used by every statement that puts a job back to
// queued after a failed or lost attempt (endJobsSQL, recoverJobsSQL): the
// delay in microseconds after attempt number attempt (1-based),
// min(max, base·2^(attempt−1)) scaled by 1 − jitter·r, r uniform in [0, 1)
// from 20 bits of random(), a factor in (1−jitter, 1]. The arguments are
// SQL expressions: base and max in microseconds, jitter from 0 to 1. It is
// computed in floating point with power(), one of the math functions
// modernc.org/sqlite compiles in, the exponent capped at 62, so no attempt
// number overflows it, and the result is at most max. The statements that
// embed it are package variables, built once.
func backoffUS(attempt, base, max, jitter string) string {
	return `CAST(MIN(` + max + `, ` + base + ` * power(2, MIN(` + attempt + ` - 1, 62)))
        * (1 - ` + jitter + ` * ((random() & 1048575) / 1048576.0)) AS INTEGER)`
}
