package pgdriver_test

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// heldOf lists the queued jobs of sequence key in queue "seq" in id order,
// each as its id and whether it is held.
func heldOf(t *testing.T, pool *pgxpool.Pool, key string) (ids []int64, held []bool) {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT id, held FROM fenced_jobs WHERE queue = 'seq' AND sequence_key = $1 AND state = 'queued' ORDER BY id`, key)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var h bool
		if err := rows.Scan(&id, &h); err != nil {
			t.Fatal(err)
		}
		ids, held = append(ids, id), append(held, h)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids, held
}

// wantHeld fails unless the queued jobs of sequence key are want (ids) and
// every one of them is held but the first, which is not.
func wantHeld(t *testing.T, pool *pgxpool.Pool, key string, when string, want ...int64) {
	t.Helper()
	ids, held := heldOf(t, pool, key)
	wantHeld := make([]bool, len(want))
	for i := 1; i < len(want); i++ {
		wantHeld[i] = true
	}
	if !slices.Equal(ids, want) || !slices.Equal(held, wantHeld) {
		t.Fatalf("%s: sequence %s has queued %v held %v, want %v held %v", when, key, ids, held, want, wantHeld)
	}
}

// claimOne claims the one job queue "seq" can start now, and fails unless
// it is want.
func claimOne(t *testing.T, c *fenced.Client, want int64, ttl time.Duration) fenced.JobRef {
	t.Helper()
	jobs, err := c.ClaimJobs(context.Background(), "seq", "w", 10, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != want {
		ids := make([]int64, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		t.Fatalf("claimed %v, want only job %d", ids, want)
	}
	return jobs[0].Ref()
}

// Every path that inserts a sequenced job holds it behind its sequence's
// open jobs (the same statement's included), and every transition that
// ends a sequence's head — a completion, a cancel of a queued head or by
// its worker, a failure with SequenceContinueOnFailed, a deletion, a
// recovery, retention of a failed head — releases the next job, which the
// claim then starts; a failure without it releases nothing. Each step
// fails when its release is missing: the next job stays held, and no claim
// starts it.
func TestSequenceHoldsAreReleasedByEveryEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := migratedClient(t)
	pool := c.Driver().(*pgdriver.Driver).Pool()
	p := func(key string, i int) fenced.EnqueueParams {
		return fenced.EnqueueParams{Kind: "k", Queue: "seq", SequenceKey: key, Args: map[string]int{"i": i}, MaxAttempts: 1}
	}
	var s []int64
	res, err := c.EnqueueMany(ctx, nil, []fenced.EnqueueParams{p("s", 0), p("s", 1)}) // one statement
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		s = append(s, r.Job.ID)
	}
	if _, err := c.EnqueueBulk(ctx, nil, []fenced.EnqueueParams{p("s", 2), p("s", 3)}); err != nil { // copied
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { // a caller's transaction
		_, _, err := c.EnqueueTx(ctx, pgdriver.WrapTx(tx), p("s", 4))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	later := p("s", 5)
	later.RunAt = time.Now().Add(time.Hour)
	if _, _, err := c.Enqueue(ctx, later); err != nil {
		t.Fatal(err)
	}
	all, _ := heldOf(t, pool, "s")
	if len(all) != 6 {
		t.Fatalf("sequence s has %d queued jobs, want 6", len(all))
	}
	s = all
	wantHeld(t, pool, "s", "enqueued", s...)
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { // copied in a caller's transaction
		_, err := c.EnqueueBulk(ctx, pgdriver.WrapTx(tx), []fenced.EnqueueParams{p("c", 0), p("c", 1)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := heldOf(t, pool, "c")
	wantHeld(t, pool, "c", "copied in a caller's transaction", cs...)
	if len(cs) != 2 {
		t.Fatalf("sequence c has %d queued jobs, want 2", len(cs))
	}
	for _, id := range cs { // out of the way of the claims below
		if _, err := c.CancelJob(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	ref := claimOne(t, c, s[0], time.Minute)
	if ids, held := heldOf(t, pool, "s"); !slices.Equal(ids, s[1:]) || slices.Contains(held, false) {
		t.Fatalf("head claimed: queued %v held %v, want %v all held", ids, held, s[1:])
	}
	if err := c.CompleteJob(ctx, ref, nil); err != nil {
		t.Fatal(err)
	}
	wantHeld(t, pool, "s", "after a completion", s[1:]...)

	ref = claimOne(t, c, s[1], time.Minute)
	if err := c.FailJob(ctx, ref, "for good", 0, true); err != nil {
		t.Fatal(err)
	}
	ids, held := heldOf(t, pool, "s")
	if !slices.Equal(ids, s[2:]) || slices.Contains(held, false) {
		t.Fatalf("a failed head released job %d (queued %v held %v)", ids[0], ids, held)
	}
	if err := c.DeleteJob(ctx, s[1]); err != nil {
		t.Fatal(err)
	}
	wantHeld(t, pool, "s", "after the failed head was deleted", s[2:]...)

	ref = claimOne(t, c, s[2], time.Minute)
	if _, err := c.EndJob(ctx, nil, fenced.JobEnd{Ref: ref, Kind: fenced.EndCancel, Error: "stop"}); err != nil {
		t.Fatal(err)
	}
	wantHeld(t, pool, "s", "after its worker cancelled the head", s[3:]...)

	if _, err := c.CancelJob(ctx, s[3]); err != nil { // queued, not held
		t.Fatal(err)
	}
	wantHeld(t, pool, "s", "after a queued head was cancelled", s[4:]...)
	if _, err := c.CancelJob(ctx, s[5]); err != nil { // held: releases nothing
		t.Fatal(err)
	}
	wantHeld(t, pool, "s", "after a held job was cancelled", s[4])
	if _, err := c.RetryJob(ctx, s[5]); err != nil {
		t.Fatal(err)
	}
	ref = claimOne(t, c, s[4], time.Minute) // the retried job waits behind it
	if err := c.CompleteJob(ctx, ref, nil); err != nil {
		t.Fatal(err)
	}
	claimOne(t, c, s[5], time.Minute)

	// A failure with SequenceContinueOnFailed releases; so does a recovery
	// that ends one, and retention of a failed head.
	u0 := p("u", 0)
	u0.SequenceContinueOnFailed = true
	u := enqueueAll(t, c, u0, p("u", 1))
	ref = claimOne(t, c, u[0], time.Minute)
	if err := c.FailJob(ctx, ref, "for good", 0, true); err != nil {
		t.Fatal(err)
	}
	wantHeld(t, pool, "u", "after a failure that does not block", u[1])
	if err := c.CompleteJob(ctx, claimOne(t, c, u[1], time.Minute), nil); err != nil {
		t.Fatal(err)
	}

	w0 := p("w", 0)
	w0.SequenceContinueOnFailed = true
	w := enqueueAll(t, c, w0, p("w", 1))
	claimOne(t, c, w[0], time.Millisecond)
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := c.RecoverJobs(ctx, nil, 100, fenced.Backoff{})
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the expired head was not recovered within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	wantHeld(t, pool, "w", "after recovery failed the head (continue)", w[1])
	if err := c.CompleteJob(ctx, claimOne(t, c, w[1], time.Minute), nil); err != nil {
		t.Fatal(err)
	}

	v := enqueueAll(t, c, p("v", 0), p("v", 1))
	ref = claimOne(t, c, v[0], time.Minute)
	if err := c.FailJob(ctx, ref, "for good", 0, true); err != nil {
		t.Fatal(err)
	}
	ids, held = heldOf(t, pool, "v")
	if !slices.Equal(held, []bool{true}) {
		t.Fatalf("a failed head released: queued %v held %v", ids, held)
	}
	if _, err := c.DeleteFinishedJobs(ctx, nil, 0, 100); err != nil {
		t.Fatal(err)
	}
	wantHeld(t, pool, "v", "after retention deleted the failed head", v[1])
}

// enqueueAll enqueues ps one at a time and returns their ids.
func enqueueAll(t *testing.T, c *fenced.Client, ps ...fenced.EnqueueParams) []int64 {
	t.Helper()
	ids := make([]int64, len(ps))
	for i, p := range ps {
		j, _, err := c.Enqueue(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = j.ID
	}
	return ids
}

// A head left held — here its end was written around the driver, as a
// release that never ran after a crash leaves it — is released by the
// maintainer's next full sweep, and not before.
func TestAStuckSequenceHeadIsReleasedByTheFullSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := migratedClient(t)
	d := c.Driver().(*pgdriver.Driver)
	pool := d.Pool()
	x := enqueueAll(t, c, fenced.EnqueueParams{Kind: "k", Queue: "seq", SequenceKey: "x"},
		fenced.EnqueueParams{Kind: "k", Queue: "seq", SequenceKey: "x"})
	if _, err := pool.Exec(ctx, `UPDATE fenced_jobs SET state = 'succeeded', finished_at = now() WHERE id = $1`, x[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RecoverJobs(ctx, nil, 100, fenced.Backoff{}); err != nil { // the first sweep of a process is full
		t.Fatal(err)
	}
	wantHeld(t, pool, "x", "after the first (full) sweep", x[1])
	y := enqueueAll(t, c, fenced.EnqueueParams{Kind: "k", Queue: "seq", SequenceKey: "y"},
		fenced.EnqueueParams{Kind: "k", Queue: "seq", SequenceKey: "y"})
	if _, err := pool.Exec(ctx, `UPDATE fenced_jobs SET state = 'succeeded', finished_at = now() WHERE id = $1`, y[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RecoverJobs(ctx, nil, 100, fenced.Backoff{}); err != nil {
		t.Fatal(err)
	}
	if _, held := heldOf(t, pool, "y"); !slices.Equal(held, []bool{true}) {
		t.Fatalf("a sweep that is not full released the stuck head: held %v", held)
	}
	d.DueFullSweep()
	if _, err := c.RecoverJobs(ctx, nil, 100, fenced.Backoff{}); err != nil {
		t.Fatal(err)
	}
	wantHeld(t, pool, "y", "after a full sweep", y[1])
}

// An enqueue of a sequence's job that found the head running holds it, and
// holds the sequence's lock shared until it commits. The head's end, if it
// came meanwhile, must not release before that commit — it would miss the
// new job, left held with nothing to release it — so its release waits for
// the lock, then releases the new job. Fails when a release does not take
// the lock (it does not wait, and the job stays held).
//
// With two ends in one batch (of two sequences), the release tries both
// locks in one transaction, and releases the sequence whose lock it could
// not take in one of its own that waits for it.
func TestASequenceReleaseWaitsForAnOpenEnqueue(t *testing.T) {
	for _, others := range []int{0, 1} {
		t.Run(fmt.Sprintf("others=%d", others), func(t *testing.T) {
			t.Parallel()
			testASequenceReleaseWaitsForAnOpenEnqueue(t, others)
		})
	}
}

func testASequenceReleaseWaitsForAnOpenEnqueue(t *testing.T, others int) {
	ctx := context.Background()
	c := migratedClient(t)
	pool := c.Driver().(*pgdriver.Driver).Pool()
	b := enqueueAll(t, c, fenced.EnqueueParams{Kind: "k", Queue: "seq", SequenceKey: "s"})
	ends := []fenced.JobEnd{{Ref: claimOne(t, c, b[0], time.Minute), Kind: fenced.EndComplete}}
	var next []int64
	for i := range others {
		o := enqueueAll(t, c, fenced.EnqueueParams{Kind: "k", Queue: "seq", SequenceKey: fmt.Sprintf("o%d", i)},
			fenced.EnqueueParams{Kind: "k", Queue: "seq", SequenceKey: fmt.Sprintf("o%d", i)})
		ends = append(ends, fenced.JobEnd{Ref: claimOne(t, c, o[0], time.Minute), Kind: fenced.EndComplete})
		next = append(next, o[1])
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	x, _, err := c.EnqueueTx(ctx, pgdriver.WrapTx(tx), fenced.EnqueueParams{Kind: "k", Queue: "seq", SequenceKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		errs, _, err := c.EndJobs(ctx, nil, ends)
		for _, e := range errs {
			err = cmp.Or(err, e)
		}
		done <- err
	}()
	// The release waits for the advisory lock the open enqueue holds.
	deadline := time.Now().Add(time.Minute)
	for {
		var waiting bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the head's end returned (%v) while an enqueue behind it was open", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the head's release did not wait for the open enqueue within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantHeld(t, pool, "s", "after the head ended and the enqueue committed", x.ID)
	for i, id := range next {
		wantHeld(t, pool, fmt.Sprintf("o%d", i), "after its head ended beside", id)
	}
}

// The limited pick reads no held job: with 40 sequences of 250 queued jobs
// each, it reads the 40 heads from fenced_jobs_claim, not the 9,960 jobs
// held behind them. (Before holds it read past them, 10,000 rows, and
// its cost grew with the sequences' length.)
func TestTheLimitedPickReadsNoHeldJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := migratedClient(t)
	pool := c.Driver().(*pgdriver.Driver).Pool()
	ps := make([]fenced.EnqueueParams, 0, 10_000)
	for i := range 10_000 {
		ps = append(ps, fenced.EnqueueParams{Kind: "k", Queue: "seq", SequenceKey: fmt.Sprintf("s%d", i%40)})
	}
	if _, err := c.EnqueueBulk(ctx, nil, ps); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE fenced_jobs`); err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(explain(t, pool, "ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF", "plan_cache_mode = force_generic_plan",
		pgdriver.ClaimLimitedPickAnyKindNoFullSQL, "seq", 116), "\n")
	m := regexp.MustCompile(`Index Scan using fenced_jobs_claim on fenced_jobs j \(actual rows=(\d+) loops=1\)`).FindStringSubmatch(plan)
	if m == nil {
		t.Fatalf("the limited pick does not read fenced_jobs_claim:\n%s", plan)
	}
	if n, _ := strconv.Atoi(m[1]); n != 40 {
		t.Fatalf("the limited pick read %d rows of fenced_jobs_claim, want the 40 heads:\n%s", n, plan)
	}
}
