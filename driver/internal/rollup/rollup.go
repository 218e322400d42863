// Package rollup is the minute rollup's plumbing every SQL backend shares
// (docs/design.md §6.12): the wait buckets as SQL, one minute's counts
// gathered by queue, and the text the wait counts are stored as.
package rollup

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// WaitBucketSQL is a CASE expression giving the fencedtype.WaitBucketsMS
// bucket of ms, an SQL expression of milliseconds; every dialect reads it.
func WaitBucketSQL(ms string) string {
	var b strings.Builder
	b.WriteString("CASE")
	for i, edge := range fencedtype.WaitBucketsMS {
		fmt.Fprintf(&b, " WHEN %s < %d THEN %d", ms, edge, i)
	}
	fmt.Fprintf(&b, " ELSE %d END", len(fencedtype.WaitBucketsMS))
	return b.String()
}

// Minute gathers one minute's counts by queue as a driver reads
// them, for JobDriver.RollupJobMinute.
type Minute struct {
	minute  time.Time
	depth   bool
	byQueue map[string]*fencedtype.JobMinute
}

// NewMinute starts the rollup of minute; depth says whether the
// queue depths will be added (else each row's Depth is -1).
func NewMinute(minute time.Time, depth bool) *Minute {
	return &Minute{minute: minute, depth: depth, byQueue: map[string]*fencedtype.JobMinute{}}
}

func (r *Minute) row(queue string) *fencedtype.JobMinute {
	m := r.byQueue[queue]
	if m == nil {
		m = &fencedtype.JobMinute{Minute: r.minute, Queue: queue,
			Waits: make([]int64, len(fencedtype.WaitBucketsMS)+1)}
		if !r.depth {
			m.Depth = -1
		}
		r.byQueue[queue] = m
	}
	return m
}

// AddFinished counts n jobs of queue that finished in state, with their
// claim wait in bucket (WaitBucketSQL; negative: not counted as a wait).
func (r *Minute) AddFinished(queue, state string, bucket int, n int64) {
	m := r.row(queue)
	switch fencedtype.JobState(state) {
	case fencedtype.JobSucceeded:
		m.Succeeded += n
	case fencedtype.JobFailed:
		m.Failed += n
	case fencedtype.JobCancelled:
		m.Cancelled += n
	}
	if bucket >= 0 && bucket < len(m.Waits) {
		m.Waits[bucket] += n
	}
}

// ScanFinished reads a row of queue, state, wait bucket and count (the
// minute's finished jobs) into the rollup.
func (r *Minute) ScanFinished(row driver.Row) error {
	var queue, state string
	var bucket int
	var n int64
	if err := row.Scan(&queue, &state, &bucket, &n); err != nil {
		return err
	}
	r.AddFinished(queue, state, bucket, n)
	return nil
}

// AddAttempts counts n attempts of queue that ended with outcome (retry
// or lost; others are not counted).
func (r *Minute) AddAttempts(queue, outcome string, n int64) {
	switch outcome {
	case fencedtype.OutcomeRetry:
		r.row(queue).Retried += n
	case fencedtype.OutcomeLost:
		r.row(queue).Lost += n
	}
}

// ScanAttempts reads a row of queue, outcome and count (the minute's
// retried and lost attempts) into the rollup.
func (r *Minute) ScanAttempts(row driver.Row) error {
	var queue, outcome string
	var n int64
	if err := row.Scan(&queue, &outcome, &n); err != nil {
		return err
	}
	r.AddAttempts(queue, outcome, n)
	return nil
}

// AddDepth records n queued jobs in queue.
func (r *Minute) AddDepth(queue string, n int64) { r.row(queue).Depth = n }

// ScanDepth reads a row of queue and count (its queued jobs) into the
// rollup.
func (r *Minute) ScanDepth(row driver.Row) error {
	var queue string
	var n int64
	if err := row.Scan(&queue, &n); err != nil {
		return err
	}
	r.AddDepth(queue, n)
	return nil
}

// Depth is the total of the queued jobs the rollup counted, -1 when it
// counts none: the marker row's Depth.
func (r *Minute) Depth() int64 {
	if !r.depth {
		return -1
	}
	var n int64
	for _, m := range r.byQueue {
		n += max(m.Depth, 0)
	}
	return n
}

// Rows returns the minute's rows: its marker (queue "", no counts, the
// total depth) first, then one per queue by name.
func (r *Minute) Rows() []fencedtype.JobMinute {
	out := []fencedtype.JobMinute{{Minute: r.minute, Depth: r.Depth(),
		Waits: make([]int64, len(fencedtype.WaitBucketsMS)+1)}}
	for _, m := range r.byQueue {
		out = append(out, *m)
	}
	slices.SortFunc(out[1:], func(a, b fencedtype.JobMinute) int { return strings.Compare(a.Queue, b.Queue) })
	return out
}

// FormatWaits stores a minute's wait counts as text: the counts, comma
// separated. ParseWaits reads it back.
func FormatWaits(w []int64) string {
	parts := make([]string, len(w))
	for i, n := range w {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, ",")
}

// ParseWaits reads FormatWaits' text into len(fencedtype.WaitBucketsMS)+1
// counts (missing ones zero: a row written with fewer buckets).
func ParseWaits(s string) ([]int64, error) {
	out := make([]int64, len(fencedtype.WaitBucketsMS)+1)
	if s == "" {
		return out, nil
	}
	for i, part := range strings.Split(s, ",") {
		if i >= len(out) {
			break
		}
		n, err := strconv.ParseInt(part, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("wait counts %q: %w", s, err)
		}
		out[i] = n
	}
	return out, nil
}
