package pgdriver

import (
	"context"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/jackc/pgx/v5"
)

// BackoffUS exposes backoffUS to the backend's external tests.
var BackoffUS = backoffUS

// The claim's statements, for plan tests.
var (
	ClaimJobsAnyKindSQL        = claimJobsSQL
	ClaimLanesSQL              = claimLanesSQL
	ClaimLimitedPickAnyKindSQL = claimLimitedPickAnyKindSQL

	ClaimLimitedPickAnyKindNoFullSQL = claimLimitedPickAnyKindNoFullSQL
)

// DeleteFinishedJobsSQL is retention's statement, for its plan test.
var DeleteFinishedJobsSQL = deleteFinishedJobsSQL

// The statements that read a batch of attempts by id, for their plan test.
var (
	EndJobsSQL       = endJobsSQL
	EndCompletesSQL  = endCompletesSQL
	HeartbeatJobsSQL = heartbeatJobsSQL
	JobCurrentSQL    = jobCurrentSQL
)

// EnqueueInLanesTx enters the lanes of jobs and inserts them in tx, as an
// enqueue on its own transaction does, but leaves the commit to the caller:
// a test holds the enqueue open between its seq and its commit.
func EnqueueInLanesTx(ctx context.Context, tx pgx.Tx, jobs []driver.EnqueueParams) error {
	le, _ := lanesOf(jobs)
	b := &pgx.Batch{}
	queueLaneEntry(b, le)
	args, _ := enqueueArgs(jobs)
	b.Queue(enqueueStatement(jobs, false, false), append(args, sequencedRows(jobs))...)
	return tx.SendBatch(ctx, b).Close()
}

// SetSweepMargin sets recovery's sweep margin and returns what puts it back.
func SetSweepMargin(m time.Duration) func() {
	old := sweepMargin
	sweepMargin = m
	return func() { sweepMargin = old }
}

// DueFullSweep makes d's next recovery sweep a full one.
func (d *Driver) DueFullSweep() {
	d.sweep.mu.Lock()
	defer d.sweep.mu.Unlock()
	d.sweep.lastFull = time.Time{}
}

// SetLaneMarkEvery sets how long claims may go without waiting for their
// lane locks, and returns what puts it back.
func SetLaneMarkEvery(every time.Duration) func() {
	old := laneMarkEvery
	laneMarkEvery = every
	return func() { laneMarkEvery = old }
}
