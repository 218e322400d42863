package mysqldriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// TestPanicInFencedTxRollsBack: a panic in the caller's function (which a
// worker recovers from a handler) ends the fenced transaction at once, as
// an error does. Left open, it would keep the row share-locked until the
// context ends, and the attempt's own failure write, or a takeover, would
// wait on it.
func TestPanicInFencedTxRollsBack(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	panicking := func(run func()) {
		defer func() {
			if recover() == nil {
				t.Fatalf("fn did not panic")
			}
		}()
		run()
	}

	_, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
	must(t, err, "enqueue")
	jobs, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "A", 1, time.Minute)
	must(t, err, "claim")
	panicking(func() {
		c.JobTx(context.Background(), jobs[0].Ref(), func(fenced.Tx) error { panic("handler bug") })
	})
	short, cancel := context.WithTimeout(ctx(t), 5*time.Second)
	defer cancel()
	must(t, c.FailJob(short, jobs[0].Ref(), "panic", 0, false), "fail the attempt after a panic in its JobTx")

	l, err := c.AcquireLease(ctx(t), "lease", "A", time.Minute)
	must(t, err, "acquire")
	panicking(func() {
		c.LeaseTx(context.Background(), *l, func(fenced.Tx) error { panic("caller bug") })
	})
	short, cancel = context.WithTimeout(ctx(t), 5*time.Second)
	defer cancel()
	_, err = c.ReleaseLease(short, *l)
	must(t, err, "release after a panic in a LeaseTx")
}
