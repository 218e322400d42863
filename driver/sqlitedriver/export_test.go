package sqlitedriver

// BackoffUS exposes backoffUS to the backend's external tests.
var BackoffUS = backoffUS

// EndJobsSQL exposes endJobsSQL, for its query plan.
var EndJobsSQL = endJobsSQL
