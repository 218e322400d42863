package mysqldriver

// BackoffUS exposes backoffUS to the backend's external tests.
var BackoffUS = backoffUS

// ListJobsSQL exposes ListJobs' statement, for its plan test.
var ListJobsSQL = listJobs

// ClaimLimitedPick exposes the limited claim's pick, for its locking test.
var ClaimLimitedPick = claimLimitedPick

// Durability exposes the server settings Open checks, ReadDurability how
// it reads them, and DurabilityRefusal its decision on them.
type Durability = durability

var ReadDurability = readDurability

func DurabilityRefusal(d Durability) error { return d.refusal() }
