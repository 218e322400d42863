package drivertest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runSetJobLimit: a limit is stored per scope (queue, kind, key), replaced
// by the next one of its scope, and refused with *InvalidError when its
// scope or numbers are not a limit.
func runSetJobLimit(t *testing.T, b Backend) {
	t.Run("StoresAndReplacesPerScope", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		got, err := e.c.SetJobLimit(ctx(t), fenced.JobLimit{Queue: "q", PerKey: 2, Global: 5})
		wantNoErr(t, err, "set")
		if *got != (fenced.JobLimit{Queue: "q", PerKey: 2, Global: 5}) {
			t.Fatalf("stored %+v", got)
		}
		e.setLimit(t, fenced.JobLimit{Queue: "q", PerKey: 3})
		e.setLimit(t, fenced.JobLimit{Queue: "q", Kind: "k", Global: 1})
		e.setLimit(t, fenced.JobLimit{Queue: "q", ConcurrencyKey: "vip", PerKey: 9})
		ls, err := e.c.ListJobLimits(ctx(t), "q")
		wantNoErr(t, err, "list")
		want := []fenced.JobLimit{{Queue: "q", PerKey: 3}, {Queue: "q", ConcurrencyKey: "vip", PerKey: 9},
			{Queue: "q", Kind: "k", Global: 1}}
		if fmt.Sprint(ls) != fmt.Sprint(want) {
			t.Fatalf("limits = %+v, want %+v", ls, want)
		}
	})
	t.Run("InvalidLimitsAreRefused", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for name, l := range map[string]fenced.JobLimit{
			"NoQueue":           {PerKey: 1},
			"BadQueue":          {Queue: "a b", PerKey: 1},
			"NegativePerKey":    {Queue: "q", PerKey: -1},
			"NegativeGlobal":    {Queue: "q", Global: -1},
			"Huge":              {Queue: "q", Global: fenced.MaxJobLimit + 1},
			"KeyAndKind":        {Queue: "q", Kind: "k", ConcurrencyKey: "c", PerKey: 1},
			"KeyWithGlobal":     {Queue: "q", ConcurrencyKey: "c", PerKey: 1, Global: 1},
			"KeyWithoutPerKey":  {Queue: "q", ConcurrencyKey: "c"},
			"LongKey":           {Queue: "q", ConcurrencyKey: strings.Repeat("c", 201), PerKey: 1},
			"ControlCharInKind": {Queue: "q", Kind: "a\x01", PerKey: 1},
		} {
			_, err := e.c.SetJobLimit(ctx(t), l)
			wantInvalid(t, name, err)
		}
		ls, err := e.c.ListJobLimits(ctx(t), "")
		wantNoErr(t, err, "list")
		if len(ls) != 0 {
			t.Fatalf("invalid limits stored: %+v", ls)
		}
	})
}

// runDeleteJobLimit: deleting a scope's limit lifts it; deleting one that
// is not declared is ErrNotFound.
func runDeleteJobLimit(t *testing.T, b Backend) {
	e := setup(t, b)
	e.setLimit(t, fenced.JobLimit{Queue: "q", PerKey: 1})
	for range 2 {
		e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: "a"})
	}
	if got := e.claim(t, "q", "A", 10, long); len(got) != 1 {
		t.Fatalf("claimed %d jobs under a limit of 1", len(got))
	}
	wantNoErr(t, e.c.DeleteJobLimit(ctx(t), "q", "", ""), "delete")
	if got := e.claim(t, "q", "A", 10, long); len(got) != 1 {
		t.Fatalf("claimed %d jobs once the limit was deleted, want the other one", len(got))
	}
	wantErrIs(t, e.c.DeleteJobLimit(ctx(t), "q", "", ""), fenced.ErrNotFound)
	wantInvalid(t, "DeleteBadQueue", e.c.DeleteJobLimit(ctx(t), "", "", ""))
}

// runListJobLimits: limits are listed by queue, kind and key, of one queue
// or of all.
func runListJobLimits(t *testing.T, b Backend) {
	e := setup(t, b)
	e.setLimit(t, fenced.JobLimit{Queue: "b", Global: 1})
	e.setLimit(t, fenced.JobLimit{Queue: "a", Kind: "x", PerKey: 2})
	e.setLimit(t, fenced.JobLimit{Queue: "a", PerKey: 1})
	all, err := e.c.ListJobLimits(ctx(t), "")
	wantNoErr(t, err, "list all")
	if fmt.Sprint(all) != fmt.Sprint([]fenced.JobLimit{{Queue: "a", PerKey: 1}, {Queue: "a", Kind: "x", PerKey: 2}, {Queue: "b", Global: 1}}) {
		t.Fatalf("all limits = %+v", all)
	}
	one, err := e.c.ListJobLimits(ctx(t), "b")
	wantNoErr(t, err, "list b")
	if len(one) != 1 || one[0].Queue != "b" {
		t.Fatalf("limits of b = %+v", one)
	}
}

// runConcurrencyLimits: a claim never starts an attempt that would make a
// key's running attempts exceed its limit, or a queue's or kind's running
// jobs exceed their global limit, whoever claims; a slot frees when its
// attempt ends or its job is recovered (docs/design.md, "Concurrency limits
// and sequences").
func runConcurrencyLimits(t *testing.T, b Backend) {
	t.Run("KeysCarriedOnTheJob", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", ConcurrencyKey: "c1", SequenceKey: "s1"})
		got, _ := e.job(t, j.ID)
		if j.ConcurrencyKey != "c1" || j.SequenceKey != "s1" || got.ConcurrencyKey != "c1" || got.SequenceKey != "s1" {
			t.Fatalf("enqueued %+v, read %+v", j, got)
		}
		c := e.claimOne(t, "A", long)
		if c.ConcurrencyKey != "c1" || c.SequenceKey != "s1" {
			t.Fatalf("claimed %+v", c)
		}
		for name, p := range map[string]fenced.EnqueueParams{
			"LongConcurrencyKey":      {Kind: "k", ConcurrencyKey: strings.Repeat("c", 201)},
			"BadConcurrencyKey":       {Kind: "k", ConcurrencyKey: "\xff"},
			"LongSequenceKey":         {Kind: "k", SequenceKey: strings.Repeat("s", 201)},
			"ContinueWithoutSequence": {Kind: "k", SequenceContinueOnFailed: true},
		} {
			_, _, err := e.c.Enqueue(ctx(t), p)
			wantInvalid(t, name, err)
		}
	})
	t.Run("LimitRespectedAcrossClaims", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: "q", PerKey: 2})
		var a []int64
		for range 5 {
			a = append(a, e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: "a"}).ID)
		}
		for range 3 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: "b"})
		}
		got := e.claim(t, "q", "A", 10, long)
		if n := keyCounts(got); n["a"] != 2 || n["b"] != 2 || len(got) != 4 {
			t.Fatalf("first claim took %v", n)
		}
		if got[0].ID != a[0] || got[1].ID != a[1] {
			t.Fatalf("claimed %d, %d first, want the key's first two jobs %d, %d", got[0].ID, got[1].ID, a[0], a[1])
		}
		for range 3 {
			if more := e.claim(t, "q", "B", 1, long); len(more) != 0 {
				t.Fatalf("a claim beyond every key's limit took %v", keyCounts(more))
			}
		}
		e.wantRunning(t, "q", map[string]int{"a": 2, "b": 2})
	})
	t.Run("SlotFreesWhenTheAttemptEnds", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: fenced.DefaultQueue, PerKey: 1})
		for range 3 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", ConcurrencyKey: "a"})
		}
		first := e.claimOne(t, "A", long)
		if more := e.claim(t, fenced.DefaultQueue, "B", 5, long); len(more) != 0 {
			t.Fatalf("claimed %d more of a full key", len(more))
		}
		wantNoErr(t, e.c.CompleteJob(ctx(t), first.Ref(), nil), "complete")
		second := e.claimOne(t, "B", long)
		if more := e.claim(t, fenced.DefaultQueue, "B", 5, long); len(more) != 0 {
			t.Fatalf("claimed %d more of a full key", len(more))
		}
		wantNoErr(t, e.c.FailJob(ctx(t), second.Ref(), "boom", time.Hour, false), "fail")
		if third := e.claimOne(t, "C", long); third.ID == second.ID || third.ID == first.ID {
			t.Fatalf("claimed job %d again", third.ID)
		}
	})
	t.Run("SlotOfAnExpiredAttemptFreesOnRecovery", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: fenced.DefaultQueue, PerKey: 1})
		for range 2 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", ConcurrencyKey: "a"})
		}
		lost := e.claimOne(t, "A", 30*time.Millisecond)
		e.waitJobExpired(t, lost.ID)
		// Expired but not recovered: its attempt is still running and may
		// still hold a fenced transaction open, so the slot stays taken.
		if more := e.claim(t, fenced.DefaultQueue, "B", 5, long); len(more) != 0 {
			t.Fatalf("claimed %d jobs into the slot of an expired attempt not yet recovered", len(more))
		}
		e.recoverExpired(t, lost.ID)
		if next := e.claim(t, fenced.DefaultQueue, "B", 5, long); len(next) != 1 {
			t.Fatalf("claimed %d jobs once the expired attempt was recovered, want 1", len(next))
		}
	})
	t.Run("AnExpiredAttemptInItsFencedTransactionKeepsItsSlot", func(t *testing.T) {
		t.Parallel()
		if b.Name == "sqlite" {
			t.Skip("SQLite has one writer: recovery and claims wait for the open transaction itself")
		}
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: fenced.DefaultQueue, PerKey: 1})
		for range 2 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", ConcurrencyKey: "a"})
		}
		paused := e.claimOne(t, "A", 300*time.Millisecond)
		err := e.c.JobTx(ctx(t), paused.Ref(), func(fenced.Tx) error {
			e.waitJobExpired(t, paused.ID)
			// Recovery skips the row the open transaction holds, so the
			// attempt stays running and keeps the key's only slot.
			_, err := e.c.RecoverJobs(ctx(t), nil, 100, fenced.Backoff{Base: time.Microsecond, Max: time.Microsecond})
			wantNoErr(t, err, "recover")
			if j, _ := e.job(t, paused.ID); j.State != fenced.JobRunning {
				t.Errorf("job was taken back to %s while its attempt's transaction was open", j.State)
			}
			if got := e.claim(t, fenced.DefaultQueue, "B", 5, long); len(got) != 0 {
				t.Errorf("claimed %d jobs of the key while its expired attempt's transaction was open", len(got))
			}
			return nil
		})
		wantNoErr(t, err, "job tx")
		e.recoverExpired(t, paused.ID)
		if next := e.claim(t, fenced.DefaultQueue, "B", 5, long); len(next) != 1 {
			t.Fatalf("claimed %d jobs once the attempt's transaction ended and it was recovered, want 1", len(next))
		}
	})
	t.Run("OverridesBeatDefaults", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: "q", PerKey: 1})
		e.setLimit(t, fenced.JobLimit{Queue: "q", Kind: "bulk", PerKey: 3})
		e.setLimit(t, fenced.JobLimit{Queue: "q", ConcurrencyKey: "vip", PerKey: 2})
		for range 4 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: "vip"})
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: "x"})
			e.enqueue(t, fenced.EnqueueParams{Kind: "bulk", Queue: "q", ConcurrencyKey: "y"})
		}
		got := e.claim(t, "q", "A", 100, long)
		if n := keyCounts(got); n["vip"] != 2 || n["x"] != 1 || n["y"] != 3 || len(got) != 6 {
			t.Fatalf("claimed %v, want vip 2 (its override), x 1 (the queue's), y 3 (its kind's)", n)
		}
		if more := e.claim(t, "q", "A", 100, long); len(more) != 0 {
			t.Fatalf("claimed %v more", keyCounts(more))
		}
	})
	t.Run("KindDefaultsDifferWithinAKey", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: "q", Kind: "x", PerKey: 1})
		e.setLimit(t, fenced.JobLimit{Queue: "q", Kind: "y", PerKey: 3})
		var ids []int64
		for _, kind := range []string{"x", "x", "y", "y", "y"} {
			ids = append(ids, e.enqueue(t, fenced.EnqueueParams{Kind: kind, Queue: "q", ConcurrencyKey: "m"}).ID)
		}
		// In claim order: x (0 running < 1), not the second x (1 < 1 fails),
		// y and y (1 and 2 running < 3), not the last y.
		got := e.claim(t, "q", "A", 10, long)
		var gotIDs []int64
		for _, j := range got {
			gotIDs = append(gotIDs, j.ID)
		}
		if want := []int64{ids[0], ids[2], ids[3]}; fmt.Sprint(gotIDs) != fmt.Sprint(want) {
			t.Fatalf("claimed %v, want %v (each job under its kind's limit, counting the key's jobs admitted before it)", gotIDs, want)
		}
		if more := e.claim(t, "q", "B", 10, long); len(more) != 0 {
			t.Fatalf("claimed %d more", len(more))
		}
	})
	t.Run("AKeysOwnLimitElseItsKindsDefaultElseTheQueues", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: "q", PerKey: 3})
		e.setLimit(t, fenced.JobLimit{Queue: "q", Kind: "a", PerKey: 2})
		e.setLimit(t, fenced.JobLimit{Queue: "q", ConcurrencyKey: "own-a", PerKey: 5})
		e.setLimit(t, fenced.JobLimit{Queue: "q", ConcurrencyKey: "own-b", PerKey: 5})
		for range 6 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "a", Queue: "q", ConcurrencyKey: "own-a"})
			e.enqueue(t, fenced.EnqueueParams{Kind: "b", Queue: "q", ConcurrencyKey: "own-b"})
			e.enqueue(t, fenced.EnqueueParams{Kind: "a", Queue: "q", ConcurrencyKey: "kind-a"})
			e.enqueue(t, fenced.EnqueueParams{Kind: "b", Queue: "q", ConcurrencyKey: "queue-b"})
			e.enqueue(t, fenced.EnqueueParams{Kind: "a", Queue: "q"})
		}
		got := keyCounts(e.claim(t, "q", "A", 100, long))
		if want := map[string]int{"own-a": 5, "own-b": 5, "kind-a": 2, "queue-b": 3, "": 6}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("claimed %v, want %v (the key's own limit over its kind's default, the kind's over the queue's, no limit without a key)", got, want)
		}
		e.wantKeySlots(t,
			fenced.KeySlots{Queue: "q", ConcurrencyKey: "kind-a", Limit: 2, Running: 2, Waiting: 4},
			fenced.KeySlots{Queue: "q", ConcurrencyKey: "own-a", Limit: 5, Running: 5, Waiting: 1},
			fenced.KeySlots{Queue: "q", ConcurrencyKey: "own-b", Limit: 5, Running: 5, Waiting: 1},
			fenced.KeySlots{Queue: "q", ConcurrencyKey: "queue-b", Limit: 3, Running: 3, Waiting: 3})
	})
	t.Run("AKeyFullUnderItsKindsDefaultHoldsBackNoOtherKey", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: "q", Kind: "k", PerKey: 1})
		wantFullKeyHoldsBackNoOtherKey(t, e)
	})
	t.Run("AKeyFullUnderTheQueuesDefaultHoldsBackNoOtherKey", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// Kind k has no default of its own: the queue's 1 applies, though
		// another kind allows more.
		e.setLimit(t, fenced.JobLimit{Queue: "q", PerKey: 1})
		e.setLimit(t, fenced.JobLimit{Queue: "q", Kind: "big", PerKey: 5})
		wantFullKeyHoldsBackNoOtherKey(t, e)
	})
	t.Run("EveryJobUnderItsLimitIsClaimed", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for trial := range 12 {
			wantEveryJobUnderItsLimitClaimed(t, e, fmt.Sprintf("q%d", trial), rand.New(rand.NewPCG(uint64(trial), 7)))
		}
	})
	t.Run("GlobalLimits", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: "q", Global: 3})
		e.setLimit(t, fenced.JobLimit{Queue: "q", Kind: "slow", Global: 1})
		for range 3 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "slow", Queue: "q"})
		}
		for range 3 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "fast", Queue: "q"})
		}
		got := e.claim(t, "q", "A", 100, long)
		kinds := map[string]int{}
		for _, j := range got {
			kinds[j.Kind]++
		}
		if kinds["slow"] != 1 || kinds["fast"] != 2 {
			t.Fatalf("claimed %v, want slow 1 (its kind's limit) and fast 2 (the queue's limit of 3)", kinds)
		}
		if more := e.claim(t, "q", "B", 100, long); len(more) != 0 {
			t.Fatalf("claimed %d beyond the queue's global limit", len(more))
		}
		for _, j := range got {
			if j.Kind == "fast" {
				wantNoErr(t, e.c.CompleteJob(ctx(t), j.Ref(), nil), "complete")
				break
			}
		}
		if more := e.claim(t, "q", "B", 100, long); len(more) != 1 || more[0].Kind != "fast" {
			t.Fatalf("after one ended, claimed %d, want one fast job", len(more))
		}
	})
	t.Run("KeylessJobsAndUndeclaredKeysAreUnlimited", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: "q", PerKey: 1})
		for range 3 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: "a"})
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q"})
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "free", ConcurrencyKey: "a"})
		}
		if got := e.claim(t, "q", "A", 100, long); len(got) != 4 || keyCounts(got)["a"] != 1 {
			t.Fatalf("claimed %v in q, want a 1 and the 3 keyless jobs", keyCounts(got))
		}
		if got := e.claim(t, "free", "A", 100, long); len(got) != 3 {
			t.Fatalf("claimed %d jobs of a key no limit is declared for, want all 3", len(got))
		}
	})
	t.Run("LimitHoldsAcrossClaimers", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.setLimit(t, fenced.JobLimit{Queue: "q", PerKey: 2, Global: 5})
		for i := range 30 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: fmt.Sprint("k", i%3)})
		}
		clients := []*fenced.Client{e.c, e.b.open(t, e.url, fenced.Config{}), e.b.open(t, e.url, fenced.Config{})}
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					if _, err := c.ClaimJobs(ctx(t), "q", fmt.Sprint("w", i), 2, long); err != nil {
						t.Errorf("claim: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		n := e.running(t, "q")
		total := 0
		for k, v := range n {
			total += v
			if v > 2 {
				t.Errorf("key %s has %d running attempts, limit 2", k, v)
			}
		}
		if total != 5 {
			t.Fatalf("%d running in all (%v), want the global limit of 5 reached", total, n)
		}
	})
	t.Run("TwoClaimersRacingForTheLastSlotNeverBothWin", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		other := e.b.open(t, e.url, fenced.Config{})
		rounds := 40
		if b.Name == "sqlite" {
			rounds = 15
		}
		for r := range rounds {
			queue := fmt.Sprint("race", r)
			e.setLimit(t, fenced.JobLimit{Queue: queue, PerKey: 2})
			for range 5 {
				e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: queue, ConcurrencyKey: "hot"})
			}
			if first := e.claim(t, queue, "A", 1, long); len(first) != 1 {
				t.Fatalf("round %d: first claim got %d jobs", r, len(first))
			}
			// One slot left; each claimer asks for two jobs of the key.
			start := make(chan struct{})
			got := make([]int, 2)
			var wg sync.WaitGroup
			for i, c := range []*fenced.Client{e.c, other} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					jobs, err := c.ClaimJobs(ctx(t), queue, fmt.Sprint("racer", i), 2, long)
					if err != nil {
						t.Errorf("round %d: claim: %v", r, err)
					}
					got[i] = len(jobs)
				}()
			}
			close(start)
			wg.Wait()
			if got[0]+got[1] != 1 {
				t.Fatalf("round %d: the racers for the last slot claimed %v jobs, want exactly one in all", r, got)
			}
			if n := e.running(t, queue)["hot"]; n != 2 {
				t.Fatalf("round %d: %d attempts of the key running, limit 2", r, n)
			}
		}
	})
}

// wantFullKeyHoldsBackNoOtherKey: with key a's limit in queue q at 1 for
// kind k and above 1 (or none) for kind big, one job of a runs and more
// jobs of a and kind k are queued than a claim's window holds, ahead of a
// job of a and kind big and a job of key b. Claims of one job take those
// two, and nothing else, within a few claims.
func wantFullKeyHoldsBackNoOtherKey(t *testing.T, e *env) {
	t.Helper()
	e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: "a"})
	if got := e.claim(t, "q", "A", 1, long); len(got) != 1 {
		t.Fatalf("first claim took %d jobs, want 1", len(got))
	}
	for range 40 {
		e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: "a"})
	}
	want := map[int64]bool{
		e.enqueue(t, fenced.EnqueueParams{Kind: "big", Queue: "q", ConcurrencyKey: "a"}).ID: true,
		e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "q", ConcurrencyKey: "b"}).ID:   true,
	}
	// A claim may come back short (PostgreSQL's first pick after a claim
	// that found no key full leaves full keys out); the others must pass
	// over the full key's jobs of kind k.
	for try := 1; len(want) > 0; try++ {
		if try > 5 {
			t.Fatalf("jobs %v not claimed in %d claims: a full key of one kind held them back", want, try-1)
		}
		for _, j := range e.claim(t, "q", "B", 1, long) {
			if !want[j.ID] {
				t.Fatalf("claim %d took job %d (kind %s, key %s), beyond its key's limit", try, j.ID, j.Kind, j.ConcurrencyKey)
			}
			delete(want, j.ID)
		}
	}
	e.wantRunning(t, "q", map[string]int{"a": 2, "b": 1})
}

// wantEveryJobUnderItsLimitClaimed declares random per-key limits in
// queue (a queue default, kind defaults, keys' own; each absent or 1 to 2),
// queues more jobs of each key and kind than a claim's window holds, in
// key order, and claims one job at a time until three claims in a row take
// nothing. Then every job left queued must have a key full for it: its
// key's running attempts reach the limit that applies to its kind. A
// claim that passes over the jobs of a key full for one kind must still
// reach the key's other kinds and the other keys.
func wantEveryJobUnderItsLimitClaimed(t *testing.T, e *env, queue string, rng *rand.Rand) {
	t.Helper()
	kinds, keys := []string{"k1", "k2", "k3"}, []string{"a", "b", "c"}
	pick := func() int { return rng.IntN(3) } // 0: none declared
	declare := func(kind, key string) int {
		n := pick()
		if n > 0 {
			e.setLimit(t, fenced.JobLimit{Queue: queue, Kind: kind, ConcurrencyKey: key, PerKey: n})
		}
		return n
	}
	queueDefault := declare("", "")
	kindDefault, own := map[string]int{}, map[string]int{}
	for _, k := range kinds {
		kindDefault[k] = declare(k, "")
	}
	for _, k := range keys {
		own[k] = declare("", k)
	}
	limit := func(kind, key string) int { // 0: none
		for _, n := range []int{own[key], kindDefault[kind], queueDefault} {
			if n > 0 {
				return n
			}
		}
		return 0
	}
	for _, key := range keys {
		for _, kind := range kinds {
			for range 24 {
				e.enqueue(t, fenced.EnqueueParams{Kind: kind, Queue: queue, ConcurrencyKey: key})
			}
		}
	}
	for empty, claims := 0, 0; empty < 3; claims++ {
		if claims > 200 {
			t.Fatalf("%s: more than 200 claims", queue)
		}
		if got := e.claim(t, queue, "A", 1, long); len(got) == 0 {
			empty++
		} else {
			empty = 0
		}
	}
	running := e.running(t, queue)
	left, err := e.c.ListJobs(ctx(t), fenced.JobFilter{Queue: queue, State: fenced.JobQueued, Limit: fenced.MaxListLimit})
	wantNoErr(t, err, "list queued")
	for _, j := range left {
		if n := limit(j.Kind, j.ConcurrencyKey); n == 0 || running[j.ConcurrencyKey] < n {
			t.Fatalf("%s: job %d (kind %s, key %s) left queued with %d of its key running, limit %d "+
				"(queue default %d, kind defaults %v, own %v)", queue, j.ID, j.Kind, j.ConcurrencyKey,
				running[j.ConcurrencyKey], n, queueDefault, kindDefault, own)
		}
	}
}

func (e *env) setLimit(t *testing.T, l fenced.JobLimit) {
	t.Helper()
	_, err := e.c.SetJobLimit(ctx(t), l)
	wantNoErr(t, err, "set job limit")
}

// keyCounts counts jobs by concurrency key.
func keyCounts(jobs []*fenced.Job) map[string]int {
	n := map[string]int{}
	for _, j := range jobs {
		n[j.ConcurrencyKey]++
	}
	return n
}

// running counts the running jobs of queue by concurrency key, as stored.
func (e *env) running(t *testing.T, queue string) map[string]int {
	t.Helper()
	jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{Queue: queue, State: fenced.JobRunning, Limit: fenced.MaxListLimit})
	wantNoErr(t, err, "list running")
	return keyCounts(jobs)
}

func (e *env) wantRunning(t *testing.T, queue string, want map[string]int) {
	t.Helper()
	if got := e.running(t, queue); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("running in %s by key = %v, want %v", queue, got, want)
	}
}

// waitJobExpired polls until the job's lease expired by the database clock.
func (e *env) waitJobExpired(t *testing.T, id int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, _ := e.job(t, id)
		if j.State != fenced.JobRunning || j.LeaseExpiresAt == nil {
			t.Fatalf("job %d is %s, not running", id, j.State)
		}
		if !j.LeaseExpiresAt.After(j.DecidedAt) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d lease never expired", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wantInvalid asserts err is an *InvalidError with a reason.
func wantInvalid(t *testing.T, name string, err error) {
	t.Helper()
	var inv *fenced.InvalidError
	if !errors.Is(err, fenced.ErrInvalid) || !errors.As(err, &inv) || inv.Reason == "" {
		t.Errorf("%s: want ErrInvalid with a reason, got %v", name, err)
	}
}
