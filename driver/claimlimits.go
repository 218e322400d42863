package driver

import (
	"fmt"
	"hash/fnv"
	"slices"
)

// The claim under concurrency limits and sequences (docs/design.md,
// "Concurrency limits and sequences"). Each backend's ClaimJobs first runs
// its single claim statement, which claims as before unless one of the jobs
// it picked has a concurrency or sequence key, or the queue has a global
// limit; then (and only then) the claim goes the limited way, in one
// transaction:
//
//  1. pick up to ClaimWindow(limit) eligible queued jobs in claim order,
//     skipping those JobClaimableSQL rules out (a full key, a blocked
//     sequence), and lock them (skipping rows other claimers hold);
//  2. serialize with every other limited claimer of the same keys: take,
//     in the order of LimitLockNames, a lock per concurrency key, per
//     sequence key and, when the queue has a global limit, per queue;
//  3. read afresh, after the locks (a new statement, a new snapshot), how
//     many attempts of each key, kind and queue are running and which
//     candidates' sequences are still blocked (JobClaimLoadSQL);
//  4. admit candidates in claim order with AdmitClaims and start them.
//
// A claimer that admits a job commits its running row before it releases
// its locks, so the next claimer of that key counts it. Unadmitted
// candidates stay queued.

// jobKeyLimitSQL is the per-key limit that applies to the job row aliased
// j, when it has a concurrency key: the key's own override, else the
// default of the job's kind, else the queue's; %s when none is declared.
// A limit of 0 declares none at its scope, so the next scope is asked.
// Valid on every backend.
const jobKeyLimitSQL = `COALESCE(
    ` + keyOwnLimitSQL + `,
    (SELECT NULLIF(l.per_key_limit, 0) FROM fenced_job_limits l
        WHERE l.queue = j.queue AND l.kind = j.kind AND l.concurrency_key = ''),
    ` + queueKeyLimitSQL + `,
    %s)`

// JobKeyLimitSQL is the per-key limit that applies to the job row aliased
// j with a concurrency key (jobKeyLimitSQL), 0 when none is declared.
var JobKeyLimitSQL = fmt.Sprintf(jobKeyLimitSQL, "0")

// keyOwnLimitSQL is the own limit of the concurrency key of the row aliased
// j in its queue, NULL when none is declared.
const keyOwnLimitSQL = `(SELECT NULLIF(l.per_key_limit, 0) FROM fenced_job_limits l
        WHERE l.queue = j.queue AND l.kind = '' AND l.concurrency_key = j.concurrency_key)`

// queueKeyLimitSQL is the default per-key limit of the queue of the row
// aliased j, NULL when none is declared.
const queueKeyLimitSQL = `(SELECT NULLIF(l.per_key_limit, 0) FROM fenced_job_limits l
        WHERE l.queue = j.queue AND l.kind = '' AND l.concurrency_key = '')`

// JobKeyRunningSQL counts the running attempts of the concurrency key of
// the job row aliased j, in its queue. Expired attempts not yet recovered
// are running and count: their slot frees only when recovery takes the job
// back. Valid on every backend.
const JobKeyRunningSQL = `(SELECT COUNT(*) FROM fenced_jobs r
    WHERE r.state = 'running' AND r.queue = j.queue AND r.concurrency_key = j.concurrency_key)`

// JobSequenceBlockedSQL is true when the job row aliased j has a sequence
// key and may not run yet: a job of its sequence is running, or an earlier
// one (by id) is queued, or failed without sequence_continue_on_failed.
// A cancelled or succeeded job does not block. Valid on every backend.
const JobSequenceBlockedSQL = `(j.sequence_key IS NOT NULL AND EXISTS (SELECT 1 FROM fenced_jobs s
    WHERE s.queue = j.queue AND s.sequence_key = j.sequence_key AND s.state IN ('queued', 'running', 'failed')
    AND s.id <> j.id
    AND (s.state = 'running' OR (s.id < j.id AND (s.state = 'queued' OR NOT s.sequence_continue_on_failed)))))`

// JobClaimableSQL is the pick's pre-filter: the job row aliased j is not
// blocked by its sequence and its concurrency key is not full. Read before
// the locks, it only saves picking jobs that cannot be admitted; the
// admission decides on JobClaimLoadSQL's fresh reads.
// The deliberately broken build (fenced_broken_limits) filters nothing.
var JobClaimableSQL = claimable()

func claimable() string {
	if !LimitsEnforced {
		return `1 = 1`
	}
	return `NOT ` + JobSequenceBlockedSQL + `
    AND (j.concurrency_key IS NULL OR ` + JobKeyRunningSQL + ` < ` + fmt.Sprintf(jobKeyLimitSQL, "2147483647") + `)`
}

// FullKeysCTE defines, for a claim's pick of queue $1, full_keys: the
// concurrency keys of the queue whose running attempts reach a limit, each
// with the kinds it is full for: NULL when the key's own limit is reached
// (full for every kind); else, for each default of the queue the count
// reaches, the default's kind, or the empty kind for the queue's own
// default (full for the kinds that declare none); and kind_key_defaults:
// the kinds of the queue that declare a per-key default. The running rows
// are read once per pick, by their index, and joined to the queue's limits
// rather than probing them per key. Valid on PostgreSQL; MySQL rewrites
// the running read onto its key column.
const FullKeysCTE = `full_keys AS (
    SELECT n.concurrency_key, d.kind FROM (
        SELECT r.concurrency_key, count(*) AS n FROM fenced_jobs r
        WHERE r.state = 'running' AND r.queue = $1 AND r.concurrency_key IS NOT NULL
        GROUP BY r.concurrency_key) n
    LEFT JOIN fenced_job_limits o
        ON o.queue = $1 AND o.kind = '' AND o.concurrency_key = n.concurrency_key AND o.per_key_limit > 0
    LEFT JOIN fenced_job_limits d
        ON o.queue IS NULL AND d.queue = $1 AND d.concurrency_key = '' AND d.per_key_limit > 0
    WHERE n.n >= COALESCE(o.per_key_limit, d.per_key_limit)),
kind_key_defaults AS (
    SELECT d.kind FROM fenced_job_limits d
    WHERE d.queue = $1 AND d.concurrency_key = '' AND d.kind <> '' AND d.per_key_limit > 0)`

// FullKeysTestSQL is true when the keyed job row aliased j is not made
// unclaimable by FullKeysCTE's sets: it passes exactly when j's key is
// under the limit that applies to j (JobKeyLimitSQL), as the sets were
// read. Each test reads a set as a whole (a hashed or materialized
// subquery), not per job.
const FullKeysTestSQL = `j.concurrency_key NOT IN (SELECT concurrency_key FROM full_keys WHERE kind IS NULL)
        AND (j.concurrency_key, j.kind) NOT IN (SELECT concurrency_key, kind FROM full_keys WHERE kind <> '')
        AND NOT (j.concurrency_key IN (SELECT concurrency_key FROM full_keys WHERE kind = '')
            AND j.kind NOT IN (SELECT kind FROM kind_key_defaults))`

// JobClaimLoadColumns are the columns JobClaimLoadSQL-style reads return per
// candidate row aliased j, in ScanClaimCandidate's order: id, kind,
// concurrency key, sequence key, the key's limit (0 none), the key's
// running attempts, whether its sequence is blocked.
var JobClaimLoadColumns = `j.id, j.kind, COALESCE(j.concurrency_key, ''), COALESCE(j.sequence_key, ''),
    CASE WHEN j.concurrency_key IS NULL THEN 0 ELSE ` + JobKeyLimitSQL + ` END,
    CASE WHEN j.concurrency_key IS NULL THEN 0 ELSE ` + JobKeyRunningSQL + ` END,
    CASE WHEN ` + JobSequenceBlockedSQL + ` THEN 1 ELSE 0 END`

// JobGlobalLimitsSQL reads the global limits of queue $1: kind (empty for the
// whole queue) and limit. Placeholder $1 is rewritten by each backend.
const JobGlobalLimitsSQL = `SELECT kind, global_limit FROM fenced_job_limits
WHERE queue = $1 AND concurrency_key = '' AND global_limit > 0`

// JobRunningByKindSQL counts the running jobs of queue $1 by kind.
const JobRunningByKindSQL = `SELECT kind, COUNT(*) FROM fenced_jobs WHERE state = 'running' AND queue = $1 GROUP BY kind`

// ClaimCandidate is a locked candidate of a limited claim as read after the
// claimer's locks.
type ClaimCandidate struct {
	ID             int64
	Kind           string
	ConcurrencyKey string // "" for none
	SequenceKey    string // "" for none
	KeyLimit       int    // the limit that applies to the job's key; 0 none
	KeyRunning     int    // running attempts of the key
	Blocked        bool   // its sequence is blocked
}

// ScanClaimCandidate scans a row of JobClaimLoadColumns.
func ScanClaimCandidate(r Row) (ClaimCandidate, error) {
	var c ClaimCandidate
	var blocked int
	err := r.Scan(&c.ID, &c.Kind, &c.ConcurrencyKey, &c.SequenceKey, &c.KeyLimit, &c.KeyRunning, &blocked)
	c.Blocked = blocked != 0
	return c, err
}

// ClaimLoad is what a limited claim reads of its queue after its locks: the
// global limits (0 none) and the running jobs they bound.
type ClaimLoad struct {
	QueueGlobal  int
	QueueRunning int
	KindGlobal   map[string]int
	KindRunning  map[string]int
}

// AddGlobal records a row of JobGlobalLimitsSQL.
func (l *ClaimLoad) AddGlobal(kind string, limit int) {
	if kind == "" {
		l.QueueGlobal = limit
		return
	}
	if l.KindGlobal == nil {
		l.KindGlobal = map[string]int{}
	}
	l.KindGlobal[kind] = limit
}

// AddRunning records a row of JobRunningByKindSQL.
func (l *ClaimLoad) AddRunning(kind string, n int) {
	if l.KindRunning == nil {
		l.KindRunning = map[string]int{}
	}
	l.KindRunning[kind] += n
	l.QueueRunning += n
}

// HasGlobal reports whether the queue has a global limit of any scope.
func (l *ClaimLoad) HasGlobal() bool { return l.QueueGlobal > 0 || len(l.KindGlobal) > 0 }

// ClaimWindow is how many candidates a limited claim of limit jobs picks:
// more than limit, since some of a key's candidates may be over its limit.
func ClaimWindow(limit int) int { return limit*2 + 16 }

// AdmitClaims chooses, among cands in claim order, the jobs a limited claim
// of at most limit jobs starts: a candidate is admitted while its key's
// running attempts plus those admitted before it in this claim stay below
// the key's limit, the queue's and its kind's global limits likewise, and
// at most one job per sequence (its head, unblocked). The caller must have
// read cands and load after taking the locks of LimitLockNames.
func AdmitClaims(cands []ClaimCandidate, load ClaimLoad, limit int) []int64 {
	var out []int64
	keys, kinds, seqs := map[string]int{}, map[string]int{}, map[string]bool{}
	for _, c := range cands {
		if len(out) == limit {
			break
		}
		if !LimitsEnforced {
			out = append(out, c.ID)
			continue
		}
		if c.SequenceKey != "" {
			if seqs[c.SequenceKey] || c.Blocked {
				seqs[c.SequenceKey] = true
				continue
			}
			seqs[c.SequenceKey] = true
		}
		if load.QueueGlobal > 0 && load.QueueRunning+len(out) >= load.QueueGlobal {
			break
		}
		if g := load.KindGlobal[c.Kind]; g > 0 && load.KindRunning[c.Kind]+kinds[c.Kind] >= g {
			continue
		}
		if c.ConcurrencyKey != "" && c.KeyLimit > 0 && c.KeyRunning+keys[c.ConcurrencyKey] >= c.KeyLimit {
			continue
		}
		out = append(out, c.ID)
		keys[c.ConcurrencyKey]++
		kinds[c.Kind]++
	}
	return out
}

// LimitLockNames are the names of the locks a limited claim of queue takes
// before it reads the load of its candidates, distinct and sorted: one per
// concurrency key and per sequence key among them and, when the queue has a
// global limit, one for the queue. Every limited claimer takes its locks in
// this order, so two never wait for each other in a cycle. None in the
// deliberately broken build (fenced_broken_limits).
func LimitLockNames(queue string, cands []ClaimCandidate, global bool) []string {
	if !LimitsEnforced {
		return nil
	}
	var names []string
	if global {
		names = append(names, "g\x1f"+queue)
	}
	for _, c := range cands {
		if c.ConcurrencyKey != "" {
			names = append(names, "k\x1f"+queue+"\x1f"+c.ConcurrencyKey)
		}
		if c.SequenceKey != "" {
			names = append(names, "s\x1f"+queue+"\x1f"+c.SequenceKey)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// LimitLockBuckets is how many lock ids LimitLockIDs maps names onto.
// PostgreSQL keeps every advisory lock in its shared lock table, sized
// max_locks_per_transaction × max_connections (6,400 by default): a claim of
// a thousand jobs of a thousand keys, one lock each, would let a few
// concurrent claimers fill it ("out of shared memory"). With buckets a
// claim holds at most this many, whatever its keys.
const LimitLockBuckets = 256

// limitLockSpace is the high half of every lock id: fenced's limits in
// PostgreSQL's one 64-bit advisory lock space.
const limitLockSpace = int64(0x66656e63) << 32 // "fenc"

// LimitLockIDs turns lock names into lock ids, distinct and sorted, for a
// backend whose locks are numbered (PostgreSQL's advisory locks): the
// FNV-1a hash of a name picks one of LimitLockBuckets ids. Names sharing a
// bucket share its lock: a claimer may wait more, never less.
func LimitLockIDs(names []string) []int64 {
	ids := make([]int64, 0, len(names))
	for _, n := range names {
		h := fnv.New64a()
		h.Write([]byte("fenced-limit\x1f" + n))
		ids = append(ids, limitLockSpace|int64(h.Sum64()%LimitLockBuckets))
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
