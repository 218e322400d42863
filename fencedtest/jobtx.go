package fencedtest

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runJobLocks checks the row locks of the job queue (design §5.1, §6): a
// claim skips rows other transactions hold instead of waiting for them, and
// while a job-fenced transaction is open its attempt cannot be taken back
// and re-claimed, so what it commits was written under a current fence.
func runJobLocks(t *testing.T, b Backend) {
	t.Run("ClaimSkipsARowLockedByAnotherTransaction", func(t *testing.T) {
		t.Parallel()
		if b.Name == "sqlite" {
			t.Skip("SQLite has one writer: nothing to skip, a claim waits for the write lock")
		}
		e := setup(t, b)
		other := e.b.open(t, e.url, fenced.Config{})
		first := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Priority: 0})
		second := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Priority: 1})
		l := e.acquire(t, "locker", "L", long)
		err := e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
			rows, err := tx.Query(ctx(t), e.b.bind(`SELECT id FROM fenced_jobs WHERE id = $1 FOR UPDATE`), first.ID)
			if err != nil {
				return err
			}
			rows.Close()
			cctx, cancel := context.WithTimeout(ctx(t), 5*time.Second)
			defer cancel()
			jobs, err := other.ClaimJobs(cctx, fenced.DefaultQueue, "B", 1, long)
			if err != nil {
				t.Errorf("claim while another transaction holds the first job's row: %v (did it wait instead of skipping?)", err)
				return nil
			}
			if len(jobs) != 1 || jobs[0].ID != second.ID {
				t.Errorf("claim while the first job's row is locked got %d jobs %v, want job %d", len(jobs), jobs, second.ID)
			}
			return nil
		})
		wantNoErr(t, err, "lease tx")
	})
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
