package drivertest

import (
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runRollupJobMinutes: a rollup counts each queue's finished jobs by
// state, its retried and lost attempts, and the claim waits of its
// finished jobs, in the minute they happened; the newest minute gets the
// queue depths; each minute is rolled up once however many callers race,
// and a minute without jobs still gets its marker.
func runRollupJobMinutes(t *testing.T, b Backend) {
	if b.Backdate == nil {
		t.Skip("the backend's tests give no Backdate")
	}
	e := setup(t, b)
	// a: one succeeds, one fails and is queued again, one waits.
	// b: one fails for good, one is recovered after its lease ran out
	// (lost) and failed, having no attempt left, one waits.
	a := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "a", MaxAttempts: 3})
	a2 := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "a", MaxAttempts: 3})
	e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "a"})
	b1 := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "b", MaxAttempts: 1})
	b2 := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "b", MaxAttempts: 1})
	e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "b"})
	ca := e.claim(t, "a", "W", 2, long)
	cb := append(e.claim(t, "b", "W", 1, long), e.claim(t, "b", "W", 1, 30*time.Millisecond)...)
	if len(ca) != 2 || ca[0].ID != a.ID || ca[1].ID != a2.ID || len(cb) != 2 || cb[0].ID != b1.ID || cb[1].ID != b2.ID {
		t.Fatalf("claims took %v and %v", ids(ca), ids(cb))
	}
	wantNoErr(t, e.c.CompleteJob(ctx(t), ca[0].Ref(), nil), "complete")
	wantNoErr(t, e.c.FailJob(ctx(t), ca[1].Ref(), "again", time.Hour, false), "fail to retry")
	wantNoErr(t, e.c.FailJob(ctx(t), cb[0].Ref(), "no", 0, true), "fail for good")
	if j := e.recoverExpired(t, b2.ID); j.State != fenced.JobFailed {
		t.Fatalf("recovered job %d is %s, want failed", b2.ID, j.State)
	}

	// It all happened three minutes ago: the rollup's newest minute is
	// after it, and its minute is within the hour the rollup fills.
	b.Backdate(t, e.url, 3*time.Minute)
	var wg sync.WaitGroup
	var mu sync.Mutex
	rolled := 0
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := b.open(t, e.url, fenced.Config{})
			n, err := c.RollupJobMinutes(ctx(t))
			wantNoErr(t, err, "rollup")
			mu.Lock()
			rolled += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	// A rollup can run just as a minute ends: then a racer rolls up the
	// new one too.
	if perHour := int(fenced.RollupBack / time.Minute); rolled != perHour && rolled != perHour+1 {
		t.Fatalf("three racing rollups rolled up %d minutes, want %d (each once)", rolled, perHour)
	}
	n, err := e.c.RollupJobMinutes(ctx(t))
	if err != nil || n > 1 {
		t.Fatalf("a rollup after them rolled up %d minutes (%v), want none (or the next one)", n, err)
	}
	// Rollups that straddled the end of a minute gave a depth to the minute
	// that was the newest when they began, and to the next.
	straddled := rolled != int(fenced.RollupBack/time.Minute) || n == 1

	now, err := e.c.DatabaseTime(ctx(t))
	wantNoErr(t, err, "database time")
	rows, err := e.c.ListJobMinutes(ctx(t), now.Add(-2*fenced.RollupBack))
	wantNoErr(t, err, "list job minutes")
	type sums struct{ succeeded, failed, cancelled, retried, lost, waits int64 }
	got := map[string]*sums{}
	markers := map[int64]bool{}
	depth := map[string]int64{}
	var newest time.Time
	for _, r := range rows {
		if r.Minute.Second() != 0 || r.Minute.Nanosecond() != 0 {
			t.Fatalf("row of %s is not at a whole minute", r.Minute)
		}
		if r.Queue == "" {
			if markers[r.Minute.Unix()] {
				t.Fatalf("minute %s has two markers", r.Minute)
			}
			markers[r.Minute.Unix()] = true
			if r.Minute.After(newest) {
				newest, depth[""] = r.Minute, r.Depth
			}
			continue
		}
		s := got[r.Queue]
		if s == nil {
			s = &sums{}
			got[r.Queue] = s
		}
		s.succeeded += r.Succeeded
		s.failed += r.Failed
		s.cancelled += r.Cancelled
		s.retried += r.Retried
		s.lost += r.Lost
		for _, n := range r.Waits {
			s.waits += n
		}
		if r.Depth >= 0 {
			depth[r.Queue] = r.Depth
		}
	}
	if len(markers) < len(rows)/3 || len(markers) < int(fenced.RollupBack/time.Minute) {
		t.Fatalf("%d minutes marked among %d rows", len(markers), len(rows))
	}
	want := map[string]sums{"a": {succeeded: 1, retried: 1, waits: 1}, "b": {failed: 2, lost: 1, waits: 2}}
	for q, w := range want {
		if got[q] == nil || *got[q] != w {
			t.Fatalf("queue %s rolled up as %+v, want %+v", q, got[q], w)
		}
	}
	// Depth is of the newest minute only: a has the retried job and the
	// waiting one queued, b the waiting one; the marker has their total.
	if depth["a"] != 2 || depth["b"] != 1 || depth[""] != 3 {
		t.Fatalf("depths %v, want a 2, b 1 and the marker 3", depth)
	}
	for _, r := range rows {
		if r.Depth >= 0 && !r.Minute.Equal(newest) && !(straddled && r.Minute.Equal(newest.Add(-time.Minute))) {
			t.Fatalf("minute %s of %s has a depth, but only the newest (%s) may", r.Minute, r.Queue, newest)
		}
	}
}
