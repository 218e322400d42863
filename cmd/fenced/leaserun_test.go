package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLeaseRunPassesTheFenceAndExitStatus(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		r := c.run("lease", "run", "job", "--ttl", "5s", "--", "sh", "-c", "echo $FENCED_FENCE; exit 7")
		if r.code != 7 || r.stdout != "1\n" {
			t.Fatalf("lease run: exit %d, stdout %q, stderr %q; want exit 7 and the fence 1", r.code, r.stdout, r.stderr)
		}
		if l := showLease(c, "job"); l.Held || l.Fence != 1 {
			t.Errorf("after lease run: %+v, want fence 1 released", l)
		}
		out := c.ok("lease", "run", "job", "--owner", "me", "--", "sh", "-c", `echo "$FENCED_LEASE $FENCED_OWNER $FENCED_FENCE"`)
		if out != "job me 2\n" {
			t.Errorf("second run: stdout %q, want \"job me 2\"", out)
		}
	})
}

func TestLeaseRunDefaults(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "fenced.db"))
	// Without --, a command with no flags of its own; owner hostname:pid;
	// the child sees --db as FENCED_DATABASE_URL.
	out := c.ok("lease", "run", "job", "env")
	owner := regexp.MustCompile(`(?m)^FENCED_OWNER=.+:[0-9]+$`)
	if !owner.MatchString(out) || !strings.Contains(out, "\nFENCED_DATABASE_URL="+c.db+"\n") {
		t.Errorf("environment %q, want FENCED_OWNER=hostname:pid and FENCED_DATABASE_URL=%s", out, c.db)
	}
}

func TestLeaseRunStdinPassesThrough(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "fenced.db"))
	cmd := c.command(context.Background(), "lease", "run", "job", "--", "cat")
	cmd.Stdin = strings.NewReader("hello\n")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil || stdout.String() != "hello\n" {
		t.Errorf("cat under lease run: %v, stdout %q", err, stdout.String())
	}
}

func TestLeaseRunHeldByAnotherOwnerExit3WithoutRunning(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("lease", "acquire", "job", "--owner", "other")
		marker := filepath.Join(t.TempDir(), "ran")
		r := c.fails(3, "lease", "run", "job", "--", "touch", marker)
		contains(t, "stderr", r.stderr, `held by "other"`)
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Errorf("the command ran (stat: %v)", err)
		}
	})
}

func TestLeaseRunSignalledChildExits128PlusSignal(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "fenced.db"))
	r := c.run("lease", "run", "job", "--", "sh", "-c", "kill -KILL $$")
	if r.code != 128+9 {
		t.Errorf("exit %d, want 137; stderr %q", r.code, r.stderr)
	}
	if showLease(c, "job").Held {
		t.Error("lease still held after the command died")
	}
}

func TestLeaseRunCommandNotFoundExit127(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "fenced.db"))
	r := c.fails(127, "lease", "run", "job", "--", "no-such-command-fenced-test")
	contains(t, "stderr", r.stderr, "no-such-command-fenced-test")
	if showLease(c, "job").Held {
		t.Error("lease still held after the command failed to start")
	}
}

func TestLeaseRunUsageErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "fenced.db"))
	c.fails(2, "lease", "run", "job")
	c.fails(2, "lease", "run", "job", "--")
	c.fails(2, "lease", "run", "--", "true")
	c.fails(2, "lease", "run", "job", "extra", "--", "true")
	c.fails(2, "lease", "run", "job", "--grace", "-1s", "--", "true")
	c.fails(2, "lease", "run", "job", "--ttl", "0", "--", "true")
}

// sleeper is a command that runs until signalled.
var sleeper = []string{"sleep", "60"}

// startRun starts "lease run NAME FLAGS… -- COMMAND…" and waits until it
// holds the lease. It returns the process and a channel that yields its
// result.
func startRun(t *testing.T, c cli, name string, flags []string, command ...string) (*os.Process, <-chan result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	args := append([]string{"lease", "run", name, "--owner", "runner"}, flags...)
	args = append(append(args, "--"), command...)
	cmd := c.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() {
		defer cancel()
		_ = cmd.Wait()
		done <- result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var last result
	waitFor(t, "lease run to hold "+name, func() bool {
		select {
		case r := <-done:
			t.Fatalf("lease run ended before holding %s: exit %d, stderr %q", name, r.code, r.stderr)
		default:
		}
		r := c.run("lease", "show", name, "--json")
		held := r.code == 0 && strings.Contains(r.stdout, `"owner":"runner"`) && strings.Contains(r.stdout, `"held":true`)
		if !held && r != last {
			t.Logf("lease show %s: exit %d, stdout %q, stderr %q", name, r.code, r.stdout, r.stderr)
		}
		last = r
		return held
	})
	return cmd.Process, done
}

// waitFile waits until a command under test created path.
func waitFile(t *testing.T, path string) {
	t.Helper()
	waitFor(t, path+" to exist", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// waitExit waits for a started run with a generous deadline.
func waitExit(t *testing.T, done <-chan result) result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(45 * time.Second):
		t.Fatal("lease run did not end after its lease was lost or it was signalled")
		return result{}
	}
}

func TestLeaseRunLosingTheLeaseTerminatesTheCommand(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		_, done := startRun(t, c, "job", []string{"--ttl", "1s", "--grace", "5s"}, sleeper...)
		// Advancing fences ends every lease: the keeper's next renewal is
		// stale, and the command gets SIGTERM.
		c.ok("fence", "advance", "--by", "10", "--yes")
		r := waitExit(t, done)
		if r.code != 128+int(syscall.SIGTERM) {
			t.Errorf("exit %d, want %d (sleep killed by SIGTERM); stderr %q", r.code, 128+int(syscall.SIGTERM), r.stderr)
		}
		contains(t, "stderr", r.stderr, `lease "job" lost`)
		contains(t, "stderr", r.stderr, "SIGTERM")
	})
}

func TestLeaseRunForwardsSIGTERM(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		p, done := startRun(t, c, "job", nil, sleeper...)
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r := waitExit(t, done)
		if r.code != 128+int(syscall.SIGTERM) {
			t.Errorf("exit %d, want %d; stderr %q", r.code, 128+int(syscall.SIGTERM), r.stderr)
		}
		if l := showLease(c, "job"); l.Held {
			t.Errorf("after the command ended: %+v, want released", l)
		}
	})
}

func TestLeaseRunKillsACommandIgnoringSIGTERMAfterGrace(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "fenced.db"))
	ready := filepath.Join(t.TempDir(), "trapped")
	_, done := startRun(t, c, "job", []string{"--ttl", "1s", "--grace", "100ms"},
		"sh", "-c", `trap "" TERM; touch "$0"; exec sleep 60`, ready)
	waitFile(t, ready) // the trap is set before the lease is lost
	c.ok("fence", "advance", "--by", "10", "--yes")
	r := waitExit(t, done)
	if r.code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit %d, want %d (killed); stderr %q", r.code, 128+int(syscall.SIGKILL), r.stderr)
	}
	contains(t, "stderr", r.stderr, "SIGKILL")
}

func TestLeaseRunLostLeaseIsStaleEvenIfTheCommandExits0(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "fenced.db"))
	ready := filepath.Join(t.TempDir(), "trapped")
	_, done := startRun(t, c, "job", []string{"--ttl", "1s"},
		"sh", "-c", `trap 'kill $!; exit 0' TERM; sleep 60 >/dev/null 2>&1 & touch "$0"; wait`, ready)
	waitFile(t, ready)
	c.ok("fence", "advance", "--by", "10", "--yes")
	if r := waitExit(t, done); r.code != exitStale {
		t.Errorf("exit %d, want %d (stale); stderr %q", r.code, exitStale, r.stderr)
	}
}
