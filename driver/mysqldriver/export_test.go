package mysqldriver

// BackoffUS exposes backoffUS to the backend's external tests.
var BackoffUS = backoffUS

// ListJobsSQL exposes ListJobs' statement, for its plan test.
var ListJobsSQL = listJobs

// ClaimLimitedPick exposes the limited claim's pick, for its locking test.
var ClaimLimitedPick = claimLimitedPick
