package sqlitedriver

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
