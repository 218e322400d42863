package drivertest

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/fenced/fenced"
)

// runHeartbeatJobs: heartbeats and ends that name the same rows in
// different orders at once never deadlock (docs/design.md §6.4).
func runHeartbeatJobs(t *testing.T, b Backend) {
	t.Run("OverlappingBatchWritesDoNotDeadlock", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for range 3 {
			overlappingBatchWrites(t, e, 200)
		}
	})
}

// overlappingBatchWrites claims n jobs, heartbeats them from two callers in
// opposite orders at once, then ends them in a shuffled order while a third
// heartbeat names them in reverse: each job's row is locked by statements
// that wait for one another, and none may fail (PostgreSQL aborts one
// statement of a deadlock).
func overlappingBatchWrites(t *testing.T, e *env, n int) {
	t.Helper()
	ps := make([]fenced.EnqueueParams, n)
	for i := range ps {
		ps[i] = fenced.EnqueueParams{Kind: "k"}
	}
	_, err := e.c.EnqueueMany(ctx(t), nil, ps)
	wantNoErr(t, err, "enqueue")
	jobs := e.claim(t, fenced.DefaultQueue, "A", n, long)
	up, down := make([]fenced.JobRef, n), make([]fenced.JobRef, n)
	ends := make([]fenced.JobEnd, n)
	for i, j := range jobs {
		up[i], down[n-1-i] = j.Ref(), j.Ref()
		ends[i] = fenced.JobEnd{Ref: j.Ref(), Kind: fenced.EndComplete}
	}
	slices.SortFunc(up, func(a, b fenced.JobRef) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(down, func(a, b fenced.JobRef) int { return cmp.Compare(b.ID, a.ID) })
	newRand().Shuffle(n, func(a, b int) { ends[a], ends[b] = ends[b], ends[a] })
	var wg sync.WaitGroup
	var hbErrs [3]error
	var endErrs []error
	var endErr error
	wg.Go(func() { _, hbErrs[0] = e.c.HeartbeatJobs(ctx(t), up, long) })
	wg.Go(func() { _, hbErrs[1] = e.c.HeartbeatJobs(ctx(t), down, long) })
	wg.Wait()
	wg.Go(func() { _, hbErrs[2] = e.c.HeartbeatJobs(ctx(t), down, long) })
	wg.Go(func() { endErrs, _, endErr = e.c.EndJobs(ctx(t), nil, ends) })
	wg.Wait()
	for i, err := range hbErrs {
		wantNoErr(t, err, fmt.Sprintf("heartbeat %d", i))
	}
	wantNoErr(t, endErr, "end jobs")
	for i, err := range endErrs {
		wantNoErr(t, err, fmt.Sprintf("end job %d", ends[i].Ref.ID))
	}
}
