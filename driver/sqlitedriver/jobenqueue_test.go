package sqlitedriver_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/fencedtype"
)

func TestEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("BatchInInputOrder", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		a, b := newJob("q"), newJob("q")
		b.Priority, b.Delay = 5, time.Hour
		jobs := enqueue(t, d, a, b)
		if jobs[0].ID >= jobs[1].ID {
			t.Fatalf("ids %d, %d do not ascend in input order", jobs[0].ID, jobs[1].ID)
		}
		j := jobs[1]
		if j.State != fencedtype.JobQueued || j.Priority != 5 || j.MaxAttempts != 3 || j.Attempt != 0 || j.Fence != 0 ||
			string(j.Args) != `{"to":"a@b"}` || j.Kind != "email" || j.Queue != "q" {
			t.Fatalf("inserted %+v", j)
		}
		if d := j.RunAt.Sub(j.DecidedAt); d < 59*time.Minute {
			t.Fatalf("run_at %v after now, want the 1h delay", d)
		}
	})

	t.Run("InvalidJSONIsRefused", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		p := newJob("q")
		p.Args = []byte(`{nope`)
		if _, err := d.Enqueue(ctx, nil, []driver.EnqueueParams{newJob("q"), p}); err == nil {
			t.Fatal("invalid args accepted")
		}
		if jobs, _ := d.ListJobs(ctx, fencedtype.JobFilter{Limit: 10}); len(jobs) != 0 {
			t.Fatalf("a failed batch left %d jobs", len(jobs))
		}
	})

	t.Run("IdempotencyKeyReturnsTheExistingJob", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		k1, k2, plain := newJob("q"), newJob("q"), newJob("q")
		k1.IdempotencyKey, k2.IdempotencyKey = "k1", "k2"
		res, err := d.Enqueue(ctx, nil, []driver.EnqueueParams{k1, plain, k1, k2})
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Existing || res[1].Existing || !res[2].Existing || res[3].Existing {
			t.Fatalf("existing flags: %v %v %v %v", res[0].Existing, res[1].Existing, res[2].Existing, res[3].Existing)
		}
		if res[2].Job.ID != res[0].Job.ID || res[0].Job.IdempotencyKey != "k1" || res[1].Job.IdempotencyKey != "" {
			t.Fatalf("duplicate key in batch: %+v vs %+v", res[2].Job, res[0].Job)
		}
		if !(res[0].Job.ID < res[1].Job.ID && res[1].Job.ID < res[3].Job.ID) {
			t.Fatalf("ids do not ascend in input order: %d %d %d", res[0].Job.ID, res[1].Job.ID, res[3].Job.ID)
		}
		again, err := d.Enqueue(ctx, nil, []driver.EnqueueParams{k2})
		if err != nil || !again[0].Existing || again[0].Job.ID != res[3].Job.ID {
			t.Fatalf("second enqueue of k2: %+v, %v", again, err)
		}
	})

	t.Run("ConcurrentEnqueuersOfOneKeyMakeOneJob", func(t *testing.T) {
		t.Parallel()
		d, path := setupJobs(t)
		d2 := openJobs(t, path)
		p := newJob("q")
		p.IdempotencyKey = "once"
		var wg sync.WaitGroup
		results := make([]fencedtype.EnqueueResult, 8)
		errs := make([]error, 8)
		for i := range 8 {
			dd := d
			if i%2 == 1 {
				dd = d2
			}
			wg.Go(func() {
				var res []fencedtype.EnqueueResult
				res, errs[i] = dd.Enqueue(ctx, nil, []driver.EnqueueParams{p})
				if errs[i] == nil {
					results[i] = res[0]
				}
			})
		}
		wg.Wait()
		created := 0
		for i, r := range results {
			if errs[i] != nil {
				t.Fatalf("enqueuer %d: %v", i, errs[i])
			}
			if r.Job.ID != results[0].Job.ID {
				t.Fatalf("enqueuer %d got job %d, enqueuer 0 job %d", i, r.Job.ID, results[0].Job.ID)
			}
			if !r.Existing {
				created++
			}
		}
		if created != 1 {
			t.Fatalf("%d enqueuers created the job, want 1", created)
		}
		if jobs, _ := d.ListJobs(ctx, fencedtype.JobFilter{Limit: 100}); len(jobs) != 1 {
			t.Fatalf("%d jobs stored, want 1", len(jobs))
		}
	})

	t.Run("InsideTheCallersTransaction", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := d.Enqueue(ctx, sqlitedriver.WrapTx(tx), []driver.EnqueueParams{newJob("q")})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.GetJob(ctx, res[0].Job.ID); !errors.Is(err, fencedtype.ErrNotFound) {
			t.Fatalf("job of a rolled back enqueue: %v, want ErrNotFound", err)
		}
	})
}
