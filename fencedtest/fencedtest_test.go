package fencedtest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtest"
	"github.com/fenced/fenced/internal/test/testdb"
)

// failure runs fn with a testing.TB whose Fatalf ends fn, and returns the
// failure's message ("" when fn did not fail).
func failure(t *testing.T, fn func(tb testing.TB)) string {
	t.Helper()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r.msg
}

type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit() // as t.Fatalf ends its goroutine
}

// backends gives each subtest a fresh migrated database of each backend.
var backends = map[string]func(t *testing.T) *fenced.Client{
	"SQLite": func(t *testing.T) *fenced.Client { return fencedtest.NewSQLite(t, fenced.Config{}) },
	"PostgreSQL": func(t *testing.T) *fenced.Client {
		return fencedtest.NewPostgres(t, testdb.Postgres(t), fenced.Config{})
	},
	"MySQL": func(t *testing.T) *fenced.Client { return fencedtest.NewMySQL(t, testdb.MySQL(t), fenced.Config{}) },
}

type email struct {
	To string `json:"to"`
}

// The assertions find a committed job by kind, args, queue, priority and
// metadata, inside the enqueuing transaction too, and fail with a message
// that says what did not match; databases of each test are its own.
func TestRequireInserted(t *testing.T) {
	t.Parallel()
	for name, newClient := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := newClient(t)
			if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "email", Args: email{To: "ann"}, Queue: "mail",
				Priority: 2, Metadata: map[string]string{"tenant": "42"}, Tags: []string{"t:1", "t:2"}}); err != nil {
				t.Fatal(err)
			}
			two := 2
			j := fencedtest.RequireInserted(t, c, "email", &fencedtest.Match{Args: email{To: "ann"}, Queue: "mail",
				Priority: &two, State: fenced.JobQueued, Metadata: map[string]string{"tenant": "42"}, Tags: []string{"t:2"}})
			if j.Kind != "email" || j.Queue != "mail" {
				t.Fatalf("RequireInserted returned %+v", j)
			}
			fencedtest.RequireNotInserted(t, c, "email", &fencedtest.Match{Args: email{To: "bob"}})
			fencedtest.RequireNotInserted(t, c, "sms", nil)
			fencedtest.RequireNotInserted(t, c, "email", &fencedtest.Match{Tags: []string{"t:1", "t:3"}})

			if msg := failure(t, func(tb testing.TB) {
				fencedtest.RequireInserted(tb, c, "email", &fencedtest.Match{Args: map[string]string{"to": "bob"}})
			}); !strings.Contains(msg, `args`) || !strings.Contains(msg, "bob") {
				t.Fatalf("a mismatched RequireInserted failed with %q", msg)
			}
			if msg := failure(t, func(tb testing.TB) { fencedtest.RequireInserted(tb, c, "sms", nil) }); !strings.Contains(msg, `no job of kind "sms"`) {
				t.Fatalf("RequireInserted of no job failed with %q", msg)
			}
			if msg := failure(t, func(tb testing.TB) { fencedtest.RequireNotInserted(tb, c, "email", nil) }); !strings.Contains(msg, "was enqueued") {
				t.Fatalf("RequireNotInserted of an enqueued job failed with %q", msg)
			}

			// Inside the enqueuing transaction, before it commits.
			l, err := c.AcquireLease(ctx, "tx", "me", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			rollback := errors.New("roll back")
			err = c.LeaseTx(ctx, *l, func(tx fenced.Tx) error {
				if _, _, err := c.EnqueueTx(ctx, tx, fenced.EnqueueParams{Kind: "receipt", Args: map[string]int{"order": 7}}); err != nil {
					return err
				}
				fencedtest.RequireInsertedTx(t, c, tx, "receipt", &fencedtest.Match{Args: map[string]int{"order": 7}})
				fencedtest.RequireManyInsertedTx(t, c, tx, []fencedtest.Expected{
					{Kind: "email", Match: fencedtest.Match{Queue: "mail"}}, {Kind: "receipt"}})
				if msg := failure(t, func(tb testing.TB) { fencedtest.RequireNotInsertedTx(tb, c, tx, "receipt", nil) }); msg == "" {
					t.Error("RequireNotInsertedTx did not see the transaction's job")
				}
				return rollback
			})
			if !errors.Is(err, rollback) {
				t.Fatal(err)
			}
			fencedtest.RequireNotInserted(t, c, "receipt", nil) // rolled back

			// Many, in order.
			if _, err := c.EnqueueMany(ctx, nil, []fenced.EnqueueParams{{Kind: "sms"}, {Kind: "email", Args: email{To: "cy"}}}); err != nil {
				t.Fatal(err)
			}
			jobs := fencedtest.RequireManyInserted(t, c, []fencedtest.Expected{
				{Kind: "email", Match: fencedtest.Match{Args: email{To: "ann"}}}, {Kind: "sms"},
				{Kind: "email", Match: fencedtest.Match{Args: email{To: "cy"}}}})
			if len(jobs) != 3 || jobs[1].Kind != "sms" {
				t.Fatalf("RequireManyInserted returned %v", jobs)
			}
			if msg := failure(t, func(tb testing.TB) {
				fencedtest.RequireManyInserted(tb, c, []fencedtest.Expected{{Kind: "sms"}, {Kind: "email"}, {Kind: "email"}})
			}); !strings.Contains(msg, `want "sms"`) {
				t.Fatalf("RequireManyInserted out of order failed with %q", msg)
			}
			if msg := failure(t, func(tb testing.TB) {
				fencedtest.RequireManyInserted(tb, c, []fencedtest.Expected{{Kind: "email"}})
			}); !strings.Contains(msg, "2 jobs") || !strings.Contains(msg, "want 1") {
				t.Fatalf("RequireManyInserted of too few failed with %q", msg)
			}
		})
	}
}

// Work runs one attempt through a real worker: a success completes the job
// at its fence with the output, a failure is retried, a panic is recorded,
// and the client's middleware runs around the handler.
// A worker given its kind's policies runs the attempt under them: the
// kind's timeout ends it, and it is retried after the kind's policy.
func TestWorkerWithKindOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := backends["SQLite"](t)
	w := fencedtest.NewWorker(t, c, "slow", func(ctx context.Context, j *fenced.JobRun) error {
		<-ctx.Done()
		return ctx.Err()
	}, fenced.WorkerConfig{}).WithKindOptions(fenced.KindOptions{Timeout: 100 * time.Millisecond,
		Retry: fenced.RetryFunc(func(*fenced.Job, error) time.Duration { return time.Hour })})
	r := w.Work(ctx, t, fenced.EnqueueParams{})
	if r.End.Outcome != fenced.OutcomeRetry || !errors.Is(r.End.Err, fenced.ErrJobTimeout) ||
		r.Job.LastError != "job timed out after 100ms" || r.Job.RunAt.Sub(*r.Job.AttemptedAt) < time.Hour {
		t.Fatalf("timed out: %+v, job %+v", r.End, r.Job)
	}
}

func TestWorkerRunsOneJobThroughTheRealPath(t *testing.T) {
	t.Parallel()
	for name, newClient := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := newClient(t)
			w := fencedtest.NewWorker(t, c, "email", fenced.HandleArgs(func(ctx context.Context, j *fenced.JobRun, a email) error {
				switch a.To {
				case "":
					return errors.New("no address")
				case "panic":
					panic("bad address")
				}
				if err := j.Progress(ctx, fenced.Progress{Stage: "sent"}); err != nil { // a fenced write
					return err
				}
				j.SetOutput(map[string]any{"sent_to": a.To, "fence": j.Fence})
				return nil
			}), fenced.WorkerConfig{})

			ok := w.Work(ctx, t, fenced.EnqueueParams{Args: email{To: "ann"}})
			if ok.End.Outcome != fenced.OutcomeSucceeded || ok.Job.State != fenced.JobSucceeded || ok.Job.Fence != 1 ||
				!strings.Contains(string(ok.Job.Output), `"ann"`) {
				t.Fatalf("success: %+v, job %+v output %s", ok.End, ok.Job, ok.Job.Output)
			}
			failed := w.Work(ctx, t, fenced.EnqueueParams{Args: email{}, MaxAttempts: 3})
			if failed.End.Outcome != fenced.OutcomeRetry || failed.Job.State != fenced.JobQueued || failed.Job.LastError != "no address" {
				t.Fatalf("failure: %+v, job %+v", failed.End, failed.Job)
			}
			dead := w.Work(ctx, t, fenced.EnqueueParams{Args: email{To: "panic"}, MaxAttempts: 1})
			var p *fenced.PanicError
			if dead.End.Outcome != fenced.OutcomeFailed || !errors.As(dead.End.Err, &p) || dead.Job.State != fenced.JobFailed {
				t.Fatalf("panic: %+v, job %+v", dead.End, dead.Job)
			}
			// A job the code under test enqueued, found and run.
			if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "email", Queue: "app", Args: email{To: "bob"}}); err != nil {
				t.Fatal(err)
			}
			j := fencedtest.RequireInserted(t, c, "email", &fencedtest.Match{Queue: "app"})
			if r := w.WorkJob(ctx, t, j); r.Job.State != fenced.JobSucceeded {
				t.Fatalf("WorkJob: %+v", r.Job)
			}
		})
	}
}
