package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/logbuf"

	"github.com/fenced/fenced/internal/test/testdb"
)

// shownJob is what "job show --json" prints, read by these tests.
type shownJob struct {
	Job struct {
		ID      int64           `json:"id"`
		State   string          `json:"state"`
		Attempt int             `json:"attempt"`
		Fence   int64           `json:"fence"`
		Owner   string          `json:"owner"`
		Output  json.RawMessage `json:"output"`
		Error   string          `json:"error"`
	} `json:"job"`
	Attempts []struct {
		Outcome string `json:"outcome"`
		Error   string `json:"error"`
	} `json:"attempts"`
}

func workedJob(c cli, id int64) shownJob {
	c.t.Helper()
	var j shownJob
	c.json(&j, "job", "show", fmt.Sprint(id), "--json")
	return j
}

// enqueueWork enqueues a job with extra flags and returns its id.
func enqueueWork(c cli, kind, args string, flags ...string) int64 {
	c.t.Helper()
	var e struct {
		ID int64 `json:"id"`
	}
	c.json(&e, append([]string{"job", "enqueue", kind, "--args", args, "--json"}, flags...)...)
	return e.ID
}

// workingJob starts "job work" with args in the background; stop it with
// its process's Signal, then wait for its stderr with the returned func.
func workingJob(c cli, args ...string) (*os.Process, func() (int, string)) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := c.command(ctx, append([]string{"job", "work"}, args...)...)
	var stderr logbuf.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cancel(); cmd.Wait() })
	return cmd.Process, func() (int, string) {
		cmd.Wait()
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
}

// The command of a job gets its args on stdin and the job in its
// environment; exit 0 with JSON on stdout completes the attempt with it as
// the output, and jobs of other kinds stay queued.
func TestJobWorkCompletesWithStdout(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		other := enqueueWork(c, "other", `{}`)
		id := enqueueWork(c, "echo", `{"n": 2}`, "--queue", "q")
		script := `read -r args; printf '{"stdin": %s, "env_args": %s, "id": %s, "fence": %s, "attempt": %s, "max": %s, "kind": "%s", "queue": "%s", "owner": "%s"}' ` +
			`"$args" "$FENCED_JOB_ARGS" "$FENCED_JOB_ID" "$FENCED_FENCE" "$FENCED_ATTEMPT" "$FENCED_MAX_ATTEMPTS" "$FENCED_JOB_KIND" "$FENCED_JOB_QUEUE" "$FENCED_OWNER"`
		r := c.run("job", "work", "echo", "other-kind-with-no-jobs", "--queue", "q", "--owner", "w1", "--max-jobs", "1", "--", "sh", "-c", script)
		if r.code != 0 || !strings.Contains(r.stderr, "succeeded 1, failed 0") {
			t.Fatalf("job work: exit %d\nstderr: %s", r.code, r.stderr)
		}
		j := workedJob(c, id)
		var out map[string]any
		json.Unmarshal(j.Job.Output, &out)
		want := map[string]any{"stdin": map[string]any{"n": 2.0}, "env_args": map[string]any{"n": 2.0}, "id": float64(id),
			"fence": float64(j.Job.Fence), "attempt": 1.0, "max": 20.0, "kind": "echo", "queue": "q", "owner": "w1"}
		if j.Job.State != "succeeded" || j.Job.Owner != "w1" || !reflect.DeepEqual(out, want) {
			t.Fatalf("job = %+v output %s, want succeeded with %v", j.Job, j.Job.Output, want)
		}
		if o := workedJob(c, other); o.Job.State != "queued" || o.Job.Attempt != 0 {
			t.Fatalf("the job of another kind = %+v, want it never claimed", o.Job)
		}
	})
}

// A non-zero exit fails the attempt with the status and stderr's tail (and
// it is retried); exit 0 with stdout that is not JSON fails it for good,
// saying where; exit 0 with nothing on stdout succeeds with no output; a
// command that cannot be started fails its job for good.
func TestJobWorkFailures(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	failing := enqueueWork(c, "fails", `{}`, "--max-attempts", "2")
	notJSON := enqueueWork(c, "prints", `{}`)
	quiet := enqueueWork(c, "quiet", `{}`)
	script := `case "$FENCED_JOB_KIND" in
fails) echo "lots of log" >&2; echo "disk full on attempt $FENCED_ATTEMPT" >&2; exit 3;;
prints) echo "done: {not json"; exit 0;;
quiet) exit 0;;
esac`
	r := c.run("job", "work", "fails", "prints", "quiet", "--max-jobs", "4", "--", "sh", "-c", script)
	if r.code != 0 || !strings.Contains(r.stderr, "disk full on attempt 1") {
		t.Fatalf("job work: exit %d\nstderr: %s", r.code, r.stderr)
	}
	j := workedJob(c, failing)
	if j.Job.State != "failed" || j.Job.Attempt != 2 || j.Job.Error != "exit status 3: lots of log\ndisk full on attempt 2" ||
		len(j.Attempts) != 2 || j.Attempts[0].Outcome != "retry" || j.Attempts[0].Error != "exit status 3: lots of log\ndisk full on attempt 1" {
		t.Fatalf("failing job = %+v, attempts %+v", j.Job, j.Attempts)
	}
	j = workedJob(c, notJSON)
	if j.Job.State != "failed" || j.Job.Attempt != 1 ||
		j.Job.Error != "exit status 0, but stdout is not JSON: invalid character 'd' looking for beginning of value at line 1, column 1" {
		t.Fatalf("job printing no JSON = %+v, want failed for good at its first attempt saying where", j.Job)
	}
	j = workedJob(c, quiet)
	if j.Job.State != "succeeded" || string(j.Job.Output) != "null" {
		t.Fatalf("quiet job = %+v output %s, want succeeded with no output", j.Job, j.Job.Output)
	}

	missing := enqueueWork(c, "k", `{}`)
	r = c.run("job", "work", "k", "--max-jobs", "1", "--", filepath.Join(c.dir, "no-such-program"))
	if j := workedJob(c, missing); r.code != 0 || j.Job.State != "failed" || j.Job.Attempt != 1 || !strings.Contains(j.Job.Error, "no-such-program") {
		t.Fatalf("job work of a missing program: exit %d, job %+v\nstderr: %s", r.code, j.Job, r.stderr)
	}
}

// Once the attempt's lease is lost (here a fence advance supersedes it),
// the command gets SIGTERM, and though it then exits 0 with JSON, nothing
// is written for its stale attempt: the job is not completed.
func TestJobWorkLostLeaseKillsTheCommandAndWritesNothing(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	id := enqueueWork(c, "long", `{}`)
	started, termed := filepath.Join(c.dir, "started"), filepath.Join(c.dir, "termed")
	script := fmt.Sprintf(`trap 'echo "$FENCED_FENCE" > %s; echo "{\"late\": true}"; exit 0' TERM
touch %s
while :; do sleep 0.05; done`, termed, started)
	proc, wait := workingJob(c, "long", "--ttl", "1500ms", "--", "sh", "-c", script)
	waitFile(t, started)
	before := workedJob(c, id)
	c.ok("fence", "advance", "--by", "100", "--yes")
	waitFile(t, termed)
	got, _ := os.ReadFile(termed)
	if strings.TrimSpace(string(got)) != fmt.Sprint(before.Job.Fence) {
		t.Fatalf("the command's fence %q, want %d", got, before.Job.Fence)
	}
	proc.Signal(syscall.SIGTERM)
	code, stderr := wait()
	if code != 0 || !strings.Contains(stderr, "lost 1") || !strings.Contains(stderr, "succeeded 0") {
		t.Fatalf("job work: exit %d\nstderr: %s", code, stderr)
	}
	j := workedJob(c, id)
	if j.Job.State == "succeeded" || len(j.Job.Output) > 0 && string(j.Job.Output) != "null" || j.Job.Fence != before.Job.Fence+100 {
		t.Fatalf("after the lost attempt: %+v output %s, want it not completed, its fence advanced by 100", j.Job, j.Job.Output)
	}
}

// SIGTERM stops the worker gracefully: it claims nothing more and lets the
// running command finish, whose job succeeds; past --shutdown-timeout a
// command still running gets SIGTERM and its attempt is given back, not
// counted.
func TestJobWorkStopsGracefullyOnSIGTERM(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	first := enqueueWork(c, "slow", `{}`)
	started, release := filepath.Join(c.dir, "started"), filepath.Join(c.dir, "release")
	script := fmt.Sprintf(`touch %s; while [ ! -e %s ]; do sleep 0.05; done; echo '{"finished": true}'`, started, release)
	proc, wait := workingJob(c, "slow", "--", "sh", "-c", script)
	waitFile(t, started)
	second := enqueueWork(c, "slow", `{}`)
	proc.Signal(syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond) // the command is not interrupted by fenced's signal
	os.WriteFile(release, nil, 0o644)
	code, stderr := wait()
	if code != 0 || !strings.Contains(stderr, "claiming no more jobs") || !strings.Contains(stderr, "claimed 1, succeeded 1") {
		t.Fatalf("job work: exit %d\nstderr: %s", code, stderr)
	}
	if j := workedJob(c, first); j.Job.State != "succeeded" || !bytes.Equal(j.Job.Output, []byte(`{"finished": true}`)) && string(j.Job.Output) != `{"finished":true}` {
		t.Fatalf("the running job = %+v output %s, want it finished", j.Job, j.Job.Output)
	}
	if j := workedJob(c, second); j.Job.State != "queued" || j.Job.Attempt != 0 {
		t.Fatalf("the job enqueued after = %+v, want it left queued", j.Job)
	}

	// A command that outlives --shutdown-timeout.
	os.Remove(started)
	termed := filepath.Join(c.dir, "termed")
	script = fmt.Sprintf(`trap 'touch %s; exit 1' TERM; touch %s; while :; do sleep 0.05; done`, termed, started)
	proc, wait = workingJob(c, "slow", "--shutdown-timeout", "300ms", "--", "sh", "-c", script)
	waitFile(t, started)
	proc.Signal(syscall.SIGTERM)
	code, stderr = wait()
	if _, err := os.Stat(termed); code != 0 || err != nil || !strings.Contains(stderr, "claimed 1, succeeded 0, failed 0, retried 0") {
		t.Fatalf("job work past its shutdown timeout: exit %d, the command termed: %v\nstderr: %s", code, err, stderr)
	}
	if j := workedJob(c, second); j.Job.State != "queued" || len(j.Attempts) != 1 || j.Attempts[0].Outcome != "snoozed" {
		t.Fatalf("the job given back = %+v, attempts %+v, want it queued again, its attempt snoozed (not counted)", j.Job, j.Attempts)
	}
}

// Bad input is refused before the database is opened.
func TestJobWorkRefusesBadInput(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "f.db"))
	for _, args := range [][]string{
		{"job", "work"},
		{"job", "work", "k"},
		{"job", "work", "k", "--"},
		{"job", "work", "--", "true"},
		{"job", "work", "k", "--concurrency", "0", "--", "true"},
		{"job", "work", "k", "--queue", "no spaces", "--", "true"},
		{"job", "work", "k", "--ttl", "0", "--", "true"},
		{"job", "work", "k", "--max-jobs", "-1", "--", "true"},
	} {
		c.fails(2, args...)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "f.db")); !os.IsNotExist(err) {
		t.Errorf("bad input created the database (stat: %v)", err)
	}
}

// A worker paused past its attempt's lease (SIGSTOP) while recovery took
// the job back and another worker completed it: once it runs again, the
// end it writes for its stale attempt is refused by the fence, and the
// job keeps the other worker's output.
func TestJobWorkStaleAttemptOfAPausedWorkerIsRefused(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	s := c.serve() // its maintenance recovers the expired attempt
	id := enqueueWork(c, "k", `{}`)
	started, release, done := filepath.Join(c.dir, "started"), filepath.Join(c.dir, "release"), filepath.Join(c.dir, "done")
	script := fmt.Sprintf(`if [ "$FENCED_OWNER" = B ]; then echo '{"by": "B"}'; exit 0; fi
touch %s; while [ ! -e %s ]; do sleep 0.05; done; echo '{"by": "A"}'; touch %s`, started, release, done)
	a, wait := workingJob(c, "k", "--owner", "A", "--ttl", "1s", "--", "sh", "-c", script)
	waitFile(t, started)
	if err := a.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	r := c.run("job", "work", "k", "--owner", "B", "--max-jobs", "1", "--", "sh", "-c", script)
	if r.code != 0 || !strings.Contains(r.stderr, "succeeded 1") {
		t.Fatalf("worker B: exit %d\nstderr: %s", r.code, r.stderr)
	}
	// A's command (in a process group of its own, not paused) finishes,
	// printing A's output; then A runs again and is stopped, which writes
	// the end of its attempt before it exits.
	os.WriteFile(release, nil, 0o644)
	waitFile(t, done)
	a.Signal(syscall.SIGCONT)
	a.Signal(syscall.SIGTERM)
	code, stderr := wait()
	if code != 0 || !strings.Contains(stderr, "claimed 1, succeeded 0, failed 0") ||
		!strings.Contains(stderr, "lost 1") && !strings.Contains(stderr, "stale 1") {
		t.Fatalf("worker A: exit %d\nstderr: %s", code, stderr)
	}
	t.Logf("worker A: %s", stderr)
	j := workedJob(c, id)
	if j.Job.State != "succeeded" || j.Job.Owner != "B" || string(j.Job.Output) != `{"by": "B"}` && string(j.Job.Output) != `{"by":"B"}` ||
		len(j.Attempts) != 2 || j.Attempts[0].Outcome != "lost" || j.Attempts[1].Outcome != "succeeded" {
		t.Fatalf("job = %+v output %s attempts %+v, want B's completion to stand", j.Job, j.Job.Output, j.Attempts)
	}
	s.stop()
}
