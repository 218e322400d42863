package fenced

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// A periodic job is enqueued once per period, even when retention deletes
// the finished job of the current period before the period ends.
func TestPeriodicOncePerPeriodDespiteRetention(t *testing.T) {
	ctx := context.Background()
	c, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "p.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	dead, cancel := context.WithCancel(ctx)
	cancel() // no background rounds: the test drives them
	m, err := c.StartMaintenance(dead, MaintenanceConfig{
		Owner: "m", Retention: time.Millisecond,
		Periodic: []PeriodicJob{{Kind: "tick", Every: 24 * time.Hour}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Stop()
	l, err := c.AcquireLease(ctx, "fenced:maintenance", "m", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	enqueued := 0
	for range 3 {
		if err := m.Round(ctx, *l); err != nil {
			t.Fatal(err)
		}
		jobs, err := c.ClaimJobs(ctx, DefaultQueue, "w", 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			enqueued++
			if err := c.CompleteJob(ctx, j.Ref(), nil); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(20 * time.Millisecond) // past retention
	}
	if enqueued > 1 {
		t.Fatalf("the periodic job ran %d times in one 24h period", enqueued)
	}

	// With the default retention the period's job is enqueued, once.
	m2, err := c.StartMaintenance(dead, MaintenanceConfig{
		Owner: "m", Periodic: []PeriodicJob{{Kind: "tock", Every: 24 * time.Hour}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m2.Stop()
	for range 3 {
		if err := m2.Round(ctx, *l); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := c.ListJobs(ctx, JobFilter{Kind: "tock"})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("%d tock jobs after three rounds of one period, want 1", len(jobs))
	}
}
