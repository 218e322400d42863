package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input is refused before the database is opened: no database file is
// created, no schema migrated, nothing changed.
func TestBadInputCreatesNoDatabase(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 201)
	for _, args := range [][]string{
		{"lease", "acquire", "", "--owner", "a"},
		{"lease", "acquire", long, "--owner", "a"},
		{"lease", "acquire", "x\xff", "--owner", "a"},
		{"lease", "acquire", "x", "--owner", "a", "--ttl", "0"},
		{"lease", "acquire", "x", "--owner", "a", "--ttl", "25h"},
		{"lease", "renew", "x", "--owner", "a", "--fence", "-1"},
		{"lease", "release", "x", "--owner", "", "--fence", "1"},
		{"lease", "show", "x\x01"},
		{"lease", "run", "x", "--ttl", "-1s", "--", "true"},
		{"resource", "write", "k", "--fence", "-1", "--value", "v"},
		{"resource", "write", "", "--fence", "1", "--value", "v"},
		{"resource", "show", ""},
		{"fence", "advance", "--by", "-1"},
		{"job", "enqueue", "k", "--args", "not json"},
		{"job", "enqueue", "k", "--priority", "-1"},
		{"job", "ls", "--limit", "1001"},
		{"job", "ls", "--state", "bogus"},
		{"queue", "pause", ""},
		{"queue", "resume", "q!"},
		{"lease", "elect", "x", "--ttl", "25h", "--", "true"},
		{"semaphore", "acquire", "x", "--owner", "a", "--slots", "0"},
		{"semaphore", "acquire", "x", "--owner", "a", "--slots", "1", "--ttl", "0"},
		{"semaphore", "renew", "x", "--owner", "a", "--fence", "-1"},
		{"semaphore", "release", "", "--owner", "a", "--fence", "1"},
		{"semaphore", "show", "x\x7f"},
		{"resource", "write", "k", "--fence", "1", "--value", "v", "--op", "o\x01"},
		{"job", "enqueue", "k", "--sequence-continue-on-failed"},
		{"job", "ls", "--after", "-1"},
		{"job", "limit", "set", "--queue", "q!"},
		{"job", "limit", "set", "--queue", "q", "--key", "k", "--global", "1"},
		{"job", "limit", "ls", "--queue", "a b"},
		{"job", "limit", "rm", "--queue", "q", "--key", "k", "--kind", "k"},
		{"job", "slots", "--queue", "a b"},
	} {
		c := newCLI(t, "")
		c.fails(2, args...)
		if _, err := os.Stat(filepath.Join(c.dir, "fenced.db")); !os.IsNotExist(err) {
			t.Errorf("fenced %q: exit 2, but the default database was created (stat: %v)", args, err)
		}
	}
}

// An explicitly empty filter of "job ls" is refused, as the HTTP API
// refuses one, rather than read as no filter and list every job.
func TestJobListRefusesEmptyFilter(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "f.db"))
	c.ok("job", "enqueue", "k", "--queue", "q1")
	for _, flag := range []string{"--queue", "--kind", "--state"} {
		r := c.fails(2, "job", "ls", flag, "")
		contains(t, "stderr", r.stderr, flag)
	}
}

// bench with an empty --queue is refused rather than run on the default queue.
func TestBenchRefusesEmptyQueue(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "f.db"))
	c.fails(2, "bench", "--jobs", "1", "--queue", "")
}

// A malformed --addr is a usage error (exit 2), found before the database
// is opened, with tokens as without.
func TestServeBadAddrIsUsageError(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:99999", "nonsense", "127.0.0.1:-1"} {
		for _, env := range [][]string{nil, {"FENCED_TOKENS=0123456789abcdef-token"}} {
			c := newCLI(t, "")
			c.env = env
			c.fails(2, "serve", "--addr", addr)
			if _, err := os.Stat(filepath.Join(c.dir, "fenced.db")); !os.IsNotExist(err) {
				t.Errorf("serve --addr %s (env %q): the database was created (stat: %v)", addr, env, err)
			}
		}
	}
}

// A value that is not UTF-8 is shown by "resource show --json" as the HTTP
// API sends it, in value_base64, not replaced by U+FFFD in value.
func TestResourceShowJSONNonUTF8Value(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "f.db"))
	value := "a\xff\xfeb"
	c.ok("resource", "write", "k", "--fence", "1", "--value", value)
	var r struct {
		Value       string `json:"value"`
		ValueBase64 string `json:"value_base64"`
	}
	c.json(&r, "resource", "show", "k", "--json")
	got, err := base64.StdEncoding.DecodeString(r.ValueBase64)
	if r.Value != "" || err != nil || string(got) != value {
		t.Errorf("resource show --json: value %q, value_base64 %q (%q, %v); want value \"\" and value_base64 of %q",
			r.Value, r.ValueBase64, got, err, value)
	}
	// UTF-8 stays in value.
	c.ok("resource", "write", "k", "--fence", "1", "--value", "é")
	r.ValueBase64 = ""
	c.json(&r, "resource", "show", "k", "--json")
	if r.Value != "é" || r.ValueBase64 != "" {
		t.Errorf("resource show --json: value %q, value_base64 %q; want value \"é\"", r.Value, r.ValueBase64)
	}
}

// An explicit empty --op is refused, as an empty --key is by job enqueue:
// read as no operation id, the write would not be idempotent.
func TestResourceWriteRefusesEmptyOp(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "f.db"))
	c.fails(2, "resource", "write", "k", "--fence", "1", "--value", "v", "--op", "")
	c.ok("migrate") // the commands that only read do not migrate
	c.fails(5, "resource", "show", "k")
}

// A command that takes no arguments says so, without an empty list of
// names ("want : accepts 0 arg(s)").
func TestNoArgumentsMessage(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	r := c.fails(2, "lease", "ls", "extra")
	contains(t, "stderr", r.stderr, "want no arguments")
}

// chaos refuses a zero count, rate or length (the suite would run its
// default instead), a negative interval or skew (it would run none) and an
// unknown workload, before connecting to the database.
func TestChaosRefusesValuesItWouldIgnore(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "postgres://fenced@127.0.0.1:1/fenced?connect_timeout=1")
	for _, args := range [][]string{
		{"--workers", "0"}, {"--rate", "0"}, {"--rate", "-1"}, {"--duration", "0"}, {"--job-ttl", "0"},
		{"--pause-every", "-1s"}, {"--kill-every", "-1s"}, {"--conn-kill-every", "-1s"}, {"--clock-skew", "-1s"},
		{"--workload", "nope"}, {"--workload", ""},
		{"--restart-command", "pg_ctl -D /x restart"}, // without a restart to run it
	} {
		r := c.fails(2, append([]string{"chaos"}, args...)...)
		contains(t, "stderr", r.stderr, args[0])
	}
}

// chaos refuses a fault the URL's backend has not (a connection kill on
// SQLite, a write-lock stall on a server, a restart or failover off
// PostgreSQL) and a backend it cannot run on, before connecting to the
// database or creating a file.
func TestChaosRefusesFaultsTheBackendHasNot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sqlite := "sqlite:" + filepath.Join(dir, "f.db")
	for _, tc := range []struct {
		db   string
		args []string
		want string
	}{
		{sqlite, []string{"--conn-kill-every", "1s"}, "--conn-kill-every"},
		{sqlite, []string{"--restart-postgres"}, "--restart-postgres"},
		{sqlite, []string{"--failover", "true"}, "--failover"},
		{"mysql://root@127.0.0.1:1/x", []string{"--stall-every", "1s"}, "--stall-every"},
		{"mysql://root@127.0.0.1:1/x", []string{"--restart-postgres"}, "--restart-postgres"},
		{"postgres://fenced@127.0.0.1:1/fenced?connect_timeout=1", []string{"--stall-every", "1s"}, "--stall-every"},
		{"etcd://127.0.0.1:1", nil, "etcd"},
	} {
		r := newCLI(t, tc.db).fails(2, append([]string{"chaos"}, tc.args...)...)
		contains(t, "stderr", r.stderr, tc.want)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("a refused run left files: %v", files)
	}
}

// A field is refused in one shape, "invalid FIELD: REASON" naming the flag,
// whether the command refuses the value itself (a zero the library would
// read as "not given") or the library does; a negative job id is a bad id,
// not an unknown flag.
func TestOneMessageShapePerField(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "f.db"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"job", "enqueue", "k", "--max-attempts", "0"}, "fenced: invalid --max-attempts: 0 is outside 1 to 1000"},
		{[]string{"job", "enqueue", "k", "--max-attempts", "-5"}, "fenced: invalid --max-attempts: -5 is outside 1 to 1000"},
		{[]string{"job", "enqueue", "k", "--max-attempts", "1001"}, "fenced: invalid --max-attempts: 1001 is outside 1 to 1000"},
		{[]string{"job", "ls", "--limit", "0"}, "fenced: invalid --limit: 0 is outside 1 to 1000"},
		{[]string{"job", "ls", "--limit", "5000"}, "fenced: invalid --limit: 5000 is outside 1 to 1000"},
		{[]string{"job", "ls", "--limit", "-1"}, "fenced: invalid --limit: -1 is outside 1 to 1000"},
		{[]string{"job", "enqueue", "k", "--queue", ""}, "fenced: invalid --queue: must not be empty"},
		{[]string{"job", "ls", "--queue", ""}, "fenced: invalid --queue: must not be empty"},
		{[]string{"job", "enqueue", "k", "--queue", "a b"}, `fenced: invalid --queue: "a b" must be 1–100 letters`},
		{[]string{"job", "ls", "--queue", "a b"}, `fenced: invalid --queue: "a b" must be 1–100 letters`},
		{[]string{"job", "enqueue", "k", "--key", ""}, "fenced: invalid --key: must not be empty"},
		{[]string{"job", "enqueue", "k", "--run-at", ""}, `fenced: invalid --run-at: "" is not an RFC 3339 time`},
		{[]string{"job", "enqueue", "k", "--run-at", "soon"}, `fenced: invalid --run-at: "soon" is not an RFC 3339 time`},
		{[]string{"resource", "write", "k", "--fence", "1", "--value", "v", "--op", ""}, "fenced: invalid --op: must not be empty"},
		{[]string{"job", "show", "-1"}, `fenced: invalid job id: "-1" is not a positive integer`},
		{[]string{"job", "show", "0"}, `fenced: invalid job id: "0" is not a positive integer`},
		{[]string{"job", "cancel", "-12"}, `fenced: invalid job id: "-12" is not a positive integer`},
		{[]string{"job", "retry", "--json", "-3"}, `fenced: invalid job id: "-3" is not a positive integer`},
	} {
		r := c.fails(2, tc.args...)
		if !strings.HasPrefix(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("fenced %q: stderr %q, want one line starting %q", tc.args, r.stderr, tc.want)
		}
	}
	// A flag the command does not have is still a usage error.
	r := c.fails(2, "job", "show", "-x")
	contains(t, "stderr", r.stderr, "unknown shorthand flag")
}
