package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/testdb"
)

// testVersion is stamped into the binary under test with -ldflags.
const testVersion = "v0.0.0-clitest"

// bin is the fenced binary built once for all tests.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fenced-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "fenced")
	build := exec.Command("go", "build", "-ldflags", "-X main.version="+testVersion, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	stopEtcd()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary produced.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs the binary for one test: against db (passed as --db unless
// empty), in dir, with env added to an environment cleared of FENCED_*.
type cli struct {
	t   *testing.T
	db  string
	dir string
	env []string
}

func newCLI(t *testing.T, db string) cli {
	return cli{t: t, db: db, dir: t.TempDir()}
}

// eachDB runs test on a fresh SQLite file and a fresh PostgreSQL schema.
func eachDB(t *testing.T, test func(t *testing.T, c cli)) {
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		test(t, newCLI(t, testdb.SQLite(t)))
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		test(t, newCLI(t, testdb.Postgres(t)))
	})
}

// command builds the process for args, with --db first.
func (c cli) command(ctx context.Context, args ...string) *exec.Cmd {
	if c.db != "" {
		args = append([]string{"--db", c.db}, args...)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = c.dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FENCED_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, c.env...)
	return cmd
}

// run runs the binary to completion.
func (c cli) run(args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := c.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		c.t.Fatalf("fenced %s: %v", strings.Join(args, " "), err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// ok runs the binary, requires exit 0 and returns stdout.
func (c cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("fenced %s: exit %d, want 0\nstderr: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// fails runs the binary and requires exit code; a failure prints one line
// "fenced: …" to stderr, plus a usage hint after a usage error, and nothing
// to stdout.
func (c cli) fails(code int, args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	if r.code != code {
		c.t.Fatalf("fenced %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	if r.stdout != "" {
		c.t.Errorf("fenced %s: stdout %q, want none", strings.Join(args, " "), r.stdout)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "fenced: ") || len(lines) > 2 || len(lines) == 2 && !strings.HasPrefix(lines[1], "Run 'fenced") {
		c.t.Errorf("fenced %s: stderr %q, want one line \"fenced: …\" (and a usage hint)", strings.Join(args, " "), r.stderr)
	}
	return r
}

// json runs the binary, requires exit 0 and decodes its stdout into v.
func (c cli) json(v any, args ...string) {
	c.t.Helper()
	out := c.ok(args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("fenced %s: stdout %q: %v", strings.Join(args, " "), out, err)
	}
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func contains(t *testing.T, what, s, want string) {
	t.Helper()
	if !strings.Contains(s, want) {
		t.Errorf("%s %q does not contain %q", what, s, want)
	}
}
