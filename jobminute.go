package fenced

import (
	"context"
	"sync"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// JobMinute is what one queue's jobs did in one minute. See
// fencedtype.JobMinute and docs/design.md, "Charts over time".
type JobMinute = fencedtype.JobMinute

// WaitBucketsMS are the buckets of JobMinute.Waits (fencedtype.WaitBucketsMS).
var WaitBucketsMS = fencedtype.WaitBucketsMS

const (
	// RollupGrace is how long after a minute ends RollupJobMinutes waits
	// before it rolls the minute up, so that a job stamped finished in the
	// minute by a transaction that commits just after it is counted.
	RollupGrace = 5 * time.Second
	// RollupBack is how far back RollupJobMinutes fills minutes that
	// were not rolled up (no maintainer ran then) from the job table.
	RollupBack = time.Hour
	// RollupKeep is how long rolled-up minutes are kept.
	RollupKeep = 24 * time.Hour
)

// RollupJobMinutes rolls up, by the database clock, every minute that
// ended RollupGrace ago or more, within RollupBack, and has not been rolled
// up yet: one transaction per minute, storing what each queue's jobs did in
// it (JobMinute) and a marker, so that a minute is rolled up once however
// many callers race. The newest such minute also gets each queue's number
// of queued jobs now (Depth); older ones, filled in late, get Depth -1.
// Minutes older than RollupKeep are deleted. It returns the number of
// minutes it rolled up. A Maintainer calls it once a minute (unless
// MaintenanceConfig.SkipRollup); it reads the jobs that finished in the
// minute by their finished-time index, so its cost follows the minute's
// throughput, not the size of the job table.
func (c *Client) RollupJobMinutes(ctx context.Context) (int, error) {
	n, _, err := c.rollupJobMinutes(ctx)
	return n, err
}

// rollupJobMinutes is RollupJobMinutes, also returning the database time
// it read.
func (c *Client) rollupJobMinutes(ctx context.Context) (int, time.Time, error) {
	jd, err := c.jobQueue()
	if err != nil {
		return 0, time.Time{}, err
	}
	now, err := c.DatabaseTime(ctx)
	if err != nil {
		return 0, now, err
	}
	last := now.Add(-RollupGrace).Truncate(time.Minute).Add(-time.Minute)
	first := last.Add(-RollupBack + time.Minute)
	rows, err := jd.ListJobMinutes(ctx, first)
	if err != nil {
		return 0, now, err
	}
	done := map[int64]bool{}
	for _, r := range rows {
		if r.Queue == "" {
			done[r.Minute.Unix()] = true
		}
	}
	n := 0
	for m := first; !m.After(last); m = m.Add(time.Minute) {
		if done[m.Unix()] {
			continue
		}
		did, err := jd.RollupJobMinute(ctx, m, m.Equal(last), now.Add(-RollupKeep))
		if err != nil {
			return n, now, err
		}
		if did {
			n++
		}
	}
	return n, now, nil
}

// ListJobMinutes reads the rolled-up minutes at or after since, by minute
// and queue. Each rolled-up minute has a row of queue "" (all counts zero,
// Depth -1) that marks it as rolled up, so a minute without jobs is told
// from one not rolled up. It reads only the rollup table: at most
// RollupKeep's minutes, whatever the number of jobs.
func (c *Client) ListJobMinutes(ctx context.Context, since time.Time) ([]JobMinute, error) {
	jd, err := c.jobQueue()
	if err != nil {
		return nil, err
	}
	return jd.ListJobMinutes(ctx, since)
}

// minuteRoller paces a maintainer's RollupJobMinutes: once a minute.
type minuteRoller struct {
	mu   sync.Mutex
	next time.Time // by the local clock: no rollup before this
}

// roll runs RollupJobMinutes when a minute has ended since the last run.
func (r *minuteRoller) roll(ctx context.Context, c *Client) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Now().Before(r.next) {
		return 0, nil
	}
	n, now, err := c.rollupJobMinutes(ctx)
	if err != nil {
		return n, err
	}
	// The next minute to roll up ends at the next whole minute of the
	// database clock, and is rolled up RollupGrace after that.
	due := now.Add(-RollupGrace).Truncate(time.Minute).Add(time.Minute + RollupGrace)
	r.next = time.Now().Add(due.Sub(now))
	return n, nil
}
