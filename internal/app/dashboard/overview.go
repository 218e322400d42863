package dashboard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fenced/fenced"
	dto "github.com/prometheus/client_model/go"
)

// Bounds of what the overview reads per refresh.
const (
	// scanLimit bounds the jobs of one state read to find overdue running
	// jobs and the failures: ListJobs pages by id ascending, so finding
	// the newest failures means reading to the last page. Past it the page
	// says it counted only part.
	scanLimit = 20 * fenced.MaxListLimit
	// recentFailures is how many failures the overview lists.
	recentFailures = 15
)

// states are the job states, in the order of the queue table's columns:
// pending (a workflow's task waiting for its dependencies) first.
var states = []fenced.JobState{fenced.JobPending, fenced.JobQueued, fenced.JobRunning, fenced.JobSucceeded,
	fenced.JobFailed, fenced.JobCancelled}

// overview is the data of /.
type overview struct {
	Chrome
	Now      time.Time // the database clock, as read for this page
	States   []fenced.JobState
	Queues   []queueRow
	Keys     []fenced.KeySlots // concurrency keys with running or due jobs
	Overdue  []*fenced.Job     // running with the lease expired by Now
	Kinds    []kindRow
	Failures []*fenced.Job // most recent first
	Partial  bool          // the scans stopped at scanLimit
	Leases   []*fenced.Lease
	Stale    staleCount
	// NoMaintenance: this server runs no job maintenance (Options).
	NoMaintenance bool
}

// queueRow is one queue's job counts, in the order of States, and whether
// it is paused.
type queueRow struct {
	Queue  string
	Counts []int64
	Total  int64
	Pause  *fenced.QueuePause // nil: not paused
	Action *action            // Pause or Resume; nil on a backend without jobs
}

// kindRow is one kind of job that has failed.
type kindRow struct {
	Kind      string
	Failed    int       // in the dead letter
	Retrying  int       // queued again after a failed attempt
	LastAt    time.Time // the newest failure
	LastError string
	LastJobID int64
}

// staleCount is fenced_stale_writes_total summed, and by kind.
type staleCount struct {
	Known  bool // the metric was found
	Total  int64
	ByKind []kindCount
}

type kindCount struct {
	Kind  string
	Count int64
}

// load reads everything the overview shows.
func (h *Handler) load(ctx context.Context) (*overview, error) {
	o := &overview{States: states, NoMaintenance: h.o.NoMaintenance}
	var err error
	if o.Now, err = h.c.DatabaseTime(ctx); err != nil {
		o.Now = time.Time{} // a backend without a clock: each job's DecidedAt instead
	}
	if h.noJobs == nil { // a backend without the job queue shows leases only
		counts, err := h.c.CountJobs(ctx)
		if err != nil {
			return nil, fmt.Errorf("count jobs: %w", err)
		}
		o.Queues = queueRows(counts)
		if err := h.loadPauses(ctx, o); err != nil {
			return nil, err
		}
		if err := h.loadRunning(ctx, o); err != nil {
			return nil, err
		}
		if err := h.loadFailures(ctx, o); err != nil {
			return nil, err
		}
		if o.Keys, err = h.c.ListKeySlots(ctx, ""); err != nil {
			return nil, fmt.Errorf("list key slots: %w", err)
		}
	}
	if o.Leases, err = h.c.ListLeases(ctx); err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	if o.Now.IsZero() && len(o.Leases) > 0 {
		o.Now = o.Leases[0].DecidedAt
	}
	o.Stale = h.staleWrites()
	return o, nil
}

func queueRows(counts []fenced.JobCount) []queueRow {
	byQueue := map[string]*queueRow{}
	var rows []*queueRow
	for _, c := range counts {
		r := byQueue[c.Queue]
		if r == nil {
			r = &queueRow{Queue: c.Queue, Counts: make([]int64, len(states))}
			byQueue[c.Queue] = r
			rows = append(rows, r)
		}
		if i := slices.Index(states, c.State); i >= 0 {
			r.Counts[i] += c.Count
		}
		r.Total += c.Count
	}
	slices.SortFunc(rows, func(a, b *queueRow) int { return strings.Compare(a.Queue, b.Queue) })
	out := make([]queueRow, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	return out
}

// loadPauses marks the paused queues (one statement), adds those without
// jobs, and gives every queue its Pause or Resume button.
func (h *Handler) loadPauses(ctx context.Context, o *overview) error {
	paused, err := h.pauses(ctx)
	if err != nil {
		return err
	}
	for q, p := range paused {
		if !slices.ContainsFunc(o.Queues, func(r queueRow) bool { return r.Queue == q }) {
			o.Queues = append(o.Queues, queueRow{Queue: q, Counts: make([]int64, len(states)), Pause: p})
		}
	}
	slices.SortFunc(o.Queues, func(a, b queueRow) int { return strings.Compare(a.Queue, b.Queue) })
	for i := range o.Queues {
		r := &o.Queues[i]
		r.Pause = paused[r.Queue]
		r.Action = queueActionFor(r.Pause != nil)
	}
	return nil
}

// scan calls fn with every job in state (only those whose last attempt
// failed, with failing), a page at a time, up to scanLimit; it reports
// whether it stopped there.
func (h *Handler) scan(ctx context.Context, state fenced.JobState, failing bool, fn func(*fenced.Job)) (bool, error) {
	f := fenced.JobFilter{State: state, Failing: failing, Limit: fenced.MaxListLimit}
	for seen := 0; ; {
		page, err := h.c.ListJobs(ctx, f)
		if err != nil {
			return false, fmt.Errorf("list %s jobs: %w", state, err)
		}
		for _, j := range page {
			fn(j)
		}
		seen += len(page)
		if len(page) < f.Limit {
			return false, nil
		}
		if seen >= scanLimit {
			return true, nil
		}
		f.AfterID = page[len(page)-1].ID
	}
}

// loadRunning finds the running jobs whose lease expired by the database
// clock: their worker is gone or stuck, and recovery has not yet taken
// them back.
func (h *Handler) loadRunning(ctx context.Context, o *overview) error {
	partial, err := h.scan(ctx, fenced.JobRunning, false, func(j *fenced.Job) {
		now := o.Now
		if now.IsZero() {
			now = j.DecidedAt
		}
		if j.LeaseExpiresAt != nil && j.LeaseExpiresAt.Before(now) {
			o.Overdue = append(o.Overdue, j)
		}
	})
	o.Partial = o.Partial || partial
	slices.SortFunc(o.Overdue, func(a, b *fenced.Job) int { return a.LeaseExpiresAt.Compare(*b.LeaseExpiresAt) })
	return err
}

// loadFailures reads the dead letter and the jobs waiting to retry after a
// failed attempt, and sums them by kind.
func (h *Handler) loadFailures(ctx context.Context, o *overview) error {
	kinds := map[string]*kindRow{}
	note := func(j *fenced.Job, retrying bool) {
		k := kinds[j.Kind]
		if k == nil {
			k = &kindRow{Kind: j.Kind}
			kinds[j.Kind] = k
		}
		if retrying {
			k.Retrying++
		} else {
			k.Failed++
		}
		if at := failedAt(j); !at.Before(k.LastAt) {
			k.LastAt, k.LastError, k.LastJobID = at, j.LastError, j.ID
		}
		o.Failures = append(o.Failures, j)
	}
	partial, err := h.scan(ctx, fenced.JobFailed, false, func(j *fenced.Job) { note(j, false) })
	if err != nil {
		return err
	}
	o.Partial = o.Partial || partial
	// The database keeps only the queued jobs waiting to retry: the
	// backlog's other jobs are never read here.
	partial, err = h.scan(ctx, fenced.JobQueued, true, func(j *fenced.Job) { note(j, true) })
	if err != nil {
		return err
	}
	o.Partial = o.Partial || partial

	newestFirst := func(a, b *fenced.Job) int {
		if c := failedAt(b).Compare(failedAt(a)); c != 0 {
			return c
		}
		return int(b.ID - a.ID)
	}
	slices.SortFunc(o.Failures, newestFirst)
	o.Failures = o.Failures[:min(len(o.Failures), recentFailures)]
	for _, k := range kinds {
		o.Kinds = append(o.Kinds, *k)
	}
	slices.SortFunc(o.Kinds, func(a, b kindRow) int {
		if c := b.LastAt.Compare(a.LastAt); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return nil
}

// failedAt is when j last failed: its finish for a failed job, else the
// start of its last attempt (the failed one, for a job waiting to retry).
func failedAt(j *fenced.Job) time.Time {
	if j.FinishedAt != nil {
		return *j.FinishedAt
	}
	if j.AttemptedAt != nil {
		return *j.AttemptedAt
	}
	return j.CreatedAt
}

// staleWrites sums fenced_stale_writes_total from the server's metrics.
func (h *Handler) staleWrites() staleCount {
	var s staleCount
	if h.g == nil {
		return s
	}
	// A failed part (the job counts, if the database is down) leaves the
	// rest: use what came back.
	families, _ := h.g.Gather()
	byKind := map[string]int64{}
	for _, f := range families {
		if f.GetName() != "fenced_stale_writes_total" {
			continue
		}
		s.Known = true
		for _, m := range f.GetMetric() {
			n := int64(m.GetCounter().GetValue())
			byKind[label(m, "kind")] += n
			s.Total += n
		}
	}
	for k, n := range byKind {
		s.ByKind = append(s.ByKind, kindCount{k, n})
	}
	slices.SortFunc(s.ByKind, func(a, b kindCount) int { return strings.Compare(a.Kind, b.Kind) })
	return s
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
