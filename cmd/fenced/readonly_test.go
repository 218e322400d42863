//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/testdb"
)

// TestReadOnlySQLite: a SQLite file or directory this user may not write
// fails with the path and the cause; a command that only reads a file it
// may not write works when the directory lets SQLite keep its WAL files.
func TestReadOnlySQLite(t *testing.T) {
	t.Parallel()
	t.Run("Directory", func(t *testing.T) {
		t.Parallel()
		dir := sharedDir(t)
		path := filepath.Join(dir, "f.db")
		newCLI(t, "sqlite:"+path).ok("lease", "acquire", "report", "--owner", "w1", "--ttl", "5m")
		chmod(t, path, 0o444)
		chmod(t, dir, 0o555)
		want := "fenced: cannot open sqlite database " + path + ": directory " + dir +
			" is not writable, and SQLite must create f.db-wal and f.db-shm there to open a database in WAL mode, even to read it\n"
		if r := asReader(t, dir, path, exitError, "lease", "ls"); r.stderr != want {
			t.Errorf("lease ls in a read-only directory:\n got %q\nwant %q", r.stderr, want)
		}
	})
	t.Run("File", func(t *testing.T) {
		t.Parallel()
		dir := sharedDir(t)
		path := filepath.Join(dir, "f.db")
		newCLI(t, "sqlite:"+path).ok("lease", "acquire", "report", "--owner", "w1", "--ttl", "5m")
		chmod(t, path, 0o444)
		chmod(t, dir, 0o777)
		if r := asReader(t, dir, path, exitOK, "lease", "ls"); !strings.Contains(r.stdout, "report") {
			t.Errorf("lease ls of a read-only file = %q, want the lease", r.stdout)
		}
		want := `fenced: acquire lease "other": ` + path + " is read-only (no write permission): attempt to write a readonly database (8)\n"
		if r := asReader(t, dir, path, exitError, "lease", "acquire", "other", "--owner", "w2"); r.stderr != want {
			t.Errorf("acquire on a read-only file:\n got %q\nwant %q", r.stderr, want)
		}
	})
	t.Run("FileThatNeedsMigrating", func(t *testing.T) {
		t.Parallel()
		dir := sharedDir(t)
		path := filepath.Join(dir, "f.db")
		testdb.SQLiteExec(t, "sqlite:"+path, `PRAGMA journal_mode = WAL`)
		testdb.SQLiteExec(t, "sqlite:"+path, `CREATE TABLE not_fenced (x INTEGER)`)
		chmod(t, path, 0o444)
		chmod(t, dir, 0o777)
		r := asReader(t, dir, path, exitError, "lease", "acquire", "other", "--owner", "w2")
		if !strings.HasPrefix(r.stderr, "fenced: sqlite:"+path+": the database needs migrating (migrations 1, ") ||
			!strings.HasSuffix(r.stderr, " pending) and migrating it failed: migrate sqlite: "+path+
				" is read-only (no write permission): attempt to write a readonly database (8)\n") {
			t.Errorf("lease acquire on a read-only file that needs migrating: %q", r.stderr)
		}
		// A command that only reads does not try.
		want := "fenced: sqlite:" + path + `: the sqlite database is not migrated: it has never been migrated (run "fenced migrate", or Client.Migrate)` + "\n"
		if r := asReader(t, dir, path, exitError, "lease", "ls"); r.stderr != want {
			t.Errorf("lease ls of a read-only file that needs migrating:\n got %q\nwant %q", r.stderr, want)
		}
	})
}

// sharedDir makes a directory another user may enter (t.TempDir's parent
// is private to this one), removed when the test ends.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fenced-ro-")
	if err != nil {
		t.Fatal(err)
	}
	chmod(t, dir, 0o755)
	t.Cleanup(func() {
		os.Chmod(dir, 0o755)
		os.RemoveAll(dir)
	})
	return dir
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

var binShared sync.Once

// asReader runs the binary on the SQLite file path in dir as a user the
// file's permissions bind, and requires exit code: user nobody when the
// tests run as root, who may write whatever the permissions say, else the
// tests' own user.
func asReader(t *testing.T, dir, path string, code int, args ...string) result {
	t.Helper()
	binShared.Do(func() { os.Chmod(filepath.Dir(bin), 0o755) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--db", "sqlite:" + path}, args...)...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FENCED_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatalf("fenced %s: %v", strings.Join(args, " "), err)
	}
	r := result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	if r.code != code {
		t.Fatalf("fenced %s as a reader: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}
