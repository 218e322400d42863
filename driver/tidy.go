package driver

import "context"

// JobTidier is implemented by a backend whose job table needs vacuuming and
// fresh planner statistics sooner than its own background work provides
// (PostgreSQL: every claim and end leaves a dead row version, a claim's index
// scan walks those left at the queue's head until VACUUM removes them, and a
// claim planned on statistics from a nearly empty queue sorts the whole
// backlog; with autovacuum's nap of a minute an overloaded queue slows to a
// fraction of its capacity in seconds). The maintainer calls it each round.
type JobTidier interface {
	// TidyJobs vacuums the job table when it holds at least threshold dead row
	// versions, and refreshes its planner statistics when at least threshold rows
	// changed since they were taken, by the database's own statistics; it
	// reports whether it did either. A backend that may not (its role does
	// not own the table) reports false without an error.
	TidyJobs(ctx context.Context, threshold int64) (bool, error)
}
