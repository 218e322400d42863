package fenced_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// coreOnly is a backend of the core contract alone (driver.Driver), as
// etcd is: it hides every capability of the driver it wraps.
type coreOnly struct{ driver.Driver }

// coreAndFull opens a migrated SQLite database and returns a Client over
// its driver as it is and one over the same driver reduced to the core.
func coreAndFull(t *testing.T) (core, full *fenced.Client) {
	t.Helper()
	d, err := fenced.OpenDriver(context.Background(), testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	full = fenced.New(d, fenced.Config{})
	if _, err := full.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return fenced.New(coreOnly{d}, fenced.Config{}), full
}

var capabilities = []fenced.Capability{fenced.CapJobs, fenced.CapSemaphores, fenced.CapClock, fenced.CapWorkflows}

func TestSupportsAnswersWhatTheDriverImplements(t *testing.T) {
	t.Parallel()
	core, full := coreAndFull(t)
	for _, c := range capabilities {
		if !full.Supports(c) || full.Unsupported(c) != nil {
			t.Errorf("SQLite: Supports(%s) = false (%v)", c, full.Unsupported(c))
		}
		if core.Supports(c) || core.Unsupported(c) == nil {
			t.Errorf("the core alone: Supports(%s) = true", c)
		}
	}
	for _, c := range []*fenced.Client{core, full} {
		if err := c.Unsupported("rate-limits"); c.Supports("rate-limits") || !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("an unknown capability: Supports true or %v", err)
		}
	}
}

// Every job, semaphore and clock method of a Client whose backend lacks the
// capability answers the one error of the capability (Unsupported), which
// names the backend and what it keeps; input is still checked first; the
// core works.
func TestMethodsOfAMissingCapabilityAnswerItsError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := coreAndFull(t)
	ref := fenced.JobRef{ID: 1, Fence: 1}
	slot := fenced.Slot{Name: "pool", Owner: "A", Fence: 1}
	lease := fenced.Lease{Name: "m", Owner: "A", Fence: 1}
	noop := func(fenced.Tx) error { return nil }
	calls := map[fenced.Capability]map[string]func() error{
		fenced.CapJobs: {
			"Enqueue":     func() error { _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k"}); return err },
			"EnqueueMany": func() error { _, err := c.EnqueueMany(ctx, nil, []fenced.EnqueueParams{{Kind: "k"}}); return err },
			"EnqueueBulk": func() error { _, err := c.EnqueueBulk(ctx, nil, []fenced.EnqueueParams{{Kind: "k"}}); return err },
			"ClaimJobs":   func() error { _, err := c.ClaimJobs(ctx, fenced.DefaultQueue, "A", 1, time.Minute); return err },
			"HeartbeatJobs": func() error {
				_, err := c.HeartbeatJobs(ctx, []fenced.JobRef{ref}, time.Minute)
				return err
			},
			"HeartbeatJob":   func() error { _, err := c.HeartbeatJob(ctx, ref, time.Minute); return err },
			"CompleteJob":    func() error { return c.CompleteJob(ctx, ref, nil) },
			"FailJob":        func() error { return c.FailJob(ctx, ref, "no", 0, false) },
			"SnoozeJob":      func() error { return c.SnoozeJob(ctx, ref, time.Second) },
			"ReportProgress": func() error { _, err := c.ReportProgress(ctx, ref, fenced.Progress{Stage: "s"}); return err },
			"JobTx":          func() error { return c.JobTx(ctx, ref, noop) },
			"CancelJob":      func() error { _, err := c.CancelJob(ctx, 1); return err },
			"RetryJob":       func() error { _, err := c.RetryJob(ctx, 1); return err },
			"DeleteJob":      func() error { return c.DeleteJob(ctx, 1) },
			"GetJob":         func() error { _, _, err := c.GetJob(ctx, 1); return err },
			"ListJobs":       func() error { _, err := c.ListJobs(ctx, fenced.JobFilter{}); return err },
			"CountJobs":      func() error { _, err := c.CountJobs(ctx); return err },
			"RecoverJobs":    func() error { _, err := c.RecoverJobs(ctx, nil, 10, fenced.Backoff{}); return err },
			"DeleteFinishedJobs": func() error {
				_, err := c.DeleteFinishedJobs(ctx, nil, time.Hour, 10)
				return err
			},
			"SetJobLimit": func() error {
				_, err := c.SetJobLimit(ctx, fenced.JobLimit{Queue: "q", Global: 1})
				return err
			},
			"DeleteJobLimit":   func() error { return c.DeleteJobLimit(ctx, "q", "", "") },
			"ListJobLimits":    func() error { _, err := c.ListJobLimits(ctx, ""); return err },
			"ListKeySlots":     func() error { _, err := c.ListKeySlots(ctx, ""); return err },
			"PauseQueue":       func() error { _, _, err := c.PauseQueue(ctx, "q"); return err },
			"ResumeQueue":      func() error { _, err := c.ResumeQueue(ctx, "q"); return err },
			"ListQueuePauses":  func() error { _, err := c.ListQueuePauses(ctx); return err },
			"RollupJobMinutes": func() error { _, err := c.RollupJobMinutes(ctx); return err },
			"ListJobMinutes":   func() error { _, err := c.ListJobMinutes(ctx, time.Now()); return err },
			"StartMaintenance": func() error { _, err := c.StartMaintenance(ctx, fenced.MaintenanceConfig{}); return err },
			"WorkerStart": func() error {
				w, err := c.NewWorker(fenced.WorkerConfig{})
				if err != nil {
					return err
				}
				w.Handle("k", func(context.Context, *fenced.JobRun) error { return nil })
				return w.Start(ctx)
			},
		},
		fenced.CapSemaphores: {
			"AcquireSlot":    func() error { _, err := c.AcquireSlot(ctx, "pool", "A", 2, time.Minute); return err },
			"RenewSlot":      func() error { _, err := c.RenewSlot(ctx, slot, time.Minute); return err },
			"ReleaseSlot":    func() error { _, err := c.ReleaseSlot(ctx, slot); return err },
			"GetSemaphore":   func() error { _, err := c.GetSemaphore(ctx, "pool"); return err },
			"ListSemaphores": func() error { _, err := c.ListSemaphores(ctx); return err },
			"SlotTx":         func() error { return c.SlotTx(ctx, slot, noop) },
		},
		fenced.CapClock: {
			"DatabaseTime": func() error { _, err := c.DatabaseTime(ctx); return err },
		},
	}
	sentinels := map[fenced.Capability]error{fenced.CapJobs: fenced.ErrJobsNotSupported,
		fenced.CapSemaphores: fenced.ErrSemaphoresNotSupported, fenced.CapClock: fenced.ErrClockNotSupported}
	for capability, methods := range calls {
		want := c.Unsupported(capability)
		if want == nil || !strings.Contains(want.Error(), "not offered on sqlite") {
			t.Fatalf("Unsupported(%s) = %v, want it to say the backend does not offer it", capability, want)
		}
		for name, call := range methods {
			err := call()
			if !errors.Is(err, sentinels[capability]) || !errors.Is(err, errors.ErrUnsupported) ||
				!strings.Contains(err.Error(), want.Error()) {
				t.Errorf("%s without %s: %v, want %v", name, capability, err, want)
			}
			for other, s := range sentinels {
				if other != capability && errors.Is(err, s) {
					t.Errorf("%s without %s matches the error of %s", name, capability, other)
				}
			}
		}
	}
	if err := c.Unsupported(fenced.CapJobs); !strings.Contains(err.Error(), "keeps leases, fences and resources only") {
		t.Errorf("the job queue's error does not say what the backend keeps: %v", err)
	}

	// Input is checked before the capability, as on every backend.
	if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{}); !errors.Is(err, fenced.ErrInvalid) {
		t.Errorf("enqueue without a kind: %v, want ErrInvalid", err)
	}
	if _, err := c.AcquireSlot(ctx, "pool", "A", 0, time.Minute); !errors.Is(err, fenced.ErrInvalid) {
		t.Errorf("acquire of 0 slots: %v, want ErrInvalid", err)
	}
	// The core needs no capability.
	l, err := c.AcquireLease(ctx, lease.Name, lease.Owner, time.Minute)
	if err != nil || l.Fence != 1 {
		t.Fatalf("acquire on the core: %+v %v", l, err)
	}
	if _, err := c.WriteResource(ctx, "k", []byte("v"), l.Fence, fenced.WriteOptions{}); err != nil {
		t.Fatalf("resource write on the core: %v", err)
	}
}
