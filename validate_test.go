package fenced_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// Each exported check is its method's: it refuses what the method refuses
// before the database, with the same *InvalidError, and passes what the
// method takes to the database. (A caller such as the CLI checks input
// with them before it opens, or creates, any database.)
func TestEachValidateIsItsMethodsCheck(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := fenced.Open(ctx, testdb.SQLite(t), fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", fenced.MaxNameBytes+1)
	ref := fenced.Lease{Name: "l", Owner: "o", Fence: 1}
	slot := fenced.Slot{Name: "s", Owner: "o", Fence: 1}
	ignore := func(_ any, err error) error { return err }
	for _, tc := range []struct {
		name     string
		validate error
		method   func() error
	}{
		{"AcquireLeaseEmptyName", fenced.ValidateAcquireLease("", "", 0),
			func() error { return ignore(c.AcquireLease(ctx, "", "", 0)) }},
		{"AcquireLeaseBadOwner", fenced.ValidateAcquireLease("l", "o\x01", time.Second),
			func() error { return ignore(c.AcquireLease(ctx, "l", "o\x01", time.Second)) }},
		{"AcquireLeaseBadTTL", fenced.ValidateAcquireLease("l", "o", fenced.MaxTTL+1),
			func() error { return ignore(c.AcquireLease(ctx, "l", "o", fenced.MaxTTL+1)) }},
		{"AcquireLease", fenced.ValidateAcquireLease("l", "o", time.Minute),
			func() error { return ignore(c.AcquireLease(ctx, "l", "o", time.Minute)) }},
		{"RenewLeaseNegativeFence", fenced.ValidateRenewLease(fenced.Lease{Name: "l", Owner: "o", Fence: -1}, time.Second),
			func() error {
				return ignore(c.RenewLease(ctx, fenced.Lease{Name: "l", Owner: "o", Fence: -1}, time.Second))
			}},
		{"RenewLeaseBadTTL", fenced.ValidateRenewLease(ref, 0),
			func() error { return ignore(c.RenewLease(ctx, ref, 0)) }},
		{"RenewLease", fenced.ValidateRenewLease(ref, time.Minute),
			func() error { return ignore(c.RenewLease(ctx, ref, time.Minute)) }},
		{"ReleaseLeaseEmptyOwner", fenced.ValidateReleaseLease(fenced.Lease{Name: "l", Fence: 1}),
			func() error { return ignore(c.ReleaseLease(ctx, fenced.Lease{Name: "l", Fence: 1})) }},
		{"ReleaseLease", fenced.ValidateReleaseLease(ref),
			func() error { return ignore(c.ReleaseLease(ctx, ref)) }},
		{"GetLeaseLongName", fenced.ValidateGetLease(long),
			func() error { return ignore(c.GetLease(ctx, long)) }},
		{"GetLease", fenced.ValidateGetLease("l"),
			func() error { return ignore(c.GetLease(ctx, "l")) }},
		{"AcquireSlotNoSlots", fenced.ValidateAcquireSlot("s", "o", 0, time.Second),
			func() error { return ignore(c.AcquireSlot(ctx, "s", "o", 0, time.Second)) }},
		{"AcquireSlotTooManySlots", fenced.ValidateAcquireSlot("s", "o", fenced.MaxSlots+1, time.Second),
			func() error { return ignore(c.AcquireSlot(ctx, "s", "o", fenced.MaxSlots+1, time.Second)) }},
		{"AcquireSlot", fenced.ValidateAcquireSlot("s", "o", 2, time.Minute),
			func() error { return ignore(c.AcquireSlot(ctx, "s", "o", 2, time.Minute)) }},
		{"RenewSlotBadTTL", fenced.ValidateRenewSlot(slot, 25*time.Hour),
			func() error { return ignore(c.RenewSlot(ctx, slot, 25*time.Hour)) }},
		{"RenewSlot", fenced.ValidateRenewSlot(slot, time.Minute),
			func() error { return ignore(c.RenewSlot(ctx, slot, time.Minute)) }},
		{"ReleaseSlotEmptyName", fenced.ValidateReleaseSlot(fenced.Slot{Owner: "o", Fence: 1}),
			func() error { return ignore(c.ReleaseSlot(ctx, fenced.Slot{Owner: "o", Fence: 1})) }},
		{"ReleaseSlot", fenced.ValidateReleaseSlot(slot),
			func() error { return ignore(c.ReleaseSlot(ctx, slot)) }},
		{"GetSemaphoreBadName", fenced.ValidateGetSemaphore("\x7f"),
			func() error { return ignore(c.GetSemaphore(ctx, "\x7f")) }},
		{"GetSemaphore", fenced.ValidateGetSemaphore("s"),
			func() error { return ignore(c.GetSemaphore(ctx, "s")) }},
		{"WriteResourceNegativeFence", fenced.ValidateWriteResource("r", nil, -1, fenced.WriteOptions{}),
			func() error { return ignore(c.WriteResource(ctx, "r", nil, -1, fenced.WriteOptions{})) }},
		{"WriteResourceLargeValue", fenced.ValidateWriteResource("r", make([]byte, fenced.MaxValueBytes+1), 1, fenced.WriteOptions{}),
			func() error {
				return ignore(c.WriteResource(ctx, "r", make([]byte, fenced.MaxValueBytes+1), 1, fenced.WriteOptions{}))
			}},
		{"WriteResourceBadOperationID", fenced.ValidateWriteResource("r", nil, 1, fenced.WriteOptions{OperationID: "\x01"}),
			func() error {
				return ignore(c.WriteResource(ctx, "r", nil, 1, fenced.WriteOptions{OperationID: "\x01"}))
			}},
		{"WriteResource", fenced.ValidateWriteResource("r", nil, 1, fenced.WriteOptions{OperationID: "op"}),
			func() error { return ignore(c.WriteResource(ctx, "r", nil, 1, fenced.WriteOptions{OperationID: "op"})) }},
		{"ReadResourceEmptyKey", fenced.ValidateReadResource(""),
			func() error { return ignore(c.ReadResource(ctx, "")) }},
		{"ReadResource", fenced.ValidateReadResource("r"),
			func() error { return ignore(c.ReadResource(ctx, "r")) }},
		{"AdvanceFencesNegative", fenced.ValidateAdvanceFences(-1),
			func() error { return ignore(c.AdvanceFences(ctx, -1)) }},
		{"AdvanceFences", fenced.ValidateAdvanceFences(0),
			func() error { return ignore(c.AdvanceFences(ctx, 0)) }},
		{"EnqueueEmptyKind", fenced.EnqueueParams{}.Validate(),
			func() error { return ignore(c.EnqueueMany(ctx, nil, []fenced.EnqueueParams{{}})) }},
		{"EnqueueBadArgs", fenced.EnqueueParams{Kind: "k", Args: json.RawMessage("not json")}.Validate(),
			func() error {
				return ignore(c.EnqueueMany(ctx, nil, []fenced.EnqueueParams{{Kind: "k", Args: json.RawMessage("not json")}}))
			}},
		{"EnqueueContinueWithoutSequence", fenced.EnqueueParams{Kind: "k", SequenceContinueOnFailed: true}.Validate(),
			func() error {
				return ignore(c.EnqueueMany(ctx, nil, []fenced.EnqueueParams{{Kind: "k", SequenceContinueOnFailed: true}}))
			}},
		{"Enqueue", fenced.EnqueueParams{Kind: "k", Queue: "q"}.Validate(),
			func() error { return ignore(c.EnqueueMany(ctx, nil, []fenced.EnqueueParams{{Kind: "k", Queue: "q"}})) }},
		{"ListJobsBadState", fenced.ValidateListJobs(fenced.JobFilter{State: "bogus"}),
			func() error { return ignore(c.ListJobs(ctx, fenced.JobFilter{State: "bogus"})) }},
		{"ListJobsLimitAboveMax", fenced.ValidateListJobs(fenced.JobFilter{Limit: fenced.MaxListLimit + 1}),
			func() error { return ignore(c.ListJobs(ctx, fenced.JobFilter{Limit: fenced.MaxListLimit + 1})) }},
		{"ListJobsNegativeLimit", fenced.ValidateListJobs(fenced.JobFilter{Limit: -1}),
			func() error { return ignore(c.ListJobs(ctx, fenced.JobFilter{Limit: -1})) }},
		{"ListJobsNegativeBefore", fenced.ValidateListJobs(fenced.JobFilter{BeforeID: -1}),
			func() error { return ignore(c.ListJobs(ctx, fenced.JobFilter{BeforeID: -1})) }},
		{"ListJobsBadKind", fenced.ValidateListJobs(fenced.JobFilter{Kind: long}),
			func() error { return ignore(c.ListJobs(ctx, fenced.JobFilter{Kind: long})) }},
		{"ListJobsDefaultLimit", fenced.ValidateListJobs(fenced.JobFilter{Queue: "q"}),
			func() error { return ignore(c.ListJobs(ctx, fenced.JobFilter{Queue: "q"})) }},
		{"PauseQueueBadName", fenced.ValidatePauseQueue("q!"),
			func() error { _, _, err := c.PauseQueue(ctx, "q!"); return err }},
		{"PauseQueue", fenced.ValidatePauseQueue("p"),
			func() error { _, _, err := c.PauseQueue(ctx, "p"); return err }},
		{"ResumeQueueEmptyName", fenced.ValidateResumeQueue(""),
			func() error { return ignore(c.ResumeQueue(ctx, "")) }},
		{"ResumeQueue", fenced.ValidateResumeQueue("p"),
			func() error { return ignore(c.ResumeQueue(ctx, "p")) }},
		{"SetJobLimitNegativePerKey", fenced.ValidateSetJobLimit(fenced.JobLimit{Queue: "q", PerKey: -1}),
			func() error { return ignore(c.SetJobLimit(ctx, fenced.JobLimit{Queue: "q", PerKey: -1})) }},
		{"SetJobLimitKeyWithGlobal", fenced.ValidateSetJobLimit(fenced.JobLimit{Queue: "q", ConcurrencyKey: "k", PerKey: 1, Global: 1}),
			func() error {
				return ignore(c.SetJobLimit(ctx, fenced.JobLimit{Queue: "q", ConcurrencyKey: "k", PerKey: 1, Global: 1}))
			}},
		{"SetJobLimitKeyWithoutPerKey", fenced.ValidateSetJobLimit(fenced.JobLimit{Queue: "q", ConcurrencyKey: "k"}),
			func() error { return ignore(c.SetJobLimit(ctx, fenced.JobLimit{Queue: "q", ConcurrencyKey: "k"})) }},
		{"SetJobLimit", fenced.ValidateSetJobLimit(fenced.JobLimit{Queue: "q", PerKey: 2, Global: 5}),
			func() error { return ignore(c.SetJobLimit(ctx, fenced.JobLimit{Queue: "q", PerKey: 2, Global: 5})) }},
		{"DeleteJobLimitKindAndKey", fenced.ValidateDeleteJobLimit("q", "k", "c"),
			func() error { return c.DeleteJobLimit(ctx, "q", "k", "c") }},
		{"DeleteJobLimit", fenced.ValidateDeleteJobLimit("q", "", "c"),
			func() error { return c.DeleteJobLimit(ctx, "q", "", "c") }},
		{"ListJobLimitsBadQueue", fenced.ValidateListJobLimits("a b"),
			func() error { return ignore(c.ListJobLimits(ctx, "a b")) }},
		{"ListJobLimitsEveryQueue", fenced.ValidateListJobLimits(""),
			func() error { return ignore(c.ListJobLimits(ctx, "")) }},
		{"ListKeySlotsBadQueue", fenced.ValidateListKeySlots("a b"),
			func() error { return ignore(c.ListKeySlots(ctx, "a b")) }},
		{"ListKeySlotsEveryQueue", fenced.ValidateListKeySlots(""),
			func() error { return ignore(c.ListKeySlots(ctx, "")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.method()
			if tc.validate == nil {
				if errors.Is(got, fenced.ErrInvalid) {
					t.Fatalf("the check passed the input, the method refused it: %v", got)
				}
				return
			}
			var want, inv *fenced.InvalidError
			if !errors.As(tc.validate, &want) || tc.validate.Error() != want.Error() {
				t.Fatalf("the check returned %#v, want a bare *InvalidError", tc.validate)
			}
			if !errors.As(got, &inv) || got.Error() != inv.Error() || *inv != *want {
				t.Fatalf("the method returned %v, want the check's %v", got, tc.validate)
			}
		})
	}
}
