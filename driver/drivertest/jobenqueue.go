package drivertest

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runEnqueue: defaults, batches in input order, idempotency keys (also
// under concurrent enqueuers), enqueue inside the caller's transaction, and
// bad input that writes nothing (docs/design.md §6.2).
func runEnqueue(t *testing.T, b Backend) {
	t.Run("DefaultsAndOptions", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		if j.Queue != fenced.DefaultQueue || j.MaxAttempts != fenced.DefaultMaxAttempts || j.Priority != 0 || string(j.Args) != "{}" {
			t.Fatalf("defaults = %+v args %s", j, j.Args)
		}
		at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		j = e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "mail", Priority: 3, RunAt: at, MaxAttempts: 2, Args: json.RawMessage(`[1,2]`)})
		if j.Queue != "mail" || j.Priority != 3 || !j.RunAt.Equal(at) || j.MaxAttempts != 2 {
			t.Fatalf("options = %+v", j)
		}
		d := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Delay: time.Hour})
		if until := time.Until(d.RunAt); until < 59*time.Minute || until > 61*time.Minute {
			t.Fatalf("delayed job runs in %s", until)
		}
	})
	t.Run("BatchKeepsInputOrder", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.enqueue(t, fenced.EnqueueParams{Kind: "k", IdempotencyKey: "dup"})
		var ps []fenced.EnqueueParams
		for i := range 50 {
			p := fenced.EnqueueParams{Kind: "k", Args: map[string]int{"i": i}}
			if i%10 == 3 {
				p.IdempotencyKey = "dup"
			}
			if i%10 == 7 {
				p.IdempotencyKey = "seven"
			}
			ps = append(ps, p)
		}
		res, err := e.c.EnqueueMany(ctx(t), nil, ps)
		wantNoErr(t, err, "enqueue many")
		var seven int64
		for i, r := range res {
			var args struct{ I int }
			json.Unmarshal(r.Job.Args, &args)
			switch {
			case i%10 == 3:
				if !r.Existing || r.Job.IdempotencyKey != "dup" {
					t.Fatalf("job %d = %+v existing %v", i, r.Job, r.Existing)
				}
			case i%10 == 7:
				if i == 7 {
					seven = r.Job.ID
				}
				if r.Job.ID != seven || r.Existing != (i != 7) {
					t.Fatalf("job %d = id %d existing %v, want id %d", i, r.Job.ID, r.Existing, seven)
				}
			default:
				if r.Existing || args.I != i {
					t.Fatalf("job %d has args %s existing %v", i, r.Job.Args, r.Existing)
				}
			}
		}
	})
	t.Run("IdempotentUnderEightConcurrentEnqueuers", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		clients := []*fenced.Client{e.c, e.b.open(t, e.url, fenced.Config{})}
		var wg sync.WaitGroup
		ids := make([]int64, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				j, _, err := clients[i%2].Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", IdempotencyKey: "once"})
				if err != nil {
					t.Errorf("enqueue: %v", err)
					return
				}
				ids[i] = j.ID
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("ids = %v, want one job", ids)
			}
		}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		if len(jobs) != 1 {
			t.Fatalf("%d jobs exist", len(jobs))
		}
	})
	t.Run("RepeatedKeyConsumesNoID", func(t *testing.T) {
		// A repeat of a key takes no id: the jobs enqueued around repeats
		// (alone, in a batch, twice within one batch, in a bulk enqueue) get
		// ids one step apart, as if the repeats had not been made.
		t.Parallel()
		e := setup(t, b)
		first := e.enqueue(t, fenced.EnqueueParams{Kind: "k", IdempotencyKey: "a"})
		second := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		step := second.ID - first.ID
		last := second
		next := func(what string) {
			t.Helper()
			j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
			if j.ID != last.ID+step {
				t.Fatalf("after %s the next job has id %d, want %d (ids %d, %d)", what, j.ID, last.ID+step, first.ID, second.ID)
			}
			last = j
		}
		for range 2 {
			if j, existing, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", IdempotencyKey: "a"}); err != nil || !existing || j.ID != first.ID {
				t.Fatalf("repeat = %+v, %v, %v", j, existing, err)
			}
		}
		next("two repeats")
		res, err := e.c.EnqueueMany(ctx(t), nil, []fenced.EnqueueParams{
			{Kind: "k", IdempotencyKey: "a"}, {Kind: "k", IdempotencyKey: "b"}, {Kind: "k", IdempotencyKey: "b"}, {Kind: "k"}})
		wantNoErr(t, err, "enqueue many")
		if !res[0].Existing || res[1].Existing || !res[2].Existing || res[2].Job.ID != res[1].Job.ID ||
			res[1].Job.ID != last.ID+step || res[3].Job.ID != last.ID+2*step {
			t.Fatalf("batch ids %d %d %d %d existing %v %v %v, want new ids from %d", res[0].Job.ID, res[1].Job.ID,
				res[2].Job.ID, res[3].Job.ID, res[0].Existing, res[1].Existing, res[2].Existing, last.ID+step)
		}
		last = res[3].Job
		next("a batch with repeats")
		n, err := e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{
			{Kind: "k", IdempotencyKey: "a"}, {Kind: "k", IdempotencyKey: "c"}, {Kind: "k", IdempotencyKey: "c"}})
		wantNoErr(t, err, "enqueue bulk")
		if n != 1 {
			t.Fatalf("bulk enqueued %d jobs, want 1", n)
		}
		last.ID += step // the bulk's one new job
		next("a bulk enqueue with repeats")
	})
	t.Run("InsideTheCallersTransaction", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		l := e.acquire(t, "enq", "A", long)
		rollback := errors.New("rollback")
		err := e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
			if _, _, err := e.c.EnqueueTx(ctx(t), tx, fenced.EnqueueParams{Kind: "rolled-back"}); err != nil {
				return err
			}
			return rollback
		})
		wantErrIs(t, err, rollback)
		err = e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
			_, _, err := e.c.EnqueueTx(ctx(t), tx, fenced.EnqueueParams{Kind: "committed"})
			return err
		})
		wantNoErr(t, err, "enqueue in tx")
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		if len(jobs) != 1 || jobs[0].Kind != "committed" {
			t.Fatalf("jobs = %+v", jobs)
		}
	})
	t.Run("BadInputWritesNothing", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		bad := map[string]fenced.EnqueueParams{
			"EmptyKind":         {Kind: ""},
			"ArgsNotJSON":       {Kind: "k", Args: json.RawMessage(`{"a":`)},
			"ArgsOver1MiB":      {Kind: "k", Args: json.RawMessage(`"` + strings.Repeat("x", fenced.MaxArgsBytes) + `"`)},
			"NegativePriority":  {Kind: "k", Priority: -1},
			"NegativeAttempts":  {Kind: "k", MaxAttempts: -1},
			"BadQueueName":      {Kind: "k", Queue: "no spaces"},
			"QueueStartsWithNo": {Kind: "k", Queue: "-q"},
			"LongKey":           {Kind: "k", IdempotencyKey: strings.Repeat("k", 201)},
			"NegativeDelay":     {Kind: "k", Delay: -time.Second},
			"Unmarshalable":     {Kind: "k", Args: func() {}},
		}
		for name, p := range bad {
			_, _, err := e.c.Enqueue(ctx(t), p)
			if !errors.Is(err, fenced.ErrInvalid) {
				t.Errorf("%s: want invalid, got %v", name, err)
			}
		}
		// One bad job rejects the whole batch.
		_, err := e.c.EnqueueMany(ctx(t), nil, []fenced.EnqueueParams{{Kind: "ok"}, {Kind: ""}})
		wantErrIs(t, err, fenced.ErrInvalid)
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		if len(jobs) != 0 {
			t.Fatalf("bad input wrote %d jobs", len(jobs))
		}
	})
}
