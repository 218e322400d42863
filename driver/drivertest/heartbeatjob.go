package drivertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runHeartbeatJob: HeartbeatJob extends one current attempt and answers
// with the database clock it decided at, tells a stale attempt why (the
// backend diagnoses it), and answers a current attempt whose row its own
// transaction holds with its lease as it stands, without waiting.
func runHeartbeatJob(t *testing.T, b Backend) {
	t.Run("ExtendsFromTheDatabaseClock", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		hb, err := e.c.HeartbeatJob(ctx(t), a.Ref(), 5*time.Second)
		wantNoErr(t, err, "heartbeat")
		if !hb.Extended || hb.CancelRequested || hb.ExpiresAt.Sub(hb.DecidedAt) != 5*time.Second {
			t.Fatalf("heartbeat = %+v, want extended to 5s after its reading", hb)
		}
		got, _ := e.job(t, j.ID)
		if got.LeaseExpiresAt == nil || !got.LeaseExpiresAt.Equal(hb.ExpiresAt) {
			t.Fatalf("stored expiry %v, heartbeat said %v", got.LeaseExpiresAt, hb.ExpiresAt)
		}
		_, err = e.c.CancelJob(ctx(t), j.ID)
		wantNoErr(t, err, "cancel")
		hb, err = e.c.HeartbeatJob(ctx(t), a.Ref(), long)
		wantNoErr(t, err, "heartbeat after a cancel request")
		if !hb.Extended || !hb.CancelRequested {
			t.Fatalf("heartbeat after a cancel request = %+v", hb)
		}
	})
	t.Run("StaleAfterATakeoverIsDiagnosedAndExtendsNothing", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j, a, bj := e.takenOver(t)
		hb, err := e.c.HeartbeatJob(ctx(t), a.Ref(), long)
		wantStale(t, err, a.Fence, bj.Fence, "B", fenced.ReasonSuperseded)
		if hb != nil {
			t.Fatalf("a stale heartbeat answered %+v", hb)
		}
		var se *fenced.StaleError
		errors.As(err, &se)
		if se.DecidedAt.Before(bj.DecidedAt) {
			t.Fatalf("stale error decided at %v, before B's claim at %v", se.DecidedAt, bj.DecidedAt)
		}
		if got, _ := e.job(t, j.ID); got.Owner != "B" || !got.LeaseExpiresAt.Equal(*bj.LeaseExpiresAt) {
			t.Fatalf("A's stale heartbeat changed B's attempt: %+v", got)
		}
		_, err = e.c.HeartbeatJob(ctx(t), fenced.JobRef{ID: j.ID + 1000, Fence: 1}, long)
		wantErrIs(t, err, fenced.ErrNotFound)
	})
	t.Run("AttemptWhoseRowItsOwnTransactionHoldsIsCurrent", func(t *testing.T) {
		t.Parallel()
		if b.Name == "sqlite" {
			t.Skip("SQLite has one writer: the heartbeat waits for the transaction, then extends")
		}
		e := setup(t, b)
		other := e.b.open(t, e.url, fenced.Config{})
		e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		err := e.c.JobTx(ctx(t), a.Ref(), func(fenced.Tx) error {
			// Bounded only so that a heartbeat that waits for this
			// transaction fails instead of hanging the suite.
			hctx, cancel := context.WithTimeout(ctx(t), 10*time.Second)
			defer cancel()
			hb, err := other.HeartbeatJob(hctx, a.Ref(), time.Hour)
			if err != nil {
				t.Errorf("heartbeat while the attempt's transaction holds its row: %v", err)
				return nil
			}
			if hb.Extended || !hb.ExpiresAt.Equal(*a.LeaseExpiresAt) || hb.DecidedAt.IsZero() {
				t.Errorf("heartbeat while the row is held = %+v, want the lease as it stands (%v), not extended", hb, a.LeaseExpiresAt)
			}
			return nil
		})
		wantNoErr(t, err, "job tx")
		hb, err := e.c.HeartbeatJob(ctx(t), a.Ref(), time.Hour)
		wantNoErr(t, err, "heartbeat after the transaction")
		if !hb.Extended {
			t.Fatalf("heartbeat after the transaction = %+v, want extended", hb)
		}
	})
}
