package fenced

import (
	"context"
	"sync"
	"time"

	"github.com/fenced/fenced/driver"
)

// DefaultVacuumRows is the number of dead row versions in the job table at
// which a maintainer vacuums it, and of rows changed at which it refreshes
// the table's statistics (PostgreSQL): about three seconds of claims and
// ends at 3,000 jobs/s.
const DefaultVacuumRows = 20000

// vacuumShare bounds the time a maintainer spends vacuuming: after a vacuum
// that took d, the next starts no sooner than vacuumShare*d later.
const vacuumShare = 4

// tidier paces a maintainer's vacuums of the job table.
type tidier struct {
	mu   sync.Mutex
	next time.Time // no vacuum before this
}

// tidy vacuums or analyzes the job table when the backend needs it (jt,
// its driver.JobTidier, is not nil), at least threshold rows call for it,
// and the pace allows. It reports whether it did.
func (t *tidier) tidy(ctx context.Context, jt driver.JobTidier, threshold int64) (bool, error) {
	if jt == nil || threshold < 0 {
		return false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if time.Now().Before(t.next) {
		return false, nil
	}
	start := time.Now()
	did, err := jt.TidyJobs(ctx, max(threshold, 1))
	if did {
		t.next = time.Now().Add(vacuumShare * time.Since(start))
	}
	return did, err
}
