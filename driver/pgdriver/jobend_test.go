package pgdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/test/testdb"
)

// Two ends of the same attempt in one batch: only one can take effect, so
// only one may be reported written; the other is stale (the job is no
// longer running), never a success for a write that did not happen.
func TestEndJobsTwoEndsOfOneAttempt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := migrated(t, testdb.Postgres(t))
	if _, err := d.Enqueue(ctx, nil, []driver.EnqueueParams{{Kind: "k", Queue: "q", Args: []byte(`{}`), MaxAttempts: 3}}); err != nil {
		t.Fatal(err)
	}
	jobs, err := d.ClaimJobs(ctx, driver.ClaimJobsParams{Queue: "q", Owner: "A", Limit: 1, TTL: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	ref := fencedtype.JobRef{ID: jobs[0].ID, Fence: jobs[0].Fence}
	errs, _, err := d.EndJobs(ctx, nil, []fencedtype.JobEnd{
		{Ref: ref, Kind: fencedtype.EndComplete, Output: []byte(`"first"`)},
		{Ref: ref, Kind: fencedtype.EndComplete, Output: []byte(`"second"`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	j, _, err := d.GetJob(ctx, ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for i, e := range errs {
		if e == nil {
			ok++
			if want := []string{`"first"`, `"second"`}[i]; string(j.Output) != want {
				t.Errorf("end %d reported written, but the output stored is %s", i, j.Output)
			}
		}
	}
	if ok != 1 {
		t.Fatalf("%d of 2 ends reported written (%v); the job is %s with output %s", ok, errs, j.State, j.Output)
	}
}
