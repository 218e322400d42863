package drivertest

import (
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runJobTx: while a job-fenced transaction is open its attempt cannot be
// taken back and re-claimed, so what it commits was written under a current
// fence (docs/design.md §5.1, §6.4).
func runJobTx(t *testing.T, b Backend) {
	t.Run("AttemptIsNotTakenOverWhileItsJobTxIsOpen", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		other := e.b.open(t, e.url, fenced.Config{})
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		ttl := 2 * time.Second // long enough that the guard below runs well inside it
		a := e.claimOne(t, "A", ttl)
		type takeover struct {
			jobs []*fenced.Job
			err  error
		}
		done := make(chan takeover, 1)
		err := e.c.JobTx(ctx(t), a.Ref(), func(tx fenced.Tx) error {
			if err := e.insertBiz(tx, "A", 1); err != nil {
				return err
			}
			// Let the attempt's lease run out by the database clock while
			// the transaction stays open.
			deadline := time.Now().Add(10 * time.Second)
			for {
				now, err := other.DatabaseTime(ctx(t))
				if err != nil {
					return err
				}
				if now.After(a.LeaseExpiresAt.Add(100 * time.Millisecond)) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("database clock never passed the attempt's lease")
				}
				time.Sleep(20 * time.Millisecond)
			}
			go func() {
				_, err := other.RecoverJobs(ctx(t), nil, 100, fenced.Backoff{Base: time.Microsecond, Max: time.Microsecond})
				if err != nil {
					done <- takeover{err: err}
					return
				}
				time.Sleep(10 * time.Millisecond) // past the 1µs backoff
				jobs, err := other.ClaimJobs(ctx(t), fenced.DefaultQueue, "B", 1, long)
				done <- takeover{jobs: jobs, err: err}
			}()
			// Either the recovery waits for this transaction (one writer) or
			// it leaves the attempt alone; it must not take the job back and
			// hand it to B while this transaction can still commit.
			select {
			case r := <-done:
				if r.err != nil {
					t.Errorf("recover and claim: %v", r.err)
				} else if len(r.jobs) != 0 {
					t.Errorf("job %d re-claimed (fence %d) while attempt %d's transaction was open", j.ID, r.jobs[0].Fence, a.Fence)
				}
				done <- r
			case <-time.After(time.Second):
			}
			return nil
		})
		wantNoErr(t, err, "job tx")
		r := <-done
		if r.err != nil {
			t.Fatalf("recover and claim: %v", r.err)
		}
		if got := e.bizRows(t, fenced.Lease{Name: "job-tx"}); got["A"] != 1 {
			t.Fatalf("business rows = %v, want A's write", got)
		}
	})
}
