package drivertest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runEnqueueBulk: a bulk enqueue stores every job as EnqueueMany would
// (fields, defaults, input order, runnable at once by the database clock),
// takes run times, delays and idempotency keys (counting only the jobs it
// inserted), writes inside the caller's transaction only when it commits,
// and writes nothing for a batch with one bad job.
func runEnqueueBulk(t *testing.T, b Backend) {
	t.Run("StoresEveryJobInInputOrder", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		var ps []fenced.EnqueueParams
		for i := range 60 {
			p := fenced.EnqueueParams{Kind: []string{"a", "b", "c"}[i%3], Args: map[string]int{"i": i}}
			switch i % 4 {
			case 1:
				p.Queue, p.Priority, p.MaxAttempts = "bulk", 2, 3
			case 2:
				p.ConcurrencyKey = "ck"
			case 3:
				p.SequenceKey, p.SequenceContinueOnFailed = "sk", true
			}
			ps = append(ps, p)
		}
		before := time.Now()
		n, err := e.c.EnqueueBulk(ctx(t), nil, ps)
		wantNoErr(t, err, "enqueue bulk")
		if n != len(ps) {
			t.Fatalf("enqueued %d, want %d", n, len(ps))
		}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{Limit: 100})
		wantNoErr(t, err, "list")
		if len(jobs) != len(ps) {
			t.Fatalf("%d jobs exist, want %d", len(jobs), len(ps))
		}
		for i, j := range jobs {
			p := ps[i]
			var args struct{ I int }
			if err := json.Unmarshal(j.Args, &args); err != nil || args.I != i {
				t.Fatalf("job %d has args %s: not in input order", i, j.Args)
			}
			wantQueue, wantMax := p.Queue, p.MaxAttempts
			if wantQueue == "" {
				wantQueue, wantMax = fenced.DefaultQueue, fenced.DefaultMaxAttempts
			}
			if j.Kind != p.Kind || j.Queue != wantQueue || j.Priority != p.Priority || j.MaxAttempts != wantMax ||
				j.ConcurrencyKey != p.ConcurrencyKey || j.SequenceKey != p.SequenceKey ||
				j.SequenceContinueOnFailed != p.SequenceContinueOnFailed {
				t.Fatalf("job %d = %+v, enqueued as %+v", i, j, p)
			}
			if j.State != fenced.JobQueued || j.Fence != 0 || j.Attempt != 0 || j.IdempotencyKey != "" {
				t.Fatalf("job %d starts as %+v", i, j)
			}
			// The database's clock, not this process's: allow for a skew.
			if d := j.RunAt.Sub(before); d < -time.Minute || d > time.Minute || j.CreatedAt.Sub(j.RunAt).Abs() > time.Second {
				t.Fatalf("job %d runs at %s, created at %s; enqueued at about %s", i, j.RunAt, j.CreatedAt, before)
			}
		}
		// Runnable at once: a claim takes the jobs of the default queue
		// without keys (every fourth job, from the first).
		got := e.claim(t, fenced.DefaultQueue, "A", 100, long)
		if len(got) == 0 || got[0].ID != jobs[0].ID {
			t.Fatalf("claimed %d jobs, the first %+v; want the first enqueued", len(got), got)
		}
	})
	t.Run("RunTimesDelaysAndIdempotencyKeys", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		old := e.enqueue(t, fenced.EnqueueParams{Kind: "k", IdempotencyKey: "old"})
		at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		n, err := e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{
			{Kind: "k", Args: map[string]int{"i": 0}, RunAt: at},
			{Kind: "k", Args: map[string]int{"i": 1}, Delay: 2 * time.Hour},
			{Kind: "k", Args: map[string]int{"i": 2}, IdempotencyKey: "old"},
			{Kind: "k", Args: map[string]int{"i": 3}, IdempotencyKey: "new"},
			{Kind: "k", Args: map[string]int{"i": 4}, IdempotencyKey: "new"},
			{Kind: "k", Args: map[string]int{"i": 5}},
		})
		wantNoErr(t, err, "enqueue bulk")
		if n != 4 {
			t.Fatalf("enqueued %d, want 4 (two of the keyed jobs exist already)", n)
		}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{AfterID: old.ID})
		wantNoErr(t, err, "list")
		var is []int
		for _, j := range jobs {
			var args struct{ I int }
			json.Unmarshal(j.Args, &args)
			is = append(is, args.I)
			switch args.I {
			case 0:
				if !j.RunAt.Equal(at) {
					t.Errorf("job 0 runs at %s, want %s", j.RunAt, at)
				}
			case 1:
				if until := time.Until(j.RunAt); until < 119*time.Minute || until > 121*time.Minute {
					t.Errorf("job 1 runs in %s, want 2h", until)
				}
			case 3:
				if j.IdempotencyKey != "new" {
					t.Errorf("job 3 has key %q", j.IdempotencyKey)
				}
			}
		}
		if len(is) != 4 || is[0] != 0 || is[1] != 1 || is[2] != 3 || is[3] != 5 {
			t.Fatalf("jobs inserted: %v, want [0 1 3 5]", is)
		}
		if j, _ := e.job(t, old.ID); string(j.Args) != string(old.Args) {
			t.Fatalf("the existing keyed job changed: %s", j.Args)
		}
		// A batch whose only departure is a delay.
		n, err = e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{{Kind: "delayed", Delay: 2 * time.Hour}, {Kind: "delayed", Delay: time.Hour}})
		wantNoErr(t, err, "enqueue delayed")
		delayed, err := e.c.ListJobs(ctx(t), fenced.JobFilter{Kind: "delayed"})
		wantNoErr(t, err, "list delayed")
		if n != 2 || len(delayed) != 2 {
			t.Fatalf("enqueued %d delayed jobs, %d listed", n, len(delayed))
		}
		for i, want := range []time.Duration{2 * time.Hour, time.Hour} {
			if until := time.Until(delayed[i].RunAt); until < want-time.Minute || until > want+time.Minute {
				t.Errorf("delayed job %d runs in %s, want %s", i, until, want)
			}
		}
	})
	t.Run("InsideTheCallersTransaction", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		l := e.acquire(t, "bulk", "A", long)
		rollback := errors.New("rollback")
		// Both ways: jobs that run now (a copy on PostgreSQL), and a batch
		// with a delay (an insert).
		for _, delay := range []time.Duration{0, time.Hour} {
			err := e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
				n, err := e.c.EnqueueBulk(ctx(t), tx, []fenced.EnqueueParams{{Kind: "rolled-back", Delay: delay}, {Kind: "rolled-back"}})
				if err != nil || n != 2 {
					return errors.Join(err, errors.New("not 2 jobs"))
				}
				return rollback
			})
			wantErrIs(t, err, rollback)
			err = e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
				_, err := e.c.EnqueueBulk(ctx(t), tx, []fenced.EnqueueParams{{Kind: "committed", Delay: delay}})
				return err
			})
			wantNoErr(t, err, "enqueue bulk in tx")
		}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		if len(jobs) != 2 || jobs[0].Kind != "committed" || jobs[1].Kind != "committed" {
			t.Fatalf("jobs = %+v, want the two committed", jobs)
		}
	})
	t.Run("BadInputWritesNothing", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		n, err := e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{{Kind: "ok"}, {Kind: "k", Priority: -1}})
		wantErrIs(t, err, fenced.ErrInvalid)
		if n != 0 {
			t.Fatalf("a refused batch counts %d jobs", n)
		}
		if n, err := e.c.EnqueueBulk(ctx(t), nil, nil); n != 0 || err != nil {
			t.Fatalf("an empty batch: %d, %v", n, err)
		}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		if len(jobs) != 0 {
			t.Fatalf("bad input wrote %d jobs", len(jobs))
		}
	})
}
