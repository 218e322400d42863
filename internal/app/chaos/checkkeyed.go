package chaos

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// The keyed checker judges the keyed workload from its committed ledger
// only (chaos_keyed_ledger), with the limits read back from the database.
//
// An attempt is a (job id, fence). Its interval is [its first committed
// row, its last committed row], by the database clock (clock_timestamp()
// on PostgreSQL, UTC_TIMESTAMP(6) on MySQL, at each insert; one server,
// whose clock must not be stepped back during the run), or on SQLite by the
// rows' ids: its writers are serialized, so ids increase in the order
// transactions committed, which orders the attempts' running periods as
// the clock would, and never ties (its clock counts milliseconds). Every row was written in a job-fenced transaction, which
// share-locks the job row while the attempt is running under that fence
// with an unexpired lease, and the attempt cannot stop running (end, or be
// recovered) while the lock is held; so each row's time lies inside the
// attempt's running period, and so does the whole interval. An attempt
// with a START and no END (its END was refused as stale, it failed on
// purpose, or its process was killed) ends at its last committed row,
// its START: its effects stop at its last committed write, and what it
// did not commit is no effect. Intervals are closed: two attempts one of
// which ended at the very microsecond the other started count as
// overlapping, the stricter reading (between one attempt's last write and
// the next claim of its slot lie at least its commit and a claim, far more
// than a microsecond).
//
// Since intervals lie inside running periods, and intervals that overlap
// pairwise share a point, the guarantee of docs/design.md §6.10 (at most
// limit attempts of a key running at any time) implies, per key:
//
//   - overlap: no attempt starts while limit attempts of its key are
//     still inside their intervals (limit+1 would overlap);
//   - late write: in particular, no attempt writes anything at or after
//     the start of a later attempt of its key that started while the key
//     was full counting the writer (a paused holder that woke and wrote
//     after its slot went to someone else).
//
// Each row must also name its job's concurrency key, which must have a
// declared limit (else the run tested nothing), and each END row must
// have the count workload's effect under the same attempt beside it (they
// commit in one transaction), so the job checkers' exactly-once verdict
// on chaos_ledger covers the keyed jobs.

// keyedRow is one committed row of the keyed ledger.
type keyedRow struct {
	job, fence int64
	key, mark  string
	at         int64 // dialect.keyedAt: microseconds of the database clock, or SQLite's row id
}

// keyedAttempt is one attempt's interval in the ledger.
type keyedAttempt struct {
	job, fence int64
	start, end int64
	ended      bool // has an END row
}

// keyedVerdict is what the sweep found.
type keyedVerdict struct {
	attempts, unended int
	peak              map[int]int // the most overlapping attempts seen on a key, by limit
	overlaps          []string    // an attempt that started into a full key
	lateWrites        []string    // an attempt that wrote after its slot was taken
}

// judgeKeyed sweeps rows, key by key, against limits; show prints a row's
// at.
func judgeKeyed(rows []keyedRow, limits map[string]int, show func(int64) string) keyedVerdict {
	v := keyedVerdict{peak: map[int]int{}}
	type id struct{ job, fence int64 }
	byKey := map[string]map[id]*keyedAttempt{}
	for _, r := range rows {
		as := byKey[r.key]
		if as == nil {
			as = map[id]*keyedAttempt{}
			byKey[r.key] = as
		}
		a := as[id{r.job, r.fence}]
		if a == nil {
			a = &keyedAttempt{job: r.job, fence: r.fence, start: r.at, end: r.at}
			as[id{r.job, r.fence}] = a
		}
		a.start, a.end = min(a.start, r.at), max(a.end, r.at)
		a.ended = a.ended || r.mark == "end"
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		limit := limits[key]
		var as []*keyedAttempt
		for _, a := range byKey[key] {
			as = append(as, a)
			v.attempts++
			if !a.ended {
				v.unended++
			}
		}
		slices.SortFunc(as, func(a, b *keyedAttempt) int {
			return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.job, b.job), cmp.Compare(a.fence, b.fence))
		})
		var active []*keyedAttempt // started before b, interval not over at b's start
		for _, b := range as {
			active = slices.DeleteFunc(active, func(a *keyedAttempt) bool { return a.end < b.start })
			v.peak[limit] = max(v.peak[limit], len(active)+1)
			if len(active) >= limit {
				v.overlaps = append(v.overlaps, fmt.Sprintf("key %s (limit %d): job %d fence %d started at %s while %d attempts of the key were still writing",
					key, limit, b.job, b.fence, show(b.start), len(active)))
				for _, a := range active {
					v.lateWrites = append(v.lateWrites, fmt.Sprintf("key %s (limit %d): job %d fence %d wrote at %s, after job %d fence %d started at %s with the key full",
						key, limit, a.job, a.fence, show(a.end), b.job, b.fence, show(b.start)))
				}
			}
			active = append(active, b)
		}
	}
	return v
}

// showAt prints a keyed row's at in d's terms.
func showAt(d *dialect) func(int64) string {
	if d.clockedAt {
		return func(us int64) string { return time.UnixMicro(us).UTC().Format("15:04:05.000000") }
	}
	return func(id int64) string { return fmt.Sprintf("row %d", id) }
}

// checkKeyed runs the keyed checker on the run's database.
func checkKeyed(ctx context.Context, r *run, rep *Report) error {
	p := r.c.db
	ls, err := r.c.ListJobLimits(ctx, queue)
	if err != nil {
		return fmt.Errorf("read limits: %w", err)
	}
	limits := map[string]int{}
	for _, l := range ls {
		if l.ConcurrencyKey != "" {
			limits[l.ConcurrencyKey] = l.PerKey
		}
	}
	rows, err := p.Query(ctx, `SELECT l.job_id, l.fence, l.ckey, l.mark, `+r.d.keyedAt+`, coalesce(j.concurrency_key, '')
FROM chaos_keyed_ledger l LEFT JOIN fenced_jobs j ON j.id = l.job_id ORDER BY l.id`)
	if err != nil {
		return fmt.Errorf("read the keyed ledger: %w", err)
	}
	var krs []keyedRow
	for rows.Next() {
		var kr keyedRow
		var jobKey string
		if err := rows.Scan(&kr.job, &kr.fence, &kr.key, &kr.mark, &kr.at, &jobKey); err != nil {
			rows.Close()
			return err
		}
		if kr.key != jobKey {
			rep.anomaly(anomalyKeyedRow, "job %d: a ledger row names key %q but the job's concurrency key is %q", kr.job, kr.key, jobKey)
		} else if limits[kr.key] == 0 {
			rep.anomaly(anomalyKeyedRow, "job %d: its key %q has no limit declared", kr.job, kr.key)
		}
		krs = append(krs, kr)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the keyed ledger: %w", err)
	}
	var unpaired int64
	if err := p.QueryRow(ctx, `SELECT
    (SELECT count(*) FROM chaos_keyed_ledger k WHERE k.mark = 'end'
        AND NOT EXISTS (SELECT 1 FROM chaos_ledger l WHERE l.job_id = k.job_id AND l.fence = k.fence))
  + (SELECT count(*) FROM chaos_ledger l WHERE NOT EXISTS (SELECT 1 FROM chaos_keyed_ledger k
        WHERE k.mark = 'end' AND k.job_id = l.job_id AND k.fence = l.fence))`).Scan(&unpaired); err != nil {
		return fmt.Errorf("pair END rows with effects: %w", err)
	}
	if unpaired > 0 {
		rep.anomaly(anomalyKeyedRow, "%d END rows and effects are not paired under one attempt", unpaired)
	}
	v := judgeKeyed(krs, limits, showAt(r.d))
	rep.KeyedAttempts, rep.KeyedUnended, rep.KeyedPeak = v.attempts, v.unended, map[string]int{}
	for limit, peak := range v.peak {
		rep.KeyedPeak[fmt.Sprintf("limit %d", limit)] = peak
	}
	for _, s := range v.overlaps {
		rep.anomaly(anomalyKeyOverlap, "%s", s)
	}
	for _, s := range v.lateWrites {
		rep.anomaly(anomalyKeyLate, "%s", s)
	}
	return nil
}
