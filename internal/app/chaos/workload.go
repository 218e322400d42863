package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenced/fenced"
)

// queue is the run's job queue.
const queue = "chaos"

// jobAttempts is each job's max_attempts: high, since a job can lose many
// attempts to pauses and kills, and one that exhausts them is failed (and
// must then have no effect).
const jobAttempts = 50

// schemaSQL creates the workload's business tables in the run's schema, in
// d's dialect: per-key counters that jobs increment, the ledger of each
// increment (the counter's value it read, n_before), and a counter per
// singleton lease bumped in fenced transactions.
func schemaSQL(o *Options, d *dialect) []string {
	qs := []string{
		fmt.Sprintf(`CREATE TABLE chaos_counters (ckey %s PRIMARY KEY, n %s NOT NULL)%s`, d.text, d.bigint, d.tableEnd),
		fmt.Sprintf(`CREATE TABLE chaos_ledger (
    id       %s,
    job_id   %s NOT NULL,
    fence    %[2]s NOT NULL,
    ckey     %s NOT NULL,
    n_before %[2]s NOT NULL,
    proc     %[3]s NOT NULL,
    at       %s)%s`, d.id, d.bigint, d.text, d.at, d.tableEnd),
		`CREATE INDEX chaos_ledger_job ON chaos_ledger (job_id)`,
		fmt.Sprintf(`CREATE TABLE chaos_lease_counters (name %s PRIMARY KEY, n %s NOT NULL)%s`, d.text, d.bigint, d.tableEnd),
	}
	for i := range o.Keys {
		qs = append(qs, fmt.Sprintf(`INSERT INTO chaos_counters VALUES ('%s', 0)`, counterKey(i)))
	}
	switch o.Workload {
	case WorkloadKeyed:
		qs = append(qs, keyedSchemaSQL(d)...)
	case WorkloadWorkflow:
		qs = append(qs, workflowSchemaSQL(d)...)
	}
	for i := range o.Leases {
		qs = append(qs, fmt.Sprintf(`INSERT INTO chaos_lease_counters VALUES ('%s', 0)`, leaseName(i)))
	}
	return qs
}

func counterKey(i int) string { return fmt.Sprintf("k%02d", i) }

// enqueuer enqueues the run's jobs at the configured rate, in batches every
// tenth of a second, until ctx ends. A batch that fails (the server is
// restarting) is dropped and the next tick enqueues a new one; its jobs may
// or may not exist, so the checkers hold every job in the database to the
// rules, and require every job the enqueuer was told about to be there.
type enqueuer struct {
	n         atomic.Int64
	mu        sync.Mutex
	ids       []int64            // jobs whose enqueue was confirmed
	workflows []enqueuedWorkflow // workflows whose enqueue was confirmed (WorkloadWorkflow)
}

// confirmed returns the ids of the jobs whose enqueue returned them.
func (e *enqueuer) confirmed() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int64{}, e.ids...)
}

// confirmedWorkflows returns the workflows whose enqueue returned them.
func (e *enqueuer) confirmedWorkflows() []enqueuedWorkflow {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]enqueuedWorkflow{}, e.workflows...)
}

func (e *enqueuer) run(ctx context.Context, r *run) {
	if r.o.Workload == WorkloadWorkflow {
		e.enqueueWorkflows(ctx, r)
		return
	}
	rng := rand.New(rand.NewPCG(r.o.Seed, 0x656e71))
	per := max(1, r.o.JobsPerSecond/10)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ps := make([]fenced.EnqueueParams, per)
		for i := range ps {
			if r.o.Workload == WorkloadKeyed {
				ps[i] = keyedParams(rng)
				continue
			}
			ps[i] = fenced.EnqueueParams{Kind: JobKind, Queue: queue, MaxAttempts: jobAttempts,
				Args: jobArgs{Key: counterKey(rng.IntN(r.o.Keys))}}
		}
		ectx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := r.c.EnqueueMany(ectx, nil, ps)
		cancel()
		if err != nil {
			r.logf("enqueue: %v", err)
			continue
		}
		e.n.Add(int64(len(res)))
		e.mu.Lock()
		for _, x := range res {
			e.ids = append(e.ids, x.Job.ID)
		}
		e.mu.Unlock()
	}
}
