package drivertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runListKeySlots: each concurrency key with running or due queued jobs is
// listed with its running attempts, its due queued jobs and the limit the
// claim applies to it; a full key holds back its waiting jobs; scheduled
// and unkeyed jobs are not counted.
func runListKeySlots(t *testing.T, b Backend) {
	t.Run("RunningWaitingAndLimit", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: "q", PerKey: 1})
		e.setLimit(t, fenced.JobLimit{Queue: "q", ConcurrencyKey: "vip", PerKey: 3})
		for range 3 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: "a"})
		}
		e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: "vip"})
		e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q"})
		e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: "later", Delay: time.Hour})
		e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "r", ConcurrencyKey: "a"})
		if got := e.claim(t, "q", "A", 10, long); len(got) != 3 {
			t.Fatalf("claimed %d jobs, want one of key a, the vip and the unkeyed one", len(got))
		}
		all, err := e.c.ListKeySlots(ctx(t), "")
		wantNoErr(t, err, "list all")
		want := []fenced.KeySlots{
			{Queue: "q", ConcurrencyKey: "a", Limit: 1, Running: 1, Waiting: 2},
			{Queue: "q", ConcurrencyKey: "vip", Limit: 3, Running: 1},
			{Queue: "r", ConcurrencyKey: "a", Waiting: 1},
		}
		if fmt.Sprint(all) != fmt.Sprint(want) {
			t.Fatalf("key slots = %+v, want %+v", all, want)
		}
		if h := []int64{all[0].HeldBack(), all[1].HeldBack(), all[2].HeldBack()}; fmt.Sprint(h) != "[2 0 0]" {
			t.Fatalf("held back = %v, want [2 0 0]", h)
		}
		q, err := e.c.ListKeySlots(ctx(t), "q")
		wantNoErr(t, err, "list q")
		if fmt.Sprint(q) != fmt.Sprint(want[:2]) {
			t.Fatalf("key slots of q = %+v, want %+v", q, want[:2])
		}
		none, err := e.c.ListKeySlots(ctx(t), "empty")
		wantNoErr(t, err, "list empty")
		if len(none) != 0 {
			t.Fatalf("key slots of an empty queue = %+v", none)
		}
	})
	t.Run("KindDefaultOnlyForOneKind", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: "q", Kind: "x", PerKey: 2})
		e.enqueue(t, fenced.EnqueueParams{Kind: "x", Queue: "q", ConcurrencyKey: "one"})
		e.enqueue(t, fenced.EnqueueParams{Kind: "x", Queue: "q", ConcurrencyKey: "mixed"})
		e.enqueue(t, fenced.EnqueueParams{Kind: "y", Queue: "q", ConcurrencyKey: "mixed"})
		got, err := e.c.ListKeySlots(ctx(t), "q")
		wantNoErr(t, err, "list")
		want := []fenced.KeySlots{
			{Queue: "q", ConcurrencyKey: "mixed", Waiting: 2},
			{Queue: "q", ConcurrencyKey: "one", Limit: 2, Waiting: 1},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("key slots = %+v, want %+v", got, want)
		}
	})
	t.Run("ExpiredAttemptHoldsItsSlotUntilRecovered", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: fenced.DefaultQueue, PerKey: 1})
		for range 2 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", ConcurrencyKey: "a"})
		}
		lost := e.claimOne(t, "A", 30*time.Millisecond)
		e.waitJobExpired(t, lost.ID)
		e.wantKeySlots(t, fenced.KeySlots{Queue: fenced.DefaultQueue, ConcurrencyKey: "a", Limit: 1, Running: 1, Waiting: 1})
		e.recoverExpired(t, lost.ID) // back to queued, due at once
		e.wantKeySlots(t, fenced.KeySlots{Queue: fenced.DefaultQueue, ConcurrencyKey: "a", Limit: 1, Waiting: 2})
	})
	t.Run("InvalidQueueIsRefused", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		_, err := e.c.ListKeySlots(ctx(t), "a b")
		wantInvalid(t, "BadQueue", err)
	})
}

// wantKeySlots asserts the key slots of every queue are want.
func (e *env) wantKeySlots(t *testing.T, want ...fenced.KeySlots) {
	t.Helper()
	got, err := e.c.ListKeySlots(ctx(t), "")
	wantNoErr(t, err, "list key slots")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("key slots = %+v, want %+v", got, want)
	}
}
