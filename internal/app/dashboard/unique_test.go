package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/app/dashboard"
)

// TestRetryOfAUniqueJobThatWouldCollide: the retry action on a failed
// unique job whose slot a newer job holds is refused (409), names the
// holder, and leaves the job failed.
func TestRetryOfAUniqueJobThatWouldCollide(t *testing.T) {
	t.Parallel()
	e := setupWith(t, nil, dashboard.Options{})
	ctx := context.Background()
	p := fenced.EnqueueParams{Kind: "u", Queue: "q-u", MaxAttempts: 1,
		Unique: &fenced.UniqueOptions{ByState: []fenced.JobState{fenced.JobQueued, fenced.JobRunning}}}
	old, _, err := e.c.Enqueue(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.c.ClaimJobs(ctx, "q-u", "w", 1, time.Minute)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %v %v", got, err)
	}
	if err := e.c.FailJob(ctx, got[0].Ref(), "boom", 0, false); err != nil {
		t.Fatal(err)
	}
	newer, _, err := e.c.Enqueue(ctx, p)
	if err != nil || newer.ID == old.ID {
		t.Fatalf("newer job: %v %v", newer, err)
	}
	person := newPerson(t, e.url)
	pg := person.confirm(fmt.Sprintf("action=retry&job=%d", old.ID))
	if want := fmt.Sprintf("job #%d holds its slot", newer.ID); pg.status != 409 || !strings.Contains(pg.body, want) {
		t.Fatalf("retry = %d, want 409 saying %q:\n%s", pg.status, want, pg.body)
	}
	if j, _, _ := e.c.GetJob(ctx, old.ID); j.State != fenced.JobFailed {
		t.Fatalf("after the refused retry: %s", j.State)
	}
}
