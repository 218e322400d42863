package demo

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// The naive claim, on the demo's own table (%s): read the state, then write
// by name without re-checking it.
const (
	naiveInsertSQL = `INSERT INTO %s (name, state) VALUES ($1, 'queued')`
	naiveSelectSQL = `SELECT state, COALESCE(owner, '') FROM %s WHERE name = $1`
	naiveUpdateSQL = `UPDATE %s SET state = 'running', owner = $2 WHERE name = $1`
)

// checkThenAct: the naive claim, SELECT the queued job and then UPDATE it by
// name without re-checking its state, run by two workers deliberately
// interleaved (both SELECT, then both UPDATE) against a table of the run's
// own (fenced_demo_naive_jobs_…):
// both are told they own the job, and the second UPDATE silently overwrote
// the first. Then the same interleaving with fenced: both see the job queued,
// both call ClaimJobs, whose single statement checks and changes the state
// together, so only the first gets it.
func checkThenAct(ctx context.Context, e *env) []Step {
	var t timeline
	ps, closeAll, err := e.peers(ctx, "A", "B")
	if err != nil {
		t.fail("A+B", "open a client each", "open", err)
		return t.steps
	}
	defer closeAll()
	naive(ctx, e, &t, ps)
	atomicClaim(ctx, e, &t, ps)
	return t.steps
}

func naive(ctx context.Context, e *env, t *timeline, ps []*peer) {
	name := fmt.Sprintf("naive-%d", time.Now().UnixNano())
	table := e.table("fenced_demo_naive_jobs")
	if _, err := execSQL(ctx, e.d, fmt.Sprintf(naiveJobsDDL, table)); err != nil {
		t.fail("—", "naive: create "+table, "created", err)
		return
	}
	if _, err := execSQL(ctx, e.d, fmt.Sprintf(naiveInsertSQL, table), name); err != nil {
		t.fail("—", "naive: insert a queued job", "queued", err)
		return
	}
	t.add("—", "naive: insert a queued job "+name, "queued", naiveRead(ctx, ps[0], table, name))
	for _, p := range ps {
		t.add(p.name, "naive: SELECT the job (is it queued?)", "queued", naiveRead(ctx, p, table, name))
	}
	var owners []string
	for _, p := range ps {
		n, err := execSQL(ctx, p.d, fmt.Sprintf(naiveUpdateSQL, table), name, p.name)
		if err != nil {
			t.fail(p.name, "naive: UPDATE it to running, owner "+p.name, "1 row updated", err)
			return
		}
		t.add(p.name, fmt.Sprintf("naive: UPDATE it to running, owner %s (no state check)", p.name),
			"1 row updated", fmt.Sprintf("%d row updated", n))
		if n == 1 {
			owners = append(owners, p.name)
		}
	}
	t.add("—", "naive: who was told it owns the job; what the row says",
		"told: A and B; row: running, owner B",
		fmt.Sprintf("told: %s; row: %s", strings.Join(owners, " and "), naiveRead(ctx, ps[0], table, name)))
}

// naiveRead describes the naive job as p reads it from table.
func naiveRead(ctx context.Context, p *peer, table, name string) string {
	var state, owner string
	if err := scanSQL(ctx, p.d, fmt.Sprintf(naiveSelectSQL, table), []any{name}, &state, &owner); err != nil {
		return "error: " + err.Error()
	}
	if owner == "" {
		return state
	}
	return state + ", owner " + owner
}

func atomicClaim(ctx context.Context, e *env, t *timeline, ps []*peer) {
	q := e.queue("check-then-act")
	j, err := enqueue(ctx, e.c, q)
	if err != nil {
		t.fail("—", "fenced: enqueue a job", "queued", err)
		return
	}
	t.add("—", fmt.Sprintf("fenced: enqueue job %d", j.ID), "queued", string(j.State))
	for _, p := range ps {
		got, _, err := p.c.GetJob(ctx, j.ID)
		seen := "error"
		if err == nil {
			seen = string(got.State)
		}
		t.add(p.name, "fenced: read the job (is it queued?)", "queued", seen)
	}
	f := j.Fence + 1
	want := map[string]string{"A": fmt.Sprintf("job %d, fence %d", j.ID, f), "B": "nothing"}
	for _, p := range ps {
		jobs, err := p.c.ClaimJobs(ctx, q, p.name, 1, time.Minute)
		t.add(p.name, "fenced: ClaimJobs (check and claim in one statement)", want[p.name], claimed(jobs, err))
		for _, j := range jobs {
			defer p.c.CompleteJob(ctx, j.Ref(), nil)
		}
	}
	t.add("—", "fenced: read the job", fmt.Sprintf("running, attempt 1, fence %d, owner A", f), jobState(ctx, e.c, j.ID))
}
