package demo

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fenced/fenced"
)

// The shape of the skip-locked run: ten jobs; each worker claims a batch,
// works on it a while, completes it and claims again until none are left.
const (
	skipLockedJobs  = 10
	skipLockedBatch = 3
	skipLockedWork  = 20 * time.Millisecond
)

// skipLocked: two workers, released together, pull ten queued jobs in
// batches. On PostgreSQL and MySQL their claims run at the same time and each skips the
// rows the other is claiming (FOR UPDATE SKIP LOCKED); on SQLite the claims
// take turns at the single write lock. Either way they get different jobs:
// no job is claimed twice and none is left behind.
func skipLocked(ctx context.Context, e *env) []Step {
	var t timeline
	ps, closeAll, err := e.peers(ctx, "A", "B")
	if err != nil {
		t.fail("A+B", "open a client each", "open", err)
		return t.steps
	}
	defer closeAll()
	q := e.queue("skip-locked")
	number, err := enqueueNumbered(ctx, e.c, q)
	if err != nil {
		t.fail("—", "enqueue ten jobs", "10 queued", err)
		return t.steps
	}
	t.add("—", "enqueue ten jobs (numbered 1–10 here)", "10 queued", fmt.Sprintf("%d queued", len(number)))

	got := make([][][]int, len(ps)) // per worker, its batches of job numbers
	errs := make([]error, len(ps))
	// Every worker's first claim returns before any works or claims again,
	// so each gets a share however the machine schedules them: ten jobs are
	// more than two first batches.
	var firstClaims sync.WaitGroup
	firstClaims.Add(len(ps))
	var fns []func()
	for i, p := range ps {
		fns = append(fns, func() { got[i], errs[i] = pull(ctx, p, q, number, &firstClaims) })
	}
	together(fns...)

	how := "one writer: claims take turns"
	if e.dialect != fenced.DialectSQLite {
		how = "SKIP LOCKED: each skips the other's rows"
	}
	for i, p := range ps {
		t.check(errs[i] == nil && len(got[i]) > 0, p.name,
			fmt.Sprintf("claim ≤%d at a time, %s of work each, until none left (%s)", skipLockedBatch, skipLockedWork, how),
			"a share of the ten, batch by batch", batches(got[i], errs[i]))
	}
	t.add("—", "jobs both workers got", "none", overlap(got))
	t.add("—", "jobs either worker got", "all 10", union(got))
	t.add("—", "the jobs afterwards", "10 succeeded after 1 attempt each, 0 other", afterwards(ctx, e.c, q))
	return t.steps
}

// enqueueNumbered enqueues the jobs in one batch and numbers them 1, 2, … by id.
func enqueueNumbered(ctx context.Context, c *fenced.Client, q string) (map[int64]int, error) {
	ps := make([]fenced.EnqueueParams, skipLockedJobs)
	for i := range ps {
		ps[i] = fenced.EnqueueParams{Kind: "demo", Queue: q}
	}
	res, err := c.EnqueueMany(ctx, nil, ps)
	if err != nil {
		return nil, err
	}
	number := map[int64]int{}
	for i, r := range res {
		if r.Job.State == fenced.JobQueued {
			number[r.Job.ID] = i + 1
		}
	}
	return number, nil
}

// pull is one worker's loop: claim a batch, work, complete it, repeat until a
// claim returns nothing. After its first claim it waits at first until
// every worker has made its own.
func pull(ctx context.Context, p *peer, q string, number map[int64]int, first *sync.WaitGroup) ([][]int, error) {
	var got [][]int
	for n := 0; ; n++ {
		jobs, err := p.c.ClaimJobs(ctx, q, p.name, skipLockedBatch, time.Minute)
		if n == 0 {
			first.Done()
			first.Wait()
		}
		if err != nil || len(jobs) == 0 {
			return got, err
		}
		var batch []int
		for _, j := range jobs {
			batch = append(batch, number[j.ID])
		}
		got = append(got, batch)
		time.Sleep(skipLockedWork)
		for _, j := range jobs {
			if err := p.c.CompleteJob(ctx, j.Ref(), nil); err != nil {
				return got, fmt.Errorf("complete job %d: %w", j.ID, err)
			}
		}
	}
}

// batches prints a worker's batches: "1 2 3 | 7 8 (5 jobs)".
func batches(got [][]int, err error) string {
	var s []string
	n := 0
	for _, b := range got {
		s = append(s, numbers(b))
		n += len(b)
	}
	out := fmt.Sprintf("%s (%d jobs)", strings.Join(s, " | "), n)
	if err != nil {
		out += "; error: " + err.Error()
	}
	return out
}

func numbers(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " ")
}

// counts is how many times each job number was claimed.
func counts(got [][][]int) map[int]int {
	c := map[int]int{}
	for _, w := range got {
		for _, b := range w {
			for _, n := range b {
				c[n]++
			}
		}
	}
	return c
}

func overlap(got [][][]int) string {
	var twice []int
	for n, k := range counts(got) {
		if k > 1 {
			twice = append(twice, n)
		}
	}
	if len(twice) == 0 {
		return "none"
	}
	slices.Sort(twice)
	return numbers(twice)
}

func union(got [][][]int) string {
	c := counts(got)
	var missing []int
	for n := 1; n <= skipLockedJobs; n++ {
		if c[n] == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 && len(c) == skipLockedJobs {
		return fmt.Sprintf("all %d", len(c))
	}
	return fmt.Sprintf("%d distinct, missing %s", len(c), numbers(missing))
}

// afterwards counts the queue's jobs that succeeded after exactly one
// attempt: a job claimed twice would show attempt 2.
func afterwards(ctx context.Context, c *fenced.Client, q string) string {
	jobs, err := c.ListJobs(ctx, fenced.JobFilter{Queue: q})
	if err != nil {
		return "error: " + err.Error()
	}
	once := 0
	for _, j := range jobs {
		if j.State == fenced.JobSucceeded && j.Attempt == 1 {
			once++
		}
	}
	return fmt.Sprintf("%d succeeded after 1 attempt each, %d other", once, len(jobs)-once)
}
