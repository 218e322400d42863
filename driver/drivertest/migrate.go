package drivertest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runMigrations: PendingMigrations says, by reading alone, what Migrate
// would apply, so a program that may not write can tell whether it must.
func runMigrations(t *testing.T, b Backend) {
	t.Run("PendingListsWhatMigrateApplies", func(t *testing.T) {
		t.Parallel()
		c := b.open(t, b.NewURL(t), fenced.Config{})
		pending, err := c.PendingMigrations(ctx(t))
		wantNoErr(t, err, "pending on a fresh database")
		if len(pending) == 0 {
			t.Fatal("a fresh database has no pending migrations")
		}
		for i, v := range pending {
			if v != i+1 {
				t.Fatalf("pending on a fresh database = %v, want every version from 1", pending)
			}
		}
		applied, err := c.Migrate(ctx(t))
		wantNoErr(t, err, "migrate")
		if !slices.Equal(applied, pending) {
			t.Fatalf("migrate applied %v, pending said %v", applied, pending)
		}
		pending, err = c.PendingMigrations(ctx(t))
		wantNoErr(t, err, "pending after migrate")
		if len(pending) != 0 {
			t.Fatalf("pending after migrate = %v, want none", pending)
		}
		applied, err = c.Migrate(ctx(t))
		wantNoErr(t, err, "migrate again")
		if len(applied) != 0 {
			t.Fatalf("migrate again applied %v", applied)
		}
	})
	t.Run("UnmigratedDatabaseSaysRunMigrate", func(t *testing.T) {
		t.Parallel()
		c := b.open(t, b.NewURL(t), fenced.Config{})
		unmigratedSaysRunMigrate(t, c)
	})
}

// unmigratedSaysRunMigrate: every operation on a database never migrated
// fails with a *NotMigratedError (errors.Is ErrNotMigrated) that says to
// run fenced migrate, never with the database's raw "no such table"; a
// Worker's and a Maintainer's Start fail the same way instead of running
// and logging nothing.
func unmigratedSaysRunMigrate(t *testing.T, c *fenced.Client) {
	l := fenced.Lease{Name: "l", Owner: "o", Fence: 1}
	s := fenced.Slot{Name: "s", Owner: "o", Fence: 1}
	ref := fenced.JobRef{ID: 1, Fence: 1}
	job := fenced.EnqueueParams{Kind: "k"}
	noop := func(fenced.Tx) error { return nil }
	since := time.Now().Add(-time.Hour)
	ops := []struct {
		name string
		call func(context.Context) error
	}{
		{"AcquireLease", func(ctx context.Context) error { _, err := c.AcquireLease(ctx, "l", "o", time.Minute); return err }},
		{"RenewLease", func(ctx context.Context) error { _, err := c.RenewLease(ctx, l, time.Minute); return err }},
		{"ReleaseLease", func(ctx context.Context) error { _, err := c.ReleaseLease(ctx, l); return err }},
		{"GetLease", func(ctx context.Context) error { _, err := c.GetLease(ctx, "l"); return err }},
		{"ListLeases", func(ctx context.Context) error { _, err := c.ListLeases(ctx); return err }},
		{"LeaseTx", func(ctx context.Context) error { return c.LeaseTx(ctx, l, noop) }},
		{"WriteResource", func(ctx context.Context) error {
			_, err := c.WriteResource(ctx, "r", []byte("v"), 1, fenced.WriteOptions{})
			return err
		}},
		{"ReadResource", func(ctx context.Context) error { _, err := c.ReadResource(ctx, "r"); return err }},
		{"AdvanceFences", func(ctx context.Context) error { _, err := c.AdvanceFences(ctx, 1); return err }},
		{"AcquireSlot", func(ctx context.Context) error { _, err := c.AcquireSlot(ctx, "s", "o", 2, time.Minute); return err }},
		{"RenewSlot", func(ctx context.Context) error { _, err := c.RenewSlot(ctx, s, time.Minute); return err }},
		{"ReleaseSlot", func(ctx context.Context) error { _, err := c.ReleaseSlot(ctx, s); return err }},
		{"GetSemaphore", func(ctx context.Context) error { _, err := c.GetSemaphore(ctx, "s"); return err }},
		{"ListSemaphores", func(ctx context.Context) error { _, err := c.ListSemaphores(ctx); return err }},
		{"SlotTx", func(ctx context.Context) error { return c.SlotTx(ctx, s, noop) }},
		{"Enqueue", func(ctx context.Context) error { _, _, err := c.Enqueue(ctx, job); return err }},
		{"EnqueueBulk", func(ctx context.Context) error {
			_, err := c.EnqueueBulk(ctx, nil, []fenced.EnqueueParams{job, job})
			return err
		}},
		{"ClaimJobs", func(ctx context.Context) error {
			_, err := c.ClaimJobs(ctx, "default", "o", 1, time.Minute)
			return err
		}},
		{"ClaimJobsByKind", func(ctx context.Context) error {
			_, err := c.ClaimJobs(ctx, "default", "o", 1, time.Minute, "a", "b")
			return err
		}},
		{"HeartbeatJobs", func(ctx context.Context) error {
			_, err := c.HeartbeatJobs(ctx, []fenced.JobRef{ref}, time.Minute)
			return err
		}},
		{"HeartbeatJob", func(ctx context.Context) error { _, err := c.HeartbeatJob(ctx, ref, time.Minute); return err }},
		{"CompleteJob", func(ctx context.Context) error { return c.CompleteJob(ctx, ref, nil) }},
		{"FailJob", func(ctx context.Context) error { return c.FailJob(ctx, ref, "x", 0, false) }},
		{"ReportProgress", func(ctx context.Context) error {
			_, err := c.ReportProgress(ctx, ref, fenced.Progress{Stage: "x"})
			return err
		}},
		{"JobTx", func(ctx context.Context) error { return c.JobTx(ctx, ref, noop) }},
		{"CancelJob", func(ctx context.Context) error { _, err := c.CancelJob(ctx, 1); return err }},
		{"RetryJob", func(ctx context.Context) error { _, err := c.RetryJob(ctx, 1); return err }},
		{"DeleteJob", func(ctx context.Context) error { return c.DeleteJob(ctx, 1) }},
		{"GetJob", func(ctx context.Context) error { _, _, err := c.GetJob(ctx, 1); return err }},
		{"ListJobs", func(ctx context.Context) error { _, err := c.ListJobs(ctx, fenced.JobFilter{}); return err }},
		{"CountJobs", func(ctx context.Context) error { _, err := c.CountJobs(ctx); return err }},
		{"RecoverJobs", func(ctx context.Context) error { _, err := c.RecoverJobs(ctx, nil, 10, fenced.Backoff{}); return err }},
		{"DeleteFinishedJobs", func(ctx context.Context) error {
			_, err := c.DeleteFinishedJobs(ctx, nil, time.Hour, 10)
			return err
		}},
		{"SetJobLimit", func(ctx context.Context) error {
			_, err := c.SetJobLimit(ctx, fenced.JobLimit{Queue: "default", Global: 1})
			return err
		}},
		{"DeleteJobLimit", func(ctx context.Context) error { return c.DeleteJobLimit(ctx, "default", "", "") }},
		{"ListJobLimits", func(ctx context.Context) error { _, err := c.ListJobLimits(ctx, ""); return err }},
		{"ListKeySlots", func(ctx context.Context) error { _, err := c.ListKeySlots(ctx, "default"); return err }},
		{"PauseQueue", func(ctx context.Context) error { _, _, err := c.PauseQueue(ctx, "default"); return err }},
		{"ResumeQueue", func(ctx context.Context) error { _, err := c.ResumeQueue(ctx, "default"); return err }},
		{"ListQueuePauses", func(ctx context.Context) error { _, err := c.ListQueuePauses(ctx); return err }},
		{"RollupJobMinutes", func(ctx context.Context) error { _, err := c.RollupJobMinutes(ctx); return err }},
		{"ListJobMinutes", func(ctx context.Context) error { _, err := c.ListJobMinutes(ctx, since); return err }},
		{"Worker.Start", func(ctx context.Context) error {
			w, err := c.NewWorker(fenced.WorkerConfig{})
			if err != nil {
				return err
			}
			w.Handle("k", func(context.Context, *fenced.JobRun) error { return nil })
			err = w.Start(ctx)
			if err == nil {
				w.Stop(ctx)
			}
			return err
		}},
		{"StartMaintenance", func(ctx context.Context) error {
			m, err := c.StartMaintenance(ctx, fenced.MaintenanceConfig{})
			if err == nil {
				m.Stop()
			}
			return err
		}},
	}
	for _, op := range ops {
		err := op.call(ctx(t))
		var nm *fenced.NotMigratedError
		switch {
		case !errors.Is(err, fenced.ErrNotMigrated) || !errors.As(err, &nm):
			t.Errorf("%s on a database never migrated: %v, want a *NotMigratedError", op.name, err)
		case !strings.Contains(err.Error(), `run "fenced migrate", or Client.Migrate`):
			t.Errorf("%s: %q does not say to migrate", op.name, err)
		case nm.Table == "" && len(nm.Pending) == 0:
			t.Errorf("%s: %q names neither a table nor pending migrations", op.name, err)
		}
	}
	if pending, err := c.PendingMigrations(ctx(t)); err != nil || len(pending) == 0 {
		t.Errorf("after every operation: pending %v, %v; want all of them still (nothing migrated)", pending, err)
	}
}
