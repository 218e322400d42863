//go:build !fenced_broken_limits

package mysqldriver

// claimableSQL is the limited pick's pre-filter: the job row aliased j is
// not blocked by its sequence and its key is not full. Read before the
// locks, it only saves picking jobs that cannot be admitted: the admission
// decides on the load read after them. It is a constant of its own only so
// that the chaos suite can show its checkers catch a build without it (the
// build tag fenced_broken_limits, see limitcheck_broken.go).
const claimableSQL = claimableNoFullSQL + `
    AND ` + notFullSQL

// claimableNoFullSQL is the pre-filter of a pick without the full keys
// (Driver.noFullKeys): the job row aliased j is not blocked by its
// sequence.
const claimableNoFullSQL = `NOT ` + sequenceBlockedSQL
