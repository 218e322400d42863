package sqlitedriver

import "context"

// BackoffUS exposes backoffUS to the backend's external tests.
var BackoffUS = backoffUS

// EndJobsSQL exposes endJobsSQL, for its query plan.
var EndJobsSQL = endJobsSQL

// Where a batch end's runs and a bulk insert's statements stop.
var (
	RunOfDistinctJobs = runOfDistinctJobs
	BulkRunEnd        = bulkRunEnd
)

// RunBytes is runBytes.
const RunBytes = runBytes

// MigrateTo applies the pending migrations up to version last only.
func (d *Driver) MigrateTo(ctx context.Context, last int) ([]int, error) {
	return d.migrateTo(ctx, last)
}
