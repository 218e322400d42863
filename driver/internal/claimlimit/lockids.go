package claimlimit

import (
	"hash/fnv"
	"slices"
)

// LockBuckets is how many lock ids LockIDs maps names onto. PostgreSQL
// keeps every advisory lock in its shared lock table, sized
// max_locks_per_transaction × max_connections (6,400 by default): a claim
// of a thousand keys, one lock each, would let a few concurrent claimers
// fill it ("out of shared memory"). With buckets a claim holds at most this
// many, whatever its keys.
const LockBuckets = 256

// lockSpace is the high half of every lock id: fenced's limits in
// PostgreSQL's one 64-bit advisory lock space.
const lockSpace = int64(0x66656e63) << 32 // "fenc"

// LockIDs turns lock names into lock ids, distinct and sorted, for a
// backend whose locks are numbered (PostgreSQL's advisory locks): the
// FNV-1a hash of a name picks one of LockBuckets ids. Names sharing a
// bucket share its lock: a claimer may wait more, never less.
func LockIDs(names []string) []int64 {
	ids := make([]int64, 0, len(names))
	for _, n := range names {
		h := fnv.New64a()
		h.Write([]byte("fenced-limit\x1f" + n))
		ids = append(ids, lockSpace|int64(h.Sum64()%LockBuckets))
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
