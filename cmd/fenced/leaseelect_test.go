package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startElect starts "lease elect NAME ARGS…" as owner elector and returns
// the process and a channel that yields its result.
func startElect(t *testing.T, c cli, name string, args ...string) (*os.Process, <-chan result) {
	t.Helper()
	return startElectAs(t, c, "elector", name, args...)
}

// startElectAs is startElect as owner.
func startElectAs(t *testing.T, c cli, owner, name string, args ...string) (*os.Process, <-chan result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := c.command(ctx, append([]string{"lease", "elect", name, "--owner", owner}, args...)...)
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
	return cmd.Process, done
}

// terms reads the "OWNER FENCE" lines a command under test appended to
// path, one per term: the lines written whole (the shell may have created
// the file, or begun a line, and not written it yet).
func terms(t *testing.T, path string) [][2]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	whole := string(b[:strings.LastIndexByte(string(b), '\n')+1])
	var out [][2]string
	for _, line := range strings.Split(strings.TrimSuffix(whole, "\n"), "\n") {
		if line == "" {
			continue
		}
		owner, fence, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: %q is not a term", path, line)
		}
		out = append(out, [2]string{owner, fence})
	}
	return out
}

// fences reads the fences a command under test appended to path, one a line.
func fences(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("%s: %q is not a fence", path, f)
		}
		out = append(out, n)
	}
	return out
}

func TestLeaseElectWaitsForTheLeaseInsteadOfFailing(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("lease", "acquire", "job", "--owner", "other", "--ttl", "2s")
		r := c.run("lease", "elect", "job", "--ttl", "1s", "--", "sh", "-c", `echo "$FENCED_OWNER $FENCED_FENCE"; exit 7`)
		if r.code != 7 || !strings.HasSuffix(r.stdout, " 2\n") {
			t.Fatalf("lease elect: exit %d, stdout %q, stderr %q; want exit 7 and the fence after other's, 2", r.code, r.stdout, r.stderr)
		}
		if l := showLease(c, "job"); l.Held || l.Fence != 2 || l.Owner == "other" {
			t.Errorf("after lease elect: %+v, want fence 2 released", l)
		}
	})
}

func TestLeaseElectAgainRunsEveryTermWithANewFence(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "fenced.db"))
	log := filepath.Join(t.TempDir(), "fences")
	// Succeeds twice, then fails: the third failure ends the campaign.
	r := c.run("lease", "elect", "job", "--again", "--", "sh", "-c",
		`echo "$FENCED_FENCE" >> "$0"; test "$(wc -l < "$0")" -lt 3`, log)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (the command's third run failed); stderr %q", r.code, r.stderr)
	}
	if got := fences(t, log); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("fences seen %v, want a new one each term: [1 2 3]", got)
	}
	if l := showLease(c, "job"); l.Held {
		t.Errorf("after lease elect: %+v, want released", l)
	}
}

// Two "lease elect --again" campaigners whose command exits at once take
// turns: the one that stepped down waits while the other campaigns, so from
// the second campaigner's first term on nobody leads twice in a row.
func TestLeaseElectAgainHandsOverToTheWaitingCampaigner(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		dir := t.TempDir()
		log, stop := filepath.Join(dir, "terms"), filepath.Join(dir, "stop")
		// Each term appends its owner and fence; once stop exists, a term's
		// command fails, which ends its campaigner.
		cmd := []string{"--ttl", "4s", "--again", "--", "sh", "-c",
			`echo "$FENCED_OWNER $FENCED_FENCE" >> "$0"; test ! -e "$1"`, log, stop}
		_, done1 := startElectAs(t, c, "first", "job", cmd...)
		waitFor(t, "the first term", func() bool { return len(terms(t, log)) > 0 })
		_, done2 := startElectAs(t, c, "second", "job", cmd...)
		// second's first term, then five more
		const alternating = 6
		secondFrom := func(ts [][2]string) int {
			for i, tm := range ts {
				if tm[0] == "second" {
					return i
				}
			}
			return len(ts)
		}
		waitFor(t, "six terms from second's first", func() bool {
			ts := terms(t, log)
			return len(ts)-secondFrom(ts) >= alternating
		})
		if err := os.WriteFile(stop, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, done := range []<-chan result{done1, done2} {
			if r := waitExit(t, done); r.code != 1 {
				t.Errorf("a campaigner exited %d, want 1 (its command failed once stop existed); stderr %q", r.code, r.stderr)
			}
		}
		ts := terms(t, log)
		from := secondFrom(ts)
		var last int64
		for i, tm := range ts {
			f, err := strconv.ParseInt(tm[1], 10, 64)
			if err != nil || f <= last {
				t.Fatalf("terms %v: term %d has fence %q after %d", ts, i, tm[1], last)
			}
			last = f
			if i > from && tm[0] == ts[i-1][0] {
				t.Fatalf("terms %v: %s led twice in a row (terms %d and %d) after second's first term", ts[from:], tm[0], i-1, i)
			}
		}
		if l := showLease(c, "job"); l.Held {
			t.Errorf("after both campaigners ended: %+v, want released", l)
		}
	})
}

func TestLeaseElectAgainCampaignsAgainAfterLosingLeadership(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		log := filepath.Join(t.TempDir(), "fences")
		p, done := startElect(t, c, "job", "--ttl", "1s", "--again", "--",
			"sh", "-c", `echo "$FENCED_FENCE" >> "$0"; exec sleep 60`, log)
		waitFor(t, "the first term", func() bool { return len(fences(t, log)) == 1 })
		// Advancing fences ends every lease: the command gets SIGTERM and
		// fenced campaigns again, with a fence above the advance.
		c.ok("fence", "advance", "--by", "10", "--yes")
		waitFor(t, "the second term", func() bool { return len(fences(t, log)) == 2 })
		if got := fences(t, log); got[1] <= got[0]+10 {
			t.Fatalf("fences %v: the second term's is not above the advance", got)
		}
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r := waitExit(t, done)
		if r.code != 128+int(syscall.SIGTERM) {
			t.Errorf("exit %d, want %d (the forwarded SIGTERM ends the command and the campaign); stderr %q", r.code, 128+int(syscall.SIGTERM), r.stderr)
		}
		contains(t, "stderr", r.stderr, `lease "job" lost`)
		if len(fences(t, log)) != 2 {
			t.Errorf("fences %v, want no term after the signal", fences(t, log))
		}
		if l := showLease(c, "job"); l.Held {
			t.Errorf("after lease elect: %+v, want released", l)
		}
	})
}

func TestLeaseElectLosingLeadershipWithoutAgainEndsLikeLeaseRun(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "fenced.db"))
	log := filepath.Join(t.TempDir(), "fences")
	_, done := startElect(t, c, "job", "--ttl", "1s", "--", "sh", "-c", `echo "$FENCED_FENCE" >> "$0"; exec sleep 60`, log)
	waitFor(t, "the term", func() bool { return len(fences(t, log)) == 1 })
	c.ok("fence", "advance", "--by", "10", "--yes")
	r := waitExit(t, done)
	if r.code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit %d, want %d (sleep killed by SIGTERM); stderr %q", r.code, 128+int(syscall.SIGTERM), r.stderr)
	}
	if got := fences(t, log); len(got) != 1 {
		t.Errorf("fences %v, want one term", got)
	}
}

func TestLeaseElectInterruptedWhileWaitingRunsNothing(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "fenced.db")
	c := newCLI(t, "sqlite:"+db)
	c.ok("lease", "acquire", "job", "--owner", "other", "--ttl", "1m")
	marker := filepath.Join(t.TempDir(), "ran")
	p, done := startElect(t, c, "job", "--ttl", "1s", "--", "touch", marker)
	waitWaiting(t, db, "job", "elector", done)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := waitExit(t, done)
	if r.code != exitError || !strings.Contains(r.stderr, `interrupted while campaigning for lease "job"`) {
		t.Errorf("exit %d, stderr %q; want 1, interrupted while campaigning", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the command ran (stat: %v)", err)
	}
	if l := showLease(c, "job"); !l.Held || l.Owner != "other" {
		t.Errorf("lease %+v, want still held by other", l)
	}
}

func TestLeaseElectUsageErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "fenced.db"))
	c.fails(2, "lease", "elect", "job")
	c.fails(2, "lease", "elect", "job", "--")
	c.fails(2, "lease", "elect", "--", "true")
	c.fails(2, "lease", "elect", "job", "--grace", "-1s", "--", "true")
	c.fails(2, "lease", "elect", "job", "--ttl", "0", "--", "true")
}

// waitWaiting waits until owner's campaign for lease name is recorded as
// waiting in the SQLite database at path: the campaign has begun, so the
// process has taken its signals over (a SIGTERM sent before that would kill
// it by Go's default action instead). It fails the test if the process
// exits first or a minute passes.
func waitWaiting(t *testing.T, path, name, owner string, done <-chan result) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		err := db.QueryRow(`SELECT count(*) FROM fenced_lease_waiters WHERE name = ? AND owner = ?`, name, owner).Scan(&n)
		if err == nil && n > 0 {
			return
		}
		select {
		case r := <-done:
			t.Fatalf("lease elect exited before it was waiting: exit %d, stderr %q", r.code, r.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not recorded as waiting for lease %q after a minute (last read: %v)", owner, name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
