// Package reads holds what the SQL backends share to turn what they read
// into the values they return: claim order, the scans of a count and of a
// key's slots, the bound of a keyset page, and a semaphore's rows folded
// into the semaphore.
package reads

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// SortClaimed puts jobs a claim returned in the order it picked them, the
// order of every backend's claim statement: priority, then run_at, then id.
// The claim leaves run_at as it was, so the order can be restored after the
// statement, for a backend that returns rows in no particular order.
func SortClaimed(jobs []*fencedtype.Job) {
	slices.SortFunc(jobs, func(a, b *fencedtype.Job) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID))
	})
}

// ScanJobCount scans a row of CountJobs: queue, state, count.
func ScanJobCount(r driver.Row) (fencedtype.JobCount, error) {
	var c fencedtype.JobCount
	var state string
	err := r.Scan(&c.Queue, &state, &c.Count)
	c.State = fencedtype.JobState(state)
	return c, err
}

// ScanKeySlots scans a row of a ListKeySlots read: queue, concurrency key,
// limit, running, waiting.
func ScanKeySlots(r driver.Row) (fencedtype.KeySlots, error) {
	var k fencedtype.KeySlots
	err := r.Scan(&k.Queue, &k.ConcurrencyKey, &k.Limit, &k.Running, &k.Waiting)
	return k, err
}

// BeforeBound is the upper id bound a list statement compares with: the
// filter's BeforeID, or the largest id when it is 0 (no bound), so the
// statement's condition is a plain comparison an index range serves.
func BeforeBound(beforeID int64) int64 {
	if beforeID <= 0 {
		return math.MaxInt64
	}
	return beforeID
}

// SemaphoreRow is one row of a semaphore read: the semaphore, and one of its
// holders or none. Backends read a semaphore with its holders in one
// statement (a left join) and group the rows with GroupSemaphores.
type SemaphoreRow struct {
	Name      string
	Slots     int
	Fence     int64
	DecidedAt time.Time
	Holder    *fencedtype.Slot // nil on the row of a semaphore nobody holds
}

// GroupSemaphores folds rows ordered by name into semaphores, in order.
func GroupSemaphores(rows []SemaphoreRow) []*fencedtype.Semaphore {
	var out []*fencedtype.Semaphore
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].Name != r.Name {
			out = append(out, &fencedtype.Semaphore{Name: r.Name, Slots: r.Slots, Fence: r.Fence, Holders: []fencedtype.Slot{}, DecidedAt: r.DecidedAt})
		}
		if h := r.Holder; h != nil {
			s := out[len(out)-1]
			h.Name, h.Held, h.DecidedAt = r.Name, true, r.DecidedAt
			s.Holders = append(s.Holders, *h)
		}
	}
	return out
}
