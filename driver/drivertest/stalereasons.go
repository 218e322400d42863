package drivertest

import (
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runStaleReasons: a refused write names what is actually wrong, on every
// path a holder writes through (lease renew, release and LeaseTx; a job's
// end, progress and JobTx), and changes nothing. The reasons other groups
// reach on their way (superseded, expired, released, not running) are
// asserted there; these are the ones a caller reaches with a fence or owner
// that does not match what was granted.
func runStaleReasons(t *testing.T, b Backend) {
	t.Run("LeaseOfAnotherOwnerIsWrongOwner", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		a := e.acquire(t, "job", "A", long)
		forged := *a
		forged.Owner = "B"
		for op, err := range e.leaseWrites(t, forged) {
			wantStale(t, err, 1, 1, "A", fenced.ReasonWrongOwner)
			wantCallerOwner(t, op, err, "B")
		}
		e.wantLeaseUnchanged(t, a)
		if got := e.bizRows(t, *a); len(got) != 0 {
			t.Fatalf("a LeaseTx of the wrong owner committed %v", got)
		}
	})
	t.Run("LeaseOfAnotherOwnerAfterExpiryIsWrongOwner", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		a := e.acquire(t, "job", "A", 50*time.Millisecond)
		e.waitExpired(t, "job")
		forged := *a
		forged.Owner = "B"
		for op, err := range e.leaseWrites(t, forged) {
			wantStale(t, err, 1, 1, "", fenced.ReasonWrongOwner)
			wantCallerOwner(t, op, err, "B")
		}
	})
	t.Run("FenceAboveTheCurrentOneIsNeverGranted", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		a := e.acquire(t, "job", "A", long)
		forged := *a
		forged.Fence = 2
		for _, err := range e.leaseWrites(t, forged) {
			wantStale(t, err, 2, 1, "A", fenced.ReasonNeverGranted)
		}
		e.wantLeaseUnchanged(t, a)
		if got := e.bizRows(t, forged); len(got) != 0 {
			t.Fatalf("a LeaseTx under a fence never granted committed %v", got)
		}
	})
	t.Run("FenceAboveTheCurrentOneOfAnotherOwnerIsNeverGranted", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		a := e.acquire(t, "job", "A", long)
		for _, err := range e.leaseWrites(t, fenced.Lease{Name: "job", Owner: "B", Fence: 7}) {
			wantStale(t, err, 7, 1, "A", fenced.ReasonNeverGranted)
		}
		e.wantLeaseUnchanged(t, a)
	})
	t.Run("LeaseTxAfterReleaseIsReleased", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		a := e.acquire(t, "job", "A", long)
		wantNoErr(t, errOf(e.c.ReleaseLease(ctx(t), *a)), "release")
		err := e.c.LeaseTx(ctx(t), *a, func(tx fenced.Tx) error { return e.insertBiz(tx, "late", 1) })
		wantStale(t, err, 1, 1, "", fenced.ReasonReleased)
	})
	t.Run("JobFenceAboveTheCurrentOneIsNeverGranted", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		forged := fenced.JobRef{ID: a.ID, Fence: a.Fence + 1}
		wantStale(t, e.c.CompleteJob(ctx(t), forged, nil), forged.Fence, a.Fence, "A", fenced.ReasonNeverGranted)
		wantStale(t, e.c.FailJob(ctx(t), forged, "x", 0, true), forged.Fence, a.Fence, "A", fenced.ReasonNeverGranted)
		wantStale(t, errAt(e.c.ReportProgress(ctx(t), forged, fenced.Progress{Stage: "x"})), forged.Fence, a.Fence, "A", fenced.ReasonNeverGranted)
		called := false
		err := e.c.JobTx(ctx(t), forged, func(tx fenced.Tx) error {
			called = true
			return e.insertBiz(tx, "forged", 1)
		})
		wantStale(t, err, forged.Fence, a.Fence, "A", fenced.ReasonNeverGranted)
		if called {
			t.Fatal("a JobTx under a fence never granted ran its body")
		}
		hb, err := e.c.HeartbeatJobs(ctx(t), []fenced.JobRef{forged}, long)
		wantNoErr(t, err, "heartbeat")
		if len(hb.Lost) != 1 || len(hb.Extended) != 0 {
			t.Fatalf("heartbeat under a fence never granted = %+v, want lost", hb)
		}
		got, _ := e.job(t, a.ID)
		if got.State != fenced.JobRunning || got.Fence != a.Fence || got.Owner != "A" || len(got.Progress) != 0 ||
			!got.LeaseExpiresAt.Equal(*a.LeaseExpiresAt) {
			t.Fatalf("writes under a fence never granted changed the job: %+v, claimed %+v", got, a)
		}
		wantNoErr(t, e.c.CompleteJob(ctx(t), a.Ref(), nil), "complete by the real attempt")
	})
}

// leaseWrites tries every write a holder of l makes (renew, release, and a
// LeaseTx whose body must not run) and returns their errors by name.
func (e *env) leaseWrites(t *testing.T, l fenced.Lease) map[string]error {
	t.Helper()
	out := map[string]error{}
	_, out["renew"] = e.c.RenewLease(ctx(t), l, long)
	_, out["release"] = e.c.ReleaseLease(ctx(t), l)
	called := false
	out["lease tx"] = e.c.LeaseTx(ctx(t), l, func(tx fenced.Tx) error {
		called = true
		return e.insertBiz(tx, "refused", 1)
	})
	if called {
		t.Fatalf("LeaseTx of %+v ran its body", l)
	}
	return out
}

// wantCallerOwner asserts a stale error names the owner the caller claimed.
func wantCallerOwner(t *testing.T, op string, err error, owner string) {
	t.Helper()
	var se *fenced.StaleError
	if !errors.As(err, &se) || se.Owner != owner {
		t.Fatalf("%s: stale error %+v does not name the caller's owner %q", op, se, owner)
	}
}

// wantLeaseUnchanged asserts the lease is still the generation l, held.
func (e *env) wantLeaseUnchanged(t *testing.T, l *fenced.Lease) {
	t.Helper()
	got, err := e.c.GetLease(ctx(t), l.Name)
	wantNoErr(t, err, "get")
	if !got.Held || got.Released || got.Owner != l.Owner || got.Fence != l.Fence || !got.ExpiresAt.Equal(l.ExpiresAt) {
		t.Fatalf("refused writes changed the lease: %+v, want %+v", got, l)
	}
}
