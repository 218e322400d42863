package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
	"github.com/fenced/fenced/internal/test/testdb"
)

// jobOutput is the --json form of a job.
type jobOutput struct {
	ID              int64           `json:"id"`
	Kind            string          `json:"kind"`
	Args            json.RawMessage `json:"args"`
	Queue           string          `json:"queue"`
	Priority        int             `json:"priority"`
	State           string          `json:"state"`
	Attempt         int             `json:"attempt"`
	MaxAttempts     int             `json:"max_attempts"`
	Fence           int64           `json:"fence"`
	Owner           string          `json:"owner"`
	RunAt           time.Time       `json:"run_at"`
	LeaseExpiresAt  *time.Time      `json:"lease_expires_at"`
	CancelRequested bool            `json:"cancel_requested"`
	Output          json.RawMessage `json:"output"`
	Error           string          `json:"error"`
	Progress        json.RawMessage `json:"progress"`
	IdempotencyKey  string          `json:"idempotency_key"`
	CreatedAt       time.Time       `json:"created_at"`
	AttemptedAt     *time.Time      `json:"attempted_at"`
	FinishedAt      *time.Time      `json:"finished_at"`
	Existing        *bool           `json:"existing"` // enqueue only
}

// attemptOutput is one attempt of "job show --json".
type attemptOutput struct {
	Attempt   int        `json:"attempt"`
	Fence     int64      `json:"fence"`
	Owner     string     `json:"owner"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at"`
	Outcome   string     `json:"outcome"`
	Error     string     `json:"error"`
}

// jobShowOutput is "job show --json".
type jobShowOutput struct {
	Job      jobOutput       `json:"job"`
	Attempts []attemptOutput `json:"attempts"`
}

// enqueue runs "job enqueue KIND args... --json".
func enqueue(c cli, kind string, args ...string) jobOutput {
	c.t.Helper()
	var j jobOutput
	c.json(&j, append([]string{"job", "enqueue", kind, "--json"}, args...)...)
	return j
}

// showJob runs "job show ID --json".
func showJob(c cli, id int64) jobShowOutput {
	c.t.Helper()
	var s jobShowOutput
	c.json(&s, "job", "show", strconv.FormatInt(id, 10), "--json")
	return s
}

// library opens the test's database through the library, to work jobs as
// a worker would.
func library(t *testing.T, c cli) *fenced.Client {
	t.Helper()
	ctx := context.Background()
	lib, err := fenced.Open(ctx, c.db, fenced.Config{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { lib.Close() })
	if _, err := lib.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return lib
}

// claim claims the one eligible job of queue as owner.
func claim(t *testing.T, lib *fenced.Client, queue, owner string) *fenced.Job {
	t.Helper()
	jobs, err := lib.ClaimJobs(context.Background(), queue, owner, 1, time.Minute)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim %s: %d jobs, %v; want 1", queue, len(jobs), err)
	}
	return jobs[0]
}

func jsonEqual(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %s: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want %s: %v", what, want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

func TestJobEnqueue(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		t.Run("Plain", func(t *testing.T) {
			j := enqueue(c, "email", "--args", `{"to": "ann"}`)
			if j.ID <= 0 || j.Kind != "email" || j.Queue != "default" || j.State != "queued" || j.Priority != 0 ||
				j.MaxAttempts != fenced.DefaultMaxAttempts || j.Attempt != 0 || j.Existing == nil || *j.Existing {
				t.Errorf("enqueue: %+v", j)
			}
			jsonEqual(t, "args", j.Args, `{"to": "ann"}`)
			if string(j.Output) != "null" || string(j.Progress) != "null" || j.LeaseExpiresAt != nil || j.AttemptedAt != nil || j.FinishedAt != nil {
				t.Errorf("enqueue: absent fields %+v, want null", j)
			}
			if j.RunAt.Location() != time.UTC || j.CreatedAt.Location() != time.UTC || time.Since(j.RunAt).Abs() > time.Minute {
				t.Errorf("enqueue: run_at %s, created_at %s; want about now, UTC", j.RunAt, j.CreatedAt)
			}
			if d := enqueue(c, "noargs"); string(d.Args) != "{}" {
				t.Errorf("enqueue without --args: args %s, want {}", d.Args)
			}
		})
		t.Run("WithOptions", func(t *testing.T) {
			j := enqueue(c, "report", "--queue", "nightly", "--priority", "7", "--max-attempts", "3", "--delay", "1h")
			if j.Queue != "nightly" || j.Priority != 7 || j.MaxAttempts != 3 {
				t.Errorf("enqueue with options: %+v", j)
			}
			if until := time.Until(j.RunAt); until < 50*time.Minute || until > 70*time.Minute {
				t.Errorf("--delay 1h: run_at in %s", until)
			}
			at := enqueue(c, "report", "--run-at", "2031-02-03T04:05:06+01:00")
			if want := time.Date(2031, 2, 3, 3, 5, 6, 0, time.UTC); !at.RunAt.Equal(want) || at.RunAt.Location() != time.UTC {
				t.Errorf("--run-at: run_at %s, want %s", at.RunAt, want)
			}
		})
		t.Run("IdempotencyKeyTwice", func(t *testing.T) {
			first := enqueue(c, "invoice", "--key", "invoice-42", "--args", `{"n": 1}`)
			again := enqueue(c, "invoice", "--key", "invoice-42", "--args", `{"n": 2}`)
			if *first.Existing || !*again.Existing || again.ID != first.ID || again.IdempotencyKey != "invoice-42" {
				t.Errorf("same key twice: first %+v, again %+v; want the same job, existing the second time", first, again)
			}
			jsonEqual(t, "args of the existing job", again.Args, `{"n": 1}`)
			out := c.ok("job", "enqueue", "invoice", "--key", "invoice-42")
			want := fmt.Sprintf(`job %d already exists with idempotency key "invoice-42"; nothing enqueued (kind "invoice", `, first.ID)
			if !strings.HasPrefix(out, want) {
				t.Errorf("enqueue under a used key printed %q, want it to start %q", out, want)
			}
		})
		t.Run("Unique", func(t *testing.T) {
			first := enqueue(c, "sync", "--args", `{"user": 7, "n": 1}`, "--unique-args-keys", "user", "--unique-period", "1h")
			again := enqueue(c, "sync", "--args", `{"user": 7, "n": 2}`, "--unique-args-keys", "user", "--unique-period", "1h")
			other := enqueue(c, "sync", "--args", `{"user": 8}`, "--unique-args-keys", "user", "--unique-period", "1h")
			if *first.Existing || !*again.Existing || again.ID != first.ID || *other.Existing || other.ID == first.ID {
				t.Errorf("unique by args keys: first %+v, again %+v, other %+v", first, again, other)
			}
			out := c.ok("job", "enqueue", "sync", "--args", `{"user": 7}`, "--unique-args-keys", "user", "--unique-period", "1h")
			want := fmt.Sprintf("job %d already exists and holds the unique slot; nothing enqueued (", first.ID)
			if !strings.HasPrefix(out, want) {
				t.Errorf("a unique repeat printed %q, want it to start %q", out, want)
			}
			// Unique by kind alone, by queue: another queue is another slot.
			a := enqueue(c, "tidy", "--unique", "--unique-by-queue", "--queue", "q1")
			b := enqueue(c, "tidy", "--unique", "--unique-by-queue", "--queue", "q2")
			if *a.Existing || *b.Existing || a.ID == b.ID {
				t.Errorf("unique by queue: %+v, %+v", a, b)
			}
			// A retry that would collide with a newer job fails, naming it.
			lib := library(t, c)
			u := []string{"--unique-by-args", "--unique-states", "queued,running", "--queue", "uniq"}
			old := enqueue(c, "pay", u...)
			j := claim(t, lib, "uniq", "w")
			if err := lib.FailJob(context.Background(), j.Ref(), "boom", 0, true); err != nil {
				t.Fatal(err)
			}
			newer := enqueue(c, "pay", u...)
			if *newer.Existing || newer.ID == old.ID {
				t.Fatalf("the failed job held its slot: %+v", newer)
			}
			contains(t, "retry", c.fails(1, "job", "retry", strconv.FormatInt(old.ID, 10)).stderr,
				fmt.Sprintf("job %d holds its unique slot", newer.ID))
		})
		t.Run("ArgsFromAFileOrStdin", func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "args.json")
			if err := os.WriteFile(file, []byte(`{"to": "bob", "n": [1, 2]}`), 0o600); err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, "--args-file", enqueue(c, "email", "--args-file", file).Args, `{"to": "bob", "n": [1, 2]}`)
			cmd := c.command(context.Background(), "job", "enqueue", "email", "--args-file", "-", "--json")
			cmd.Stdin = strings.NewReader(`{"to": "cy"}`)
			out, err := cmd.Output()
			var j jobOutput
			if err != nil || json.Unmarshal(out, &j) != nil {
				t.Fatalf("--args-file - : %v, %s", err, out)
			}
			jsonEqual(t, "--args-file -", j.Args, `{"to": "cy"}`)
			contains(t, "both", c.fails(2, "job", "enqueue", "email", "--args", "{}", "--args-file", file).stderr, "cannot be used together")
			c.fails(2, "job", "enqueue", "email", "--args-file", filepath.Join(t.TempDir(), "missing.json"))
			big := filepath.Join(t.TempDir(), "big.json")
			if err := os.WriteFile(big, []byte(`"`+strings.Repeat("x", fenced.MaxArgsBytes)+`"`), 0o600); err != nil {
				t.Fatal(err)
			}
			contains(t, "too large", c.fails(2, "job", "enqueue", "email", "--args-file", big).stderr, "the limit is")
		})
		t.Run("HumanOutput", func(t *testing.T) {
			out := c.ok("job", "enqueue", "sms", "--queue", "texts")
			contains(t, "enqueue", out, "enqueued job ")
			contains(t, "enqueue", out, `kind "sms", queue "texts"`)
			contains(t, "enqueue", out, "state queued")
		})
	})
}

// TestJobEnqueueRefusesDuplicateKeys: args that give a key twice in one
// object are refused (exit 2, saying which key) on every backend, since
// PostgreSQL would store {"b":1.10,"a":2,"b":3} as {"a":2,"b":3} and SQLite
// and MariaDB as written; args that are accepted read back as given.
func TestJobEnqueueRefusesDuplicateKeys(t *testing.T) {
	t.Parallel()
	for name, db := range map[string]func(testing.TB) string{
		"SQLite": testdb.SQLite, "PostgreSQL": testdb.Postgres, "MySQL": testdb.MySQL,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t, db(t))
			for _, args := range []string{`{"b":1.10,"a":2,"b":3}`, `{"a":[{"x":1,"\u0078":2}]}`} {
				r := c.fails(2, "job", "enqueue", "k", "--args", args)
				contains(t, "stderr", r.stderr, "args")
				contains(t, "stderr", r.stderr, "twice")
			}
			j := enqueue(c, "k", "--args", `{"b":1.10,"a":{"b":[{"b":1}]}}`)
			jsonEqual(t, "args", showJob(c, j.ID).Job.Args, `{"a":{"b":[{"b":1}]},"b":1.10}`)
			var all []jobOutput
			c.json(&all, "job", "ls", "--json")
			if len(all) != 1 {
				t.Errorf("after refused enqueues %d jobs exist, want 1", len(all))
			}
		})
	}
}

func TestJobShowAttempts(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		j := enqueue(c, "email", "--args", `{"to": "ann"}`, "--max-attempts", "3")
		if s := showJob(c, j.ID); s.Job.ID != j.ID || s.Attempts == nil || len(s.Attempts) != 0 {
			t.Errorf("show before any attempt: %+v, want the job and attempts []", s)
		}
		lib := library(t, c)
		ctx := context.Background()

		first := claim(t, lib, "default", "worker-1")
		if err := lib.FailJob(ctx, first.Ref(), "smtp: timeout", 0, false); err != nil {
			t.Fatalf("fail: %v", err)
		}
		second := claim(t, lib, "default", "worker-2")
		s := showJob(c, j.ID)
		if s.Job.State != "running" || s.Job.Owner != "worker-2" || s.Job.Fence != second.Fence || s.Job.LeaseExpiresAt == nil || len(s.Attempts) != 2 {
			t.Fatalf("show while running: %+v", s)
		}
		if a := s.Attempts[1]; a.Outcome != "running" || a.EndedAt != nil || a.Owner != "worker-2" {
			t.Errorf("running attempt: %+v, want outcome running, ended_at null", a)
		}
		out := c.ok("job", "show", strconv.FormatInt(j.ID, 10))
		contains(t, "show", out, "ATTEMPT")
		contains(t, "show", out, "smtp: timeout")
		contains(t, "show", out, "worker-2")
		if !showLine(out, "owner", "worker-2") || showLine(out, "last_owner", "") || !showLine(out, "run_at", "") {
			t.Errorf("show while running: want its owner and run_at:\n%s", out)
		}

		if err := lib.CompleteJob(ctx, second.Ref(), map[string]int{"sent": 1}); err != nil {
			t.Fatalf("complete: %v", err)
		}
		// Finished: the owner is the last attempt's, and the run time, a
		// schedule no attempt follows, is left out (as on the dashboard).
		out = c.ok("job", "show", strconv.FormatInt(j.ID, 10))
		if !showLine(out, "last_owner", "worker-2") || showLine(out, "owner", "") || showLine(out, "run_at", "") ||
			!showLine(out, "attempted_at", "") || !showLine(out, "finished_at", "") {
			t.Errorf("show after success: want last_owner, attempted_at and finished_at, no owner or run_at:\n%s", out)
		}
		s = showJob(c, j.ID)
		if s.Job.State != "succeeded" || s.Job.Attempt != 2 || s.Job.FinishedAt == nil {
			t.Errorf("show after success: %+v", s.Job)
		}
		jsonEqual(t, "output", s.Job.Output, `{"sent": 1}`)
		want := []attemptOutput{
			{Attempt: 1, Fence: first.Fence, Owner: "worker-1", Outcome: "retry", Error: "smtp: timeout"},
			{Attempt: 2, Fence: second.Fence, Owner: "worker-2", Outcome: "succeeded"},
		}
		if len(s.Attempts) != len(want) {
			t.Fatalf("attempts: %+v, want %+v", s.Attempts, want)
		}
		for i, a := range s.Attempts {
			if a.EndedAt == nil || a.StartedAt.IsZero() || a.StartedAt.Location() != time.UTC || a.EndedAt.Location() != time.UTC {
				t.Errorf("attempt %d: %+v, want start and end times in UTC", i+1, a)
			}
			a.StartedAt, a.EndedAt = time.Time{}, nil
			if a != want[i] {
				t.Errorf("attempt %d: %+v, want %+v", i+1, a, want[i])
			}
		}
	})
}

func TestJobList(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("migrate") // the commands that only read do not migrate
		if out := c.ok("job", "ls", "--json"); out != "[]\n" {
			t.Errorf("ls --json with no jobs: %q, want []", out)
		}
		a := enqueue(c, "email")
		b := enqueue(c, "sms", "--queue", "texts")
		d := enqueue(c, "email")
		c.ok("job", "cancel", strconv.FormatInt(d.ID, 10))
		// b's attempt fails and it waits to retry.
		lib := library(t, c)
		if err := lib.FailJob(context.Background(), claim(t, lib, "texts", "w").Ref(), "no signal", time.Hour, false); err != nil {
			t.Fatal(err)
		}

		ids := func(args ...string) []int64 {
			t.Helper()
			var jobs []jobOutput
			c.json(&jobs, append([]string{"job", "ls", "--json"}, args...)...)
			out := []int64{}
			for _, j := range jobs {
				out = append(out, j.ID)
			}
			return out
		}
		for _, tc := range []struct {
			args []string
			want []int64
		}{
			{nil, []int64{a.ID, b.ID, d.ID}},
			{[]string{"--state", "cancelled"}, []int64{d.ID}},
			{[]string{"--state", "queued"}, []int64{a.ID, b.ID}},
			{[]string{"--queue", "texts"}, []int64{b.ID}},
			{[]string{"--kind", "email"}, []int64{a.ID, d.ID}},
			{[]string{"--kind", "email", "--state", "queued"}, []int64{a.ID}},
			{[]string{"--limit", "1"}, []int64{a.ID}},
			{[]string{"--after", strconv.FormatInt(a.ID, 10)}, []int64{b.ID, d.ID}},
			{[]string{"--limit", "1", "--after", strconv.FormatInt(a.ID, 10)}, []int64{b.ID}},
			{[]string{"--queue", "nobody"}, []int64{}},
			{[]string{"--newest"}, []int64{d.ID, b.ID, a.ID}},
			{[]string{"--newest", "--limit", "1"}, []int64{d.ID}},
			{[]string{"--newest", "--before", strconv.FormatInt(d.ID, 10)}, []int64{b.ID, a.ID}},
			{[]string{"--newest", "--kind", "email"}, []int64{d.ID, a.ID}},
			{[]string{"--failing"}, []int64{b.ID}},
			{[]string{"--failing", "--state", "queued"}, []int64{b.ID}},
			{[]string{"--failing", "--state", "cancelled"}, []int64{}},
		} {
			if got := ids(tc.args...); !equalIDs(got, tc.want) {
				t.Errorf("ls %v: %v, want %v", tc.args, got, tc.want)
			}
		}
		var jobs []jobOutput
		c.json(&jobs, "job", "list", "--queue", "texts", "--json")
		if len(jobs) != 1 || jobs[0].Kind != "sms" || jobs[0].Queue != "texts" || string(jobs[0].Args) != "{}" {
			t.Errorf("list --queue texts: %+v", jobs)
		}

		r := c.run("job", "ls", "--limit", "2")
		if r.code != 0 {
			t.Fatalf("ls: exit %d, stderr %q", r.code, r.stderr)
		}
		contains(t, "ls", r.stdout, "ID")
		contains(t, "ls", r.stdout, "RUN_AT")
		contains(t, "ls", r.stdout, "texts")
		contains(t, "ls stderr", r.stderr, "--after "+strconv.FormatInt(b.ID, 10))
		contains(t, "ls --newest stderr", c.run("job", "ls", "--newest", "--limit", "2").stderr, "--before "+strconv.FormatInt(b.ID, 10))
		contains(t, "--newest --after", c.fails(2, "job", "ls", "--newest", "--after", "1").stderr, "give --before")
		contains(t, "--before", c.fails(2, "job", "ls", "--before", "1").stderr, "with --newest")
	})
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestJobCancel(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		t.Run("QueuedIsCancelled", func(t *testing.T) {
			j := enqueue(c, "email", "--queue", "cq")
			out := c.ok("job", "cancel", strconv.FormatInt(j.ID, 10))
			contains(t, "cancel", out, "cancelled job "+strconv.FormatInt(j.ID, 10))
			if s := showJob(c, j.ID); s.Job.State != "cancelled" || s.Job.FinishedAt == nil || s.Job.CancelRequested {
				t.Errorf("after cancel: %+v, want cancelled", s.Job)
			}
		})
		t.Run("RunningIsAskedToStop", func(t *testing.T) {
			j := enqueue(c, "email", "--queue", "cr")
			claim(t, library(t, c), "cr", "worker-1")
			var got jobOutput
			c.json(&got, "job", "cancel", "--json", strconv.FormatInt(j.ID, 10))
			if got.State != "running" || !got.CancelRequested || got.Owner != "worker-1" {
				t.Errorf("cancel running --json: %+v, want running with cancel_requested", got)
			}
			out := c.ok("job", "cancel", strconv.FormatInt(j.ID, 10))
			contains(t, "cancel running", out, "cancel requested for job")
			contains(t, "show", c.ok("job", "show", strconv.FormatInt(j.ID, 10)), "running (cancel requested)")
		})
		t.Run("FinishedFailsExit1", func(t *testing.T) {
			j := enqueue(c, "email", "--queue", "cf")
			lib := library(t, c)
			if err := lib.CompleteJob(context.Background(), claim(t, lib, "cf", "worker-1").Ref(), nil); err != nil {
				t.Fatalf("complete: %v", err)
			}
			r := c.fails(1, "job", "cancel", strconv.FormatInt(j.ID, 10))
			contains(t, "stderr", r.stderr, "already finished")
			contains(t, "stderr", r.stderr, "succeeded")
			if s := showJob(c, j.ID); s.Job.State != "succeeded" {
				t.Errorf("after refused cancel: %+v, want succeeded", s.Job)
			}
		})
	})
}

func TestJobRetry(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		j := enqueue(c, "email", "--max-attempts", "1")
		r := c.fails(1, "job", "retry", strconv.FormatInt(j.ID, 10))
		contains(t, "retry of a queued job", r.stderr, "not failed or cancelled")

		lib := library(t, c)
		if err := lib.FailJob(context.Background(), claim(t, lib, "default", "worker-1").Ref(), "boom", 0, false); err != nil {
			t.Fatalf("fail: %v", err)
		}
		if s := showJob(c, j.ID); s.Job.State != "failed" || s.Job.Error != "boom" {
			t.Fatalf("after its only attempt failed: %+v, want failed", s.Job)
		}
		var got jobOutput
		c.json(&got, "job", "retry", strconv.FormatInt(j.ID, 10), "--json")
		if got.State != "queued" || got.MaxAttempts != 2 || got.FinishedAt != nil {
			t.Errorf("retry --json: %+v, want queued with one more attempt", got)
		}
		again := claim(t, lib, "default", "worker-2")
		if again.ID != j.ID || again.Attempt != 2 {
			t.Errorf("claim after retry: job %d attempt %d, want job %d attempt 2", again.ID, again.Attempt, j.ID)
		}
		if err := lib.FailJob(context.Background(), again.Ref(), "again", 0, true); err != nil {
			t.Fatalf("fail: %v", err)
		}
		out := c.ok("job", "retry", strconv.FormatInt(j.ID, 10))
		contains(t, "retry", out, "queued job "+strconv.FormatInt(j.ID, 10)+" again")
	})
}

// TestJobDelete: a job is deleted in any state; the worker of a deleted
// running attempt can end nothing; a missing job exits 5.
func TestJobDelete(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		queued := enqueue(c, "email")
		out := c.ok("job", "delete", strconv.FormatInt(queued.ID, 10))
		contains(t, "delete", out, "deleted job "+strconv.FormatInt(queued.ID, 10))
		c.fails(5, "job", "show", strconv.FormatInt(queued.ID, 10))
		c.fails(5, "job", "delete", strconv.FormatInt(queued.ID, 10))

		running := enqueue(c, "email")
		lib := library(t, c)
		j := claim(t, lib, "default", "worker-1")
		var got struct {
			ID      int64 `json:"id"`
			Deleted bool  `json:"deleted"`
		}
		c.json(&got, "job", "delete", "--json", strconv.FormatInt(running.ID, 10))
		if got.ID != running.ID || !got.Deleted {
			t.Errorf("delete --json = %+v", got)
		}
		if err := lib.CompleteJob(context.Background(), j.Ref(), nil); !errors.Is(err, fenced.ErrNotFound) {
			t.Errorf("completing a deleted running job: %v, want ErrNotFound", err)
		}
	})
}

func TestJobCounts(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("migrate") // the commands that only read do not migrate
		if out := c.ok("job", "counts", "--json"); out != "[]\n" {
			t.Errorf("counts --json with no jobs: %q, want []", out)
		}
		enqueue(c, "a")
		enqueue(c, "a")
		x := enqueue(c, "b", "--queue", "other")
		c.ok("job", "cancel", strconv.FormatInt(x.ID, 10))
		var got []wire.QueueCounts
		c.json(&got, "job", "stats", "--json")
		want := []wire.QueueCounts{
			{Queue: "default", Queued: 2, Total: 2},
			{Queue: "other", Cancelled: 1, Total: 1},
		}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("counts: %+v, want %+v", got, want)
		}
		out := c.ok("job", "counts")
		contains(t, "counts", out, "CANCELLED")
		contains(t, "counts", out, "other")
	})
}

func TestJobFlagsBeforeOrAfterArguments(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		var before, after jobOutput
		c.json(&before, "job", "enqueue", "--queue", "q", "--json", "--priority", "2", "kind-a", "--args", `{"x": 1}`)
		c.json(&after, "job", "enqueue", "kind-b", "--queue", "q", "--priority=2", "--json")
		if before.Kind != "kind-a" || before.Priority != 2 || before.Queue != "q" || after.Kind != "kind-b" || after.Priority != 2 {
			t.Errorf("enqueue with flags around KIND: %+v, %+v", before, after)
		}
		id := strconv.FormatInt(before.ID, 10)
		var s jobShowOutput
		c.json(&s, "job", "show", "--json", id)
		if s.Job.ID != before.ID {
			t.Errorf("show --json ID: %+v", s.Job)
		}
		noDB := c
		noDB.db = ""
		noDB.ok("job", "show", id, "--db", c.db)
		noDB.ok("job", "--db", c.db, "cancel", id)
		var cancelled jobOutput
		c.json(&cancelled, "job", "retry", "--json", id)
		if cancelled.State != "queued" {
			t.Errorf("retry after cancel: %+v", cancelled)
		}
	})
}

func TestJobBadInputExit2(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.db = "sqlite:" + t.TempDir() + "/fenced.db"
	j := enqueue(c, "email")
	id := strconv.FormatInt(j.ID, 10)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ArgsNotJSON", []string{"job", "enqueue", "email", "--args", "{nope"}, "args"},
		{"ArgsEmpty", []string{"job", "enqueue", "email", "--args", ""}, "args"},
		{"NegativePriority", []string{"job", "enqueue", "email", "--priority", "-1"}, "priority"},
		{"PriorityTooLarge", []string{"job", "enqueue", "email", "--priority", "10001"}, "priority"},
		{"PriorityNotANumber", []string{"job", "enqueue", "email", "--priority", "high"}, "priority"},
		{"BadQueue", []string{"job", "enqueue", "email", "--queue", "no spaces"}, "queue"},
		{"QueueStartingWithDash", []string{"job", "enqueue", "email", "--queue", "-x"}, "queue"},
		{"EmptyQueue", []string{"job", "enqueue", "email", "--queue", ""}, "--queue"},
		{"RunAtNotRFC3339", []string{"job", "enqueue", "email", "--run-at", "tomorrow"}, "RFC 3339"},
		{"RunAtAndDelay", []string{"job", "enqueue", "email", "--run-at", "2030-01-01T00:00:00Z", "--delay", "1m"}, "--delay"},
		{"NegativeDelay", []string{"job", "enqueue", "email", "--delay", "-1s"}, "delay"},
		{"ZeroMaxAttempts", []string{"job", "enqueue", "email", "--max-attempts", "0"}, "max-attempts"},
		{"NegativeMaxAttempts", []string{"job", "enqueue", "email", "--max-attempts", "-3"}, "--max-attempts"},
		{"EmptyKey", []string{"job", "enqueue", "email", "--key", ""}, "--key"},
		{"UniquePeriodTooShort", []string{"job", "enqueue", "email", "--unique-period", "100ms"}, "--unique-period"},
		{"UniquePeriodZero", []string{"job", "enqueue", "email", "--unique-period", "0s"}, "--unique-period"},
		{"UniqueStatesWithoutRunning", []string{"job", "enqueue", "email", "--unique-states", "queued"}, "--unique-states: must include queued and running"},
		{"UniqueStatesUnknown", []string{"job", "enqueue", "email", "--unique-states", "queued,running,done"}, "--unique-states"},
		{"UniqueArgsKeyEmpty", []string{"job", "enqueue", "email", "--unique-args-keys", "a,,b"}, "--unique-args-keys"},
		{"EmptyKind", []string{"job", "enqueue", ""}, "kind"},
		{"MissingKind", []string{"job", "enqueue"}, "KIND"},
		{"TwoKinds", []string{"job", "enqueue", "a", "b"}, "KIND"},
		{"ShowIDNotANumber", []string{"job", "show", "abc"}, `"abc" is not a positive integer`},
		{"ShowIDZero", []string{"job", "show", "0"}, `"0" is not a positive integer`},
		{"ShowIDNegative", []string{"job", "show", "-1"}, "-1"},
		{"ShowMissingID", []string{"job", "show"}, "ID"},
		{"CancelIDNotANumber", []string{"job", "cancel", "abc"}, "job id"},
		{"CancelIDZero", []string{"job", "cancel", "0"}, "job id"},
		{"RetryIDNotANumber", []string{"job", "retry", "1.5"}, "job id"},
		{"RetryTwoIDs", []string{"job", "retry", id, id}, "ID"},
		{"ListBadState", []string{"job", "ls", "--state", "done"}, "state"},
		{"ListBadQueue", []string{"job", "ls", "--queue", "a/b"}, "queue"},
		{"ListZeroLimit", []string{"job", "ls", "--limit", "0"}, "limit"},
		{"ListLimitTooLarge", []string{"job", "ls", "--limit", "1001"}, "limit"},
		{"ListNegativeAfter", []string{"job", "ls", "--after", "-1"}, "after"},
		{"ListAfterNotANumber", []string{"job", "ls", "--after", "abc"}, "after"},
		{"ListExtraArgument", []string{"job", "ls", "x"}, "received 1"},
		{"CountsExtraArgument", []string{"job", "counts", "x"}, "received 1"},
		{"UnknownSubcommand", []string{"job", "enqeue", "x"}, "enqueue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.fails(2, tc.args...)
			contains(t, "stderr", r.stderr, tc.want)
		})
	}
	var all []jobOutput
	c.json(&all, "job", "ls", "--json")
	if len(all) != 1 || all[0].State != "queued" {
		t.Errorf("after rejected commands: %+v, want the one queued job", all)
	}
}

func TestJobNotFoundExit5(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("migrate") // the commands that only read do not migrate
		for _, cmd := range []string{"show", "cancel", "retry"} {
			r := c.fails(5, "job", cmd, "4242")
			contains(t, "stderr", r.stderr, "job 4242 not found")
		}
	})
}

func TestJobHelp(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	contains(t, "fenced --help", c.ok("--help"), "job")
	for _, sub := range []string{"enqueue", "show", "ls", "cancel", "retry", "counts", "slots"} {
		contains(t, "job "+sub+" --help", c.ok("job", sub, "--help"), "Examples:")
	}
	for _, sub := range []string{"cancel", "retry"} {
		contains(t, "job "+sub+" --help", c.ok("job", sub, "--help"), "exit 1")
	}
	r := c.run("job")
	if r.code != 2 || !strings.Contains(r.stderr, "Usage:") {
		t.Errorf("bare fenced job: exit %d, stderr %q; want usage, exit 2", r.code, r.stderr)
	}
}

// JSON that does not parse is refused with the reason and the line and
// column where it stops being JSON, before the database is even created.
func TestEnqueueArgsNotJSONSaysWhere(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	r := c.fails(2, "job", "enqueue", "k", "--args", "{\n  \"to\": \"a@example.com\",\n}")
	contains(t, "refusal", r.stderr,
		"fenced: invalid --args: is not valid JSON: invalid character '}' looking for beginning of object key string at line 3, column 1")
	r = c.fails(2, "job", "enqueue", "k", "--args", `{"to": [1, 2}`)
	contains(t, "refusal", r.stderr, "is not valid JSON: invalid character '}' after array element at line 1, column 13")
	contains(t, "job ls after the refusals", c.fails(1, "job", "ls").stderr, "does not exist")
}

// showLine reports whether "job show" output has the line "field: value"
// (any value when value is "").
func showLine(out, field, value string) bool {
	for _, l := range strings.Split(out, "\n") {
		f, v, ok := strings.Cut(l, ":")
		if ok && f == field && (value == "" || strings.TrimSpace(v) == value) {
			return true
		}
	}
	return false
}
