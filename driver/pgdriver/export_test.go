package pgdriver

// BackoffUS exposes backoffUS to the backend's external tests.
var BackoffUS = backoffUS

// The claim's statements, for plan tests.
var (
	ClaimJobsAnyKindSQL        = claimJobsAnyKindSQL
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
