package main

import (
	"regexp"
	"testing"
)

var (
	// anyTime finds what looks like an RFC 3339 time in output.
	anyTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[0-9.]*(Z|[+-]\d\d:\d\d)?`)
	// layoutTime is fencedtype.TimeLayout's form: UTC, microseconds.
	layoutTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)
)

// Every time the command prints, for people or as --json, is in one form:
// RFC 3339, UTC, six fractional digits, on SQLite (which stores
// milliseconds) as on PostgreSQL (microseconds).
func TestTimesInOneForm(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		var outputs []string
		run := func(args ...string) { outputs = append(outputs, c.ok(args...)) }
		run("lease", "acquire", "l", "--owner", "o")
		run("lease", "acquire", "l", "--owner", "o", "--json")
		run("lease", "show", "l")
		run("lease", "show", "l", "--json")
		run("lease", "ls", "--json")
		run("lease", "release", "l", "--owner", "o", "--fence", "1")
		run("resource", "write", "r", "--fence", "1", "--value", "v")
		run("resource", "show", "r")
		run("resource", "show", "r", "--json")
		run("job", "enqueue", "k", "--key", "once")
		run("job", "enqueue", "k", "--key", "once", "--json")
		run("job", "enqueue", "k", "--key", "once")
		run("job", "show", "1")
		run("job", "show", "1", "--json")
		run("job", "ls")
		run("job", "cancel", "1", "--json")
		n := 0
		for _, out := range outputs {
			for _, tm := range anyTime.FindAllString(out, -1) {
				n++
				if !layoutTime.MatchString(tm) {
					t.Errorf("time %q is not in the form 2006-01-02T15:04:05.000000Z, in:\n%s", tm, out)
				}
			}
		}
		if n < 15 {
			t.Errorf("found %d times in the outputs; the pattern finds too little", n)
		}
	})
}
