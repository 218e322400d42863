package pgdriver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
)

// TestClaimPauseProbeRunsOncePerStatement: the pause check of the claim
// and of the limited pick is planned as an InitPlan tested by a one-time
// filter: one primary-key probe per statement, and on a paused queue the
// job table is not read at all.
func TestClaimPauseProbeRunsOncePerStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := migratedClient(t)
	for range 3 {
		if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: "paused"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.PauseQueue(ctx, "paused"); err != nil {
		t.Fatal(err)
	}
	pool := c.Driver().(*pgdriver.Driver).Pool()
	for _, s := range []struct {
		name, sql string
		args      []any
	}{
		{"claim", pgdriver.ClaimJobsAnyKindSQL, []any{"paused", "w", 10, int64(60_000_000)}},
		{"limited pick", pgdriver.ClaimLimitedPickAnyKindSQL, []any{"paused", 36}},
		{"limited pick without full keys", pgdriver.ClaimLimitedPickAnyKindNoFullSQL, []any{"paused", 36}},
	} {
		plan := explain(t, pool, "ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF", "", s.sql, s.args...)
		text := strings.Join(plan, "\n")
		probe := false
		for i, line := range plan {
			if strings.Contains(line, "InitPlan") && i+1 < len(plan) && strings.Contains(plan[i+1], "fenced_queue_pauses") &&
				strings.Contains(plan[i+1], "loops=1)") {
				probe = true
			}
		}
		if !probe || !strings.Contains(text, "One-Time Filter: (NOT ") {
			t.Errorf("%s: the pause probe is not a one-time InitPlan:\n%s", s.name, text)
		}
		for _, line := range plan {
			if strings.Contains(line, " on fenced_jobs") && !strings.Contains(line, "never executed") &&
				!strings.Contains(line, "rows=0 loops=1") {
				t.Errorf("%s: a paused queue's claim read the job table:\n%s", s.name, text)
				break
			}
		}
		t.Logf("%s on a paused queue:\n%s", s.name, text)
	}
}

// TestResumeNotifiesOtherClients: a resume notifies the queue as an enqueue
// does, so the idle worker of another Client, polling once an hour, runs
// the queue's job at once.
func TestResumeNotifiesOtherClients(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, workers := twoClients(t)
	if _, _, err := admin.PauseQueue(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := admin.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: "held"}); err != nil {
		t.Fatal(err)
	}
	w, err := workers.NewWorker(fenced.WorkerConfig{Queues: map[string]int{"held": 1}, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	w.Handle("k", func(context.Context, *fenced.JobRun) error { close(done); return nil })
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	select {
	case <-done:
		t.Fatal("a job of a paused queue ran")
	case <-time.After(300 * time.Millisecond): // the worker claimed nothing and waits
	}
	if resumed, err := admin.ResumeQueue(ctx, "held"); err != nil || !resumed {
		t.Fatalf("resume = %v, %v", resumed, err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the other Client's worker was not woken by the resume")
	}
}
