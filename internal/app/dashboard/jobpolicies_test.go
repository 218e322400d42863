package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// A job's page shows its own timeout and retry backoff, and a job without
// them shows neither.
func TestJobPageShowsItsPolicies(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	j, _, err := e.c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Timeout: 90 * time.Second,
		Retry: &fenced.Backoff{Base: time.Second, Max: time.Minute, Jitter: 0.25}})
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := e.c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	p := newPerson(t, e.url)
	if pg := p.get(fmt.Sprintf("/jobs/%d", j.ID)); !strings.Contains(pg.body, "<dt>Timeout</dt><dd>1m30s</dd>") ||
		!strings.Contains(pg.body, "<dd>base 1s, max 1m0s, jitter 0.25</dd>") {
		t.Fatalf("the job's page does not show its policies:\n%s", pg.body)
	}
	if pg := p.get(fmt.Sprintf("/jobs/%d", plain.ID)); strings.Contains(pg.body, "<dt>Timeout</dt>") || strings.Contains(pg.body, "Retry backoff") {
		t.Fatalf("a job without policies shows some:\n%s", pg.body)
	}
}
