package etcddriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// ErrJobsNotSupported is what every job-queue method returns on etcd: the
// etcd backend keeps leases, fences and resources only; the job queue
// needs a SQL backend. It matches errors.ErrUnsupported.
var ErrJobsNotSupported = fmt.Errorf("the job queue is not offered on etcd, which keeps leases, fences and resources only: use a PostgreSQL, MySQL or SQLite database for jobs: %w", errors.ErrUnsupported)

// Enqueue implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) Enqueue(context.Context, driver.Tx, []driver.EnqueueParams) ([]fencedtype.EnqueueResult, error) {
	return nil, ErrJobsNotSupported
}

// ClaimJobs implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) ClaimJobs(context.Context, driver.ClaimJobsParams) ([]*fencedtype.Job, error) {
	return nil, ErrJobsNotSupported
}

// HeartbeatJobs implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) HeartbeatJobs(context.Context, []fencedtype.JobRef, time.Duration) (*fencedtype.HeartbeatResult, error) {
	return nil, ErrJobsNotSupported
}

// HeartbeatJob implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) HeartbeatJob(context.Context, fencedtype.JobRef, time.Duration) (*fencedtype.JobHeartbeat, error) {
	return nil, ErrJobsNotSupported
}

// EndJobs implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) EndJobs(context.Context, driver.Tx, []fencedtype.JobEnd) ([]error, []fencedtype.JobEnded, error) {
	return nil, nil, ErrJobsNotSupported
}

// ReportProgress implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) ReportProgress(context.Context, fencedtype.JobRef, []byte) (time.Time, error) {
	return time.Time{}, ErrJobsNotSupported
}

// JobTx implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) JobTx(context.Context, fencedtype.JobRef, func(driver.Tx) error) error {
	return ErrJobsNotSupported
}

// CancelJob implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) CancelJob(context.Context, int64) (*fencedtype.Job, error) {
	return nil, ErrJobsNotSupported
}

// RetryJob implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) RetryJob(context.Context, int64) (*fencedtype.Job, error) {
	return nil, ErrJobsNotSupported
}

// DeleteJob implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) DeleteJob(context.Context, int64) error { return ErrJobsNotSupported }

// GetJob implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) GetJob(context.Context, int64) (*fencedtype.Job, []fencedtype.JobAttempt, error) {
	return nil, nil, ErrJobsNotSupported
}

// ListJobs implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) ListJobs(context.Context, fencedtype.JobFilter) ([]*fencedtype.Job, error) {
	return nil, ErrJobsNotSupported
}

// CountJobs implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) CountJobs(context.Context) ([]fencedtype.JobCount, error) {
	return nil, ErrJobsNotSupported
}

// RecoverJobs implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) RecoverJobs(context.Context, *driver.LeaseRef, int, fencedtype.Backoff) (int, error) {
	return 0, ErrJobsNotSupported
}

// DeleteFinishedJobs implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) DeleteFinishedJobs(context.Context, *driver.LeaseRef, time.Duration, int) (int, error) {
	return 0, ErrJobsNotSupported
}

// SetJobLimit implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) SetJobLimit(context.Context, fencedtype.JobLimit) (*fencedtype.JobLimit, error) {
	return nil, ErrJobsNotSupported
}

// DeleteJobLimit implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) DeleteJobLimit(context.Context, string, string, string) error {
	return ErrJobsNotSupported
}

// ListJobLimits implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) ListJobLimits(context.Context, string) ([]fencedtype.JobLimit, error) {
	return nil, ErrJobsNotSupported
}

// ListKeySlots implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) ListKeySlots(context.Context, string) ([]fencedtype.KeySlots, error) {
	return nil, ErrJobsNotSupported
}

// PauseQueue implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) PauseQueue(context.Context, string) (*fencedtype.QueuePause, bool, error) {
	return nil, false, ErrJobsNotSupported
}

// ResumeQueue implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) ResumeQueue(context.Context, string) (bool, error) {
	return false, ErrJobsNotSupported
}

// ListQueuePauses implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) ListQueuePauses(context.Context) ([]fencedtype.QueuePause, error) {
	return nil, ErrJobsNotSupported
}

// RollupJobMinute implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) RollupJobMinute(context.Context, time.Time, bool, time.Time) (bool, error) {
	return false, ErrJobsNotSupported
}

// ListJobMinutes implements driver.JobDriver: ErrJobsNotSupported.
func (d *Driver) ListJobMinutes(context.Context, time.Time) ([]fencedtype.JobMinute, error) {
	return nil, ErrJobsNotSupported
}
