package driver

import "github.com/fenced/fenced/fencedtype"

// DiagnoseHeartbeat answers a single-job heartbeat that extended nothing,
// given the job as read afterwards (nil when it does not exist): when ref is
// still the current running attempt with an unexpired lease by that read's
// clock, its row was held by a transaction of the attempt itself, and the
// answer is the lease as it stands (Extended false); otherwise the diagnosed
// *fencedtype.StaleError or fencedtype.ErrNotFound (DiagnoseJob).
func DiagnoseHeartbeat(ref fencedtype.JobRef, row *fencedtype.Job) (*fencedtype.JobHeartbeat, error) {
	if row != nil && row.Fence == ref.Fence && row.State == fencedtype.JobRunning &&
		row.LeaseExpiresAt != nil && row.LeaseExpiresAt.After(row.DecidedAt) {
		return &fencedtype.JobHeartbeat{ExpiresAt: *row.LeaseExpiresAt, CancelRequested: row.CancelRequested,
			DecidedAt: row.DecidedAt}, nil
	}
	return nil, DiagnoseJob(ref, row)
}
