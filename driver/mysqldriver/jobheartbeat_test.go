package mysqldriver_test

import (
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/mysqldriver"
)

// TestHeartbeatReportsEachJob: one statement extends a worker's jobs; the
// read-back must tell the extended ones from a job still running under the
// caller's fence whose lease already expired, and from a forged fence.
func TestHeartbeatReportsEachJob(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	for range 3 {
		_, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
		must(t, err, "enqueue")
	}
	live, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "A", 2, time.Minute)
	must(t, err, "claim")
	late, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "A", 1, 30*time.Millisecond)
	must(t, err, "claim")
	for {
		j, _, err := c.Driver().(*mysqldriver.Driver).GetJob(ctx(t), late[0].ID)
		must(t, err, "get")
		if j.State == fenced.JobRunning && !j.LeaseExpiresAt.After(j.DecidedAt) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	forged := live[1].Ref()
	forged.Fence++
	hb, err := c.HeartbeatJobs(ctx(t), []fenced.JobRef{late[0].Ref(), live[0].Ref(), forged}, time.Minute)
	must(t, err, "heartbeat")
	if len(hb.Extended) != 1 || hb.Extended[0] != live[0].ID || len(hb.Lost) != 2 ||
		!hb.ExpiresAt.After(*live[0].LeaseExpiresAt) {
		t.Fatalf("heartbeat = %+v, want only job %d extended", hb, live[0].ID)
	}
	if j, _, _ := c.GetJob(ctx(t), live[1].ID); !j.LeaseExpiresAt.Equal(*live[1].LeaseExpiresAt) {
		t.Fatalf("the forged fence extended job %d", live[1].ID)
	}
}

// TestHeartbeatSkipsARowHeldByItsJobTx: a job whose row an open JobTx of
// its own attempt holds is reported Busy at once, not waited for, and the
// other jobs of the heartbeat are extended.
func TestHeartbeatSkipsARowHeldByItsJobTx(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	for range 2 {
		_, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
		must(t, err, "enqueue")
	}
	jobs, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "A", 2, time.Minute)
	must(t, err, "claim")
	held, release := make(chan struct{}), make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- c.JobTx(ctx(t), jobs[0].Ref(), func(fenced.Tx) error { close(held); <-release; return nil })
	}()
	<-held
	start := time.Now()
	hb, err := c.HeartbeatJobs(ctx(t), []fenced.JobRef{jobs[1].Ref(), jobs[0].Ref()}, time.Minute)
	close(release)
	must(t, err, "heartbeat")
	must(t, <-txDone, "job tx")
	if len(hb.Busy) != 1 || hb.Busy[0] != jobs[0].ID || len(hb.Extended) != 1 || hb.Extended[0] != jobs[1].ID || len(hb.Lost) != 0 {
		t.Fatalf("heartbeat = %+v, want job %d busy and %d extended", hb, jobs[0].ID, jobs[1].ID)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("the heartbeat waited %s for the transaction", waited)
	}
}
