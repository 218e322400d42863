package fenced

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones of the cron expressions, whatever the machine has
)

// The current slot of a cron expression is the latest of its times at or
// before now, found however far back it lies.
func TestCronLastSlot(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		expr, now string
		within    time.Duration
		want      string // "" for none
	}{
		{"0 9 * * 1-5", "2026-12-07 10:00", time.Hour * 48, "2026-12-07 09:00"}, // a Monday
		{"0 9 * * 1-5", "2026-12-07 08:59", time.Hour * 96, "2026-12-04 09:00"}, // before Monday's: Friday's
		{"0 9 * * 1-5", "2026-12-06 12:00", time.Hour * 96, "2026-12-04 09:00"}, // Sunday
		{"0 9 * * 1-5", "2026-12-06 12:00", time.Hour, ""},                      // Friday's is past the window
		{"0 9 * * 1-5", "2026-12-07 09:00", time.Hour, "2026-12-07 09:00"},      // a slot's own time is in it
		{"*/15 * * * *", "2026-12-07 10:44", time.Hour, "2026-12-07 10:30"},
		{"@yearly", "2026-12-31 23:59", maxCronLookback, "2026-01-01 00:00"},
		{"0 0 29 2 *", "2027-03-01 00:00", maxCronLookback, "2024-02-29 00:00"},
		{"CRON_TZ=Europe/Paris 0 9 * * *", "2026-12-07 08:30", time.Hour * 48, "2026-12-07 08:00"}, // 09:30 in Paris
		{"CRON_TZ=Europe/Paris 0 9 * * *", "2026-12-07 07:30", time.Hour * 48, "2026-12-06 08:00"},
	} {
		s, err := parseCron(c.expr)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		got, ok := lastSlot(s, utc(c.now), c.within)
		if c.want == "" {
			if ok {
				t.Errorf("%q at %s within %s: slot %s, want none", c.expr, c.now, c.within, got)
			}
			continue
		}
		if !ok || !got.Equal(utc(c.want)) {
			t.Errorf("%q at %s within %s: slot %s (found %v), want %s", c.expr, c.now, c.within, got.UTC(), ok, c.want)
		}
	}
}

// A periodic job gives an interval or a cron expression that names fixed
// times, not both, and a bad one is refused when the maintainer starts.
func TestPeriodicScheduleIsChecked(t *testing.T) {
	for _, c := range []struct {
		p    PeriodicJob
		want string
	}{
		{PeriodicJob{Kind: "k"}, "under 1s"},
		{PeriodicJob{Kind: "k", Every: time.Minute, Cron: "* * * * *"}, "give one"},
		{PeriodicJob{Kind: "k", Cron: "61 * * * *"}, "periodic cron"},
		{PeriodicJob{Kind: "k", Cron: "* * * *"}, "expected exactly 5 fields"},
		{PeriodicJob{Kind: "k", Cron: "@every 1h"}, "give the interval as Every"},
		{PeriodicJob{Kind: "k", Cron: "0 0 30 2 *"}, "never matches"},
		{PeriodicJob{Kind: "k", Cron: "CRON_TZ=Nowhere/City 0 9 * * *"}, "Nowhere/City"},
		{PeriodicJob{Kind: "", Cron: "0 9 * * *"}, "kind"},
	} {
		_, err := periodicSlots([]PeriodicJob{c.p})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want one saying %q", c.p, err, c.want)
		}
	}
	if _, err := periodicSlots([]PeriodicJob{{Kind: "k", Cron: "CRON_TZ=America/New_York 30 8 * * 1-5"}, {Kind: "j", Every: time.Hour}}); err != nil {
		t.Fatal(err)
	}
}

// A cron periodic job is enqueued once per slot, under a key naming the
// slot, at or after the slot's time by the database clock.
func TestCronPeriodicOncePerSlot(t *testing.T) {
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
	m, err := c.StartMaintenance(dead, MaintenanceConfig{Owner: "m", Periodic: []PeriodicJob{{Kind: "minutely", Cron: "* * * * *"}}})
	if err != nil {
		t.Fatal(err)
	}
	m.Stop()
	l, err := c.AcquireLease(ctx, "fenced:maintenance", "m", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := m.Round(ctx, *l); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := c.ListJobs(ctx, JobFilter{Kind: "minutely"})
	if err != nil {
		t.Fatal(err)
	}
	// Five rounds within a few milliseconds: one slot, or two if a minute
	// began between them; each slot once.
	if len(jobs) == 0 || len(jobs) > 2 {
		t.Fatalf("%d jobs after five rounds, want one per minute begun", len(jobs))
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		unix, err := strconv.ParseInt(strings.TrimPrefix(j.IdempotencyKey, "periodic:minutely:"), 10, 64)
		if err != nil {
			t.Fatalf("key %q does not name a slot: %v", j.IdempotencyKey, err)
		}
		slot := time.Unix(unix, 0)
		if seen[j.IdempotencyKey] || slot.Second() != 0 || j.CreatedAt.Before(slot) || j.CreatedAt.Sub(slot) >= time.Minute {
			t.Fatalf("job %d: key %q, created %s: want one job per minute, created within its minute", j.ID, j.IdempotencyKey, j.CreatedAt)
		}
		seen[j.IdempotencyKey] = true
	}
}
