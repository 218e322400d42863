package pgdriver_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/internal/test/testdb"
	"github.com/jackc/pgx/v5"
)

// Racing enqueuers of every kind (one job, a batch, a copied bulk, an
// inserted bulk, a caller's transaction, a scheduled job) against
// claimers filtered by kind: every job is claimed exactly once, and none
// is left queued behind a lane's cursor.
func TestLaneClaimsLoseNoJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := migratedClient(t)
	pool := c.Driver().(*pgdriver.Driver).Pool()
	kinds := []string{"a", "b"}
	params := func(w, i int) fenced.EnqueueParams {
		return fenced.EnqueueParams{Kind: kinds[(w+i)%2], Queue: "lanes", Priority: 3 * ((w + i) % 3 / 2),
			Args: map[string]int{"w": w, "i": i}}
	}
	var enqueued atomic.Int64
	stop := make(chan struct{})
	var enq sync.WaitGroup
	for w := range 7 {
		enq.Add(1)
		go func() {
			defer enq.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				n := 1
				switch w {
				case 0, 1:
					_, _, err = c.Enqueue(ctx, params(w, i))
				case 2, 6:
					// Large copies: their seqs are drawn a while before they
					// commit, while single jobs commit seqs above them.
					ps := make([]fenced.EnqueueParams, 400)
					for k := range ps {
						ps[k] = params(w, i*400+k)
					}
					n, err = c.EnqueueBulk(ctx, nil, ps) // copied
				case 3:
					ps := make([]fenced.EnqueueParams, 20)
					for k := range ps {
						ps[k] = params(w, i*20+k)
						ps[k].IdempotencyKey = fmt.Sprintf("w%d-%d", w, i*20+k)
					}
					n, err = c.EnqueueBulk(ctx, nil, ps) // inserted
				case 4:
					ps := []fenced.EnqueueParams{params(w, 2*i), params(w, 2*i+1)}
					_, err = c.EnqueueMany(ctx, nil, ps)
					n = 2
				case 5:
					p := params(w, i)
					if i%2 == 0 {
						p.RunAt = time.Now().Add(50 * time.Millisecond)
						_, _, err = c.Enqueue(ctx, p)
					} else {
						err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
							_, _, err := c.EnqueueTx(ctx, pgdriver.WrapTx(tx), p)
							return err
						})
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
				enqueued.Add(int64(n))
			}
		}()
	}
	var claims sync.Map // job id -> attempts claimed
	var claimed atomic.Int64
	claim := func(owner string, ks []string) (int, error) {
		jobs, err := c.ClaimJobs(ctx, "lanes", owner, 1+rand.IntN(20), time.Minute, ks...)
		for _, j := range jobs {
			if _, dup := claims.LoadOrStore(j.ID, j.Attempt); dup {
				return 0, fmt.Errorf("job %d claimed twice", j.ID)
			}
			if err := c.CompleteJob(ctx, j.Ref(), nil); err != nil {
				return 0, err
			}
		}
		claimed.Add(int64(len(jobs)))
		return len(jobs), err
	}
	var cl sync.WaitGroup
	for w, ks := range [][]string{{"a", "b"}, {"a", "b"}, {"a"}, {"b"}} {
		cl.Add(1)
		go func() {
			defer cl.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := claim(fmt.Sprintf("c%d", w), ks); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && enqueued.Load() < 5000 && !t.Failed(); {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	enq.Wait()
	cl.Wait()
	if t.Failed() {
		return
	}
	// Drain by kind alone: a job passed by a cursor would stay queued.
	for deadline := time.Now().Add(2 * time.Minute); claimed.Load() < enqueued.Load(); {
		if time.Now().After(deadline) {
			queued, _ := c.ListJobs(ctx, fenced.JobFilter{Queue: "lanes", State: fenced.JobQueued, Limit: 10})
			t.Fatalf("claimed %d of %d jobs; still queued: %d shown, first %+v", claimed.Load(), enqueued.Load(), len(queued), first(queued))
		}
		if n, err := claim("drain", kinds); err != nil {
			t.Fatal(err)
		} else if n == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if claimed.Load() != enqueued.Load() {
		t.Fatalf("claimed %d of %d jobs", claimed.Load(), enqueued.Load())
	}
	var laned int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM fenced_jobs WHERE seq IS NOT NULL`).Scan(&laned); err != nil {
		t.Fatal(err)
	}
	if laned == 0 || laned == int(enqueued.Load()) {
		t.Fatalf("%d of %d jobs went through lanes: the test should mix jobs in and out of them", laned, enqueued.Load())
	}
	t.Logf("%d jobs, %d through lanes", enqueued.Load(), laned)
}

func first(jobs []*fenced.Job) any {
	if len(jobs) == 0 {
		return nil
	}
	return *jobs[0]
}

// A job that leaves a lane (claimed, then put back by a retry, a snooze,
// recovery or an operator's retry) is claimed by kind again, outside the
// lanes; claims by kind keep priority order across lanes and kinds, and
// a due waiting job goes before a lane's of the same priority.
func TestLaneJobsComeBackOutsideTheLanes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := migratedClient(t)
	enqueue := func(kind string, prio int) *fenced.Job {
		t.Helper()
		j, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: kind, Queue: "back", Priority: prio})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	claimOne := func(want *fenced.Job) *fenced.Job {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; {
			jobs, err := c.ClaimJobs(ctx, "back", "w", 1, time.Minute, "x", "y")
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) == 1 {
				if jobs[0].ID != want.ID {
					t.Fatalf("claimed job %d (%s, priority %d), want %d", jobs[0].ID, jobs[0].Kind, jobs[0].Priority, want.ID)
				}
				return jobs[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d was never claimed again", want.ID)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	j := enqueue("x", 0)
	r := claimOne(j)
	if err := c.FailJob(ctx, r.Ref(), "again", 0, false); err != nil {
		t.Fatal(err)
	}
	r = claimOne(j)
	if err := c.SnoozeJob(ctx, r.Ref(), 0); err != nil {
		t.Fatal(err)
	}
	r = claimOne(j)
	if err := c.CompleteJob(ctx, r.Ref(), nil); err != nil {
		t.Fatal(err)
	}

	// Recovery of an expired lease.
	j = enqueue("y", 0)
	if jobs, err := c.ClaimJobs(ctx, "back", "w", 1, 50*time.Millisecond, "y"); err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v, %d jobs", err, len(jobs))
	}
	time.Sleep(100 * time.Millisecond)
	if n, err := c.RecoverJobs(ctx, nil, 10, fenced.Backoff{Base: time.Millisecond, Max: time.Millisecond, Jitter: -1}); err != nil || n != 1 {
		t.Fatalf("recover: %v, %d jobs", err, n)
	}
	r = claimOne(j)
	if err := c.CompleteJob(ctx, r.Ref(), nil); err != nil {
		t.Fatal(err)
	}

	// Cancelled before it ever ran (fence 0, its seq behind the cursor once
	// a later job is claimed), then retried by an operator.
	j = enqueue("x", 0)
	later := enqueue("x", 0)
	if _, err := c.CancelJob(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	r = claimOne(later)
	if err := c.CompleteJob(ctx, r.Ref(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RetryJob(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	r = claimOne(j)
	if err := c.CompleteJob(ctx, r.Ref(), nil); err != nil {
		t.Fatal(err)
	}

	// Priority across lanes and kinds; within a priority, a waiting job
	// (here one enqueued in a caller's transaction) before the lanes'.
	low := enqueue("x", 5)
	high := enqueue("y", 1)
	var waiting *fenced.Job
	pool := c.Driver().(*pgdriver.Driver).Pool()
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		waiting, _, err = c.EnqueueTx(ctx, pgdriver.WrapTx(tx), fenced.EnqueueParams{Kind: "x", Queue: "back", Priority: 1})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []*fenced.Job{waiting, high, low} {
		r = claimOne(want)
		if err := c.CompleteJob(ctx, r.Ref(), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// The claim by kind reads each lane from past its cursor through
// fenced_jobs_lane, and the waiting jobs through fenced_jobs_waiting, in
// their generic plans, on an empty table and on one of 100,000 queued
// lane jobs: a lane is read from its cursor on, never from its start.
func TestLaneClaimPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, testdb.Postgres(t)).Pool()
	check := func(when string) {
		t.Helper()
		plan := strings.Join(explain(t, pool, "COSTS OFF", "plan_cache_mode = force_generic_plan",
			pgdriver.ClaimLanesSQL, "q", "w", 10, int64(60_000_000), []string{"k"}), "\n")
		lane := regexp.MustCompile(`Index Scan using fenced_jobs_lane on fenced_jobs \w+\s+Index Cond: \(\(queue = [^)]*\) AND \(kind = l\.kind\) AND \(priority = l\.priority\) AND \(seq IS NOT NULL\) AND \(seq > `)
		waiting := regexp.MustCompile(`Index Scan using fenced_jobs_waiting on fenced_jobs \w+\s+Index Cond: \(\(queue = [^)]*\) AND \(kind = k\.kind\)\)`)
		if !lane.MatchString(plan) || !waiting.MatchString(plan) {
			t.Errorf("%s, the claim by kind reads:\n%s", when, plan)
		}
	}
	check("on an empty table")
	for _, q := range []string{
		`INSERT INTO fenced_job_lanes VALUES ('q', 'k', 0)`,
		`INSERT INTO fenced_jobs (kind, queue, args, run_at, max_attempts, created_at, updated_at, seq)
		SELECT 'k', 'q', '{}', now(), 1, now(), now(), nextval('fenced_job_seq') FROM generate_series(1, 100000)`,
		`ANALYZE fenced_jobs`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	check("with 100,000 queued lane jobs")
}

// An enqueue that drew its seq and has not committed holds its lane's lock
// shared. A claim that passed its job meanwhile — it saw a later job that
// committed first, claimed it, and moved the cursor past both — would leave
// it to no claim by kind ever. So a claim that waits for the locks
// (wait) takes both jobs once the enqueue commits, and one that only tries
// them (try) may take the later job but moves no cursor: the open job is
// claimed once it commits. Each fails when the claim marks without holding
// the lock.
func TestLaneClaimsDoNotPassAnOpenEnqueue(t *testing.T) {
	for _, mode := range []struct {
		name  string
		every time.Duration // laneMarkEvery: 0, every claim waits; an hour, every claim but the first tries
	}{{"wait", 0}, {"try", time.Hour}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Cleanup(pgdriver.SetLaneMarkEvery(mode.every))
			ctx := context.Background()
			c := migratedClient(t)
			pool := c.Driver().(*pgdriver.Driver).Pool()
			// The lane exists (the first enqueue into a lane registers it,
			// and a concurrent first enqueue waits for that one's commit),
			// and the queue's first claim waited for its locks.
			if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: "open"}); err != nil {
				t.Fatal(err)
			}
			if jobs, err := c.ClaimJobs(ctx, "open", "w", 10, time.Minute, "k"); err != nil || len(jobs) != 1 {
				t.Fatalf("first claim: %v, %d jobs", err, len(jobs))
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			open := driver.EnqueueParams{Kind: "k", Queue: "open", Args: []byte(`{"open":true}`), MaxAttempts: 3}
			if err := pgdriver.EnqueueInLanesTx(ctx, tx, []driver.EnqueueParams{open}); err != nil {
				t.Fatal(err)
			}
			later, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: "open"})
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				jobs []*fenced.Job
				err  error
			}
			done := make(chan result, 1)
			go func() {
				jobs, err := c.ClaimJobs(ctx, "open", "w", 10, time.Minute, "k")
				done <- result{jobs, err}
			}()
			claimed := map[int64]int{}
			var r result
			if mode.every == 0 {
				// The claim waits for the lane's lock.
				waited := false
				for deadline := time.Now().Add(30 * time.Second); !waited && time.Now().Before(deadline); {
					select {
					case r := <-done:
						t.Fatalf("the claim did not wait for the open enqueue: %d jobs, %v", len(r.jobs), r.err)
					case <-time.After(20 * time.Millisecond):
					}
					if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waited); err != nil {
						t.Fatal(err)
					}
				}
				if !waited {
					t.Fatal("the claim neither returned nor waited for a lock")
				}
			} else {
				select {
				case r = <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("a claim that tries the locks waited")
				}
				if r.err != nil || len(r.jobs) != 1 || r.jobs[0].ID != later.ID {
					t.Fatalf("claim beside the open enqueue: %v, %d jobs, want job %d alone", r.err, len(r.jobs), later.ID)
				}
				claimed[later.ID]++
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if mode.every == 0 {
				select {
				case r = <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("the claim did not return after the enqueue committed")
				}
				if r.err != nil {
					t.Fatal(r.err)
				}
				for _, j := range r.jobs {
					claimed[j.ID]++
				}
			}
			for deadline := time.Now().Add(30 * time.Second); len(claimed) < 2; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("claimed %v: the open enqueue's job was passed by the lane's cursor", claimed)
				}
				jobs, err := c.ClaimJobs(ctx, "open", "w", 10, time.Minute, "k")
				if err != nil {
					t.Fatal(err)
				}
				for _, j := range jobs {
					claimed[j.ID]++
				}
			}
			for id, n := range claimed {
				if n != 1 {
					t.Fatalf("job %d claimed %d times", id, n)
				}
			}
		})
	}
}

// The maintainer drops a lane with nothing past its cursor, so claims probe
// only lanes in use; a later enqueue brings it back, and its jobs are
// claimed by kind as before. A lane with a queued job stays.
func TestEmptyLanesAreDroppedAndComeBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := migratedClient(t)
	pool := c.Driver().(*pgdriver.Driver).Pool()
	lanes := func() (n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM fenced_job_lanes`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, p := range []int{0, 1, 2} {
		if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: "drop", Priority: p}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := c.ClaimJobs(ctx, "drop", "w", 2, time.Minute, "k")
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %v, %d jobs", err, len(jobs))
	}
	c.Driver().(*pgdriver.Driver).DueFullSweep()
	if _, err := c.RecoverJobs(ctx, nil, 10, fenced.Backoff{}); err != nil {
		t.Fatal(err)
	}
	if n := lanes(); n != 1 {
		t.Fatalf("%d lanes after the drop, want 1 (priority 2's job is queued)", n)
	}
	j, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: "drop", Priority: 0})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err = c.ClaimJobs(ctx, "drop", "w", 1, time.Minute, "k")
	if err != nil || len(jobs) != 1 || jobs[0].ID != j.ID {
		t.Fatalf("claim after the lane came back: %v, %d jobs, want job %d", err, len(jobs), j.ID)
	}
}
