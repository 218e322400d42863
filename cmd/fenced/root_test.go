package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHelp(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	out := c.ok("--help")
	for _, want := range []string{"lease", "resource", "fence", "migrate", "demo", "version", "Exit codes", "Examples:", "FENCED_DATABASE_URL"} {
		contains(t, "fenced --help", out, want)
	}
	if strings.Contains(out, "demo-worker") {
		t.Error("fenced --help lists the hidden demo-worker")
	}
	for _, cmd := range [][]string{
		{"lease", "acquire"}, {"lease", "renew"}, {"lease", "release"}, {"lease", "show"},
		{"lease", "ls"}, {"lease", "run"}, {"resource", "write"}, {"resource", "show"},
		{"fence", "advance"}, {"migrate"}, {"demo"}, {"job", "work"},
		{"semaphore", "acquire"}, {"semaphore", "renew"}, {"semaphore", "release"}, {"semaphore", "show"}, {"semaphore", "ls"},
	} {
		contains(t, strings.Join(cmd, " ")+" --help", c.ok(append(cmd, "--help")...), "Examples:")
	}
	contains(t, "fence advance --help", c.ok("fence", "advance", "--help"), "promoting an asynchronous replica")
	if _, err := os.Stat(filepath.Join(c.dir, "fenced.db")); !os.IsNotExist(err) {
		t.Errorf("help touched the database (stat: %v)", err)
	}
}

func TestBareGroupPrintsUsageAndExits2(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	for _, args := range [][]string{nil, {"lease"}, {"resource"}, {"fence"}, {"semaphore"}} {
		r := c.run(args...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "Usage:") {
			t.Errorf("fenced %v: exit %d, stdout %q, stderr %q; want usage on stderr, exit 2", args, r.code, r.stdout, r.stderr)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	out := c.ok("version")
	if !strings.HasPrefix(out, "fenced "+testVersion) {
		t.Errorf("version: %q, want the -ldflags version %s", out, testVersion)
	}
	if flag := c.ok("--version"); flag != out {
		t.Errorf("--version printed %q, version %q: want the same line", flag, out)
	}
}

func TestDatabaseFromEnvironment(t *testing.T) {
	t.Parallel()
	db := "sqlite:" + filepath.Join(t.TempDir(), "env.db")
	c := newCLI(t, "")
	c.env = []string{"FENCED_DATABASE_URL=" + db}
	c.ok("lease", "acquire", "job", "--owner", "A")
	withFlag := newCLI(t, db)
	if l := showLease(withFlag, "job"); l.Owner != "A" {
		t.Errorf("lease in $FENCED_DATABASE_URL: %+v", l)
	}
	// --db wins over the environment.
	other := "sqlite:" + filepath.Join(t.TempDir(), "other.db")
	r := c.fails(exitError, "--db", other, "lease", "show", "job")
	contains(t, "lease show with --db", r.stderr, strings.TrimPrefix(other, "sqlite:")+" does not exist")
}

func TestDefaultDatabaseIsFencedDBInWorkingDirectory(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.ok("lease", "acquire", "job", "--owner", "A")
	if _, err := os.Stat(filepath.Join(c.dir, "fenced.db")); err != nil {
		t.Fatalf("default database: %v", err)
	}
	relative := newCLI(t, "sqlite:fenced.db")
	relative.dir = c.dir
	if l := showLease(relative, "job"); l.Owner != "A" {
		t.Errorf("lease in ./fenced.db: %+v", l)
	}
}

func TestDatabaseURLErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.fails(2, "--db", "nonsense", "lease", "ls")
	c.fails(2, "--db", "redis://x/y", "lease", "ls")
	c.fails(2, "--db", "sqlite://host/path", "lease", "ls")
}

func TestDatabasePasswordIsNeverPrinted(t *testing.T) {
	t.Parallel()
	for _, db := range []string{
		"postgres://fenced:hunter2-secret@127.0.0.1:1/fenced?connect_timeout=5",
		"postgres://fenced@127.0.0.1:1/fenced?password=hunter2-secret&connect_timeout=5",
		"postgres://fenced:hunter2-secret@127.0.0.1:1/fenced?sslmode=bogus",
	} {
		for _, c := range []cli{newCLI(t, db), {t: t, dir: t.TempDir(), env: []string{"FENCED_DATABASE_URL=" + db}}} {
			r := c.run("lease", "ls")
			if r.code == 0 || strings.Contains(r.stderr+r.stdout, "hunter2") {
				t.Errorf("fenced lease ls on %s: exit %d, stderr %q; want a failure that hides the password", db, r.code, r.stderr)
			}
		}
	}
}

func TestDemoRunsThroughTheBinary(t *testing.T) {
	t.Parallel()
	// The demo re-executes this binary as "fenced demo-worker".
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "demo.db"))
	r := c.run("demo")
	if r.code != 0 || r.stdout == "" {
		t.Errorf("fenced demo: exit %d, stdout %q, stderr %q; want every outcome as expected", r.code, r.stdout, r.stderr)
	}
}

// The demo's help says that it removes what it creates in the user's
// database unless --keep, and --keep keeps it.
func TestDemoHelpAndKeep(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "demo.db"))
	help := oneLine(c.ok("demo", "--help"))
	for _, want := range []string{"removes at the end what it created there", "demo-* queues with their jobs", "--keep keeps them", "--keep"} {
		contains(t, "demo --help", help, want)
	}
	out := c.ok("demo", "transitions", "--keep")
	contains(t, "demo --keep", out, "kept (--keep):\n  queues     demo-transitions-")
	out = c.ok("demo", "transitions")
	contains(t, "demo", out, "removed what the demo created: 1 job in 1 demo-* queue, 0 leases, 0 resources, 0 tables")
	if n := strings.Count(c.ok("job", "ls"), "demo-transitions-"); n != 1 {
		t.Errorf("%d demo jobs left, want the one kept", n)
	}
}
