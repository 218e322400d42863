//go:build !fenced_broken_limits

package claimlimit

import (
	"fmt"
	"slices"
	"testing"
)

// Admit admits in claim order while each key, kind and the queue stay
// within their limits, and at most one unblocked job per sequence.
func TestAdmit(t *testing.T) {
	cands := []Candidate{
		{ID: 1, Kind: "a", ConcurrencyKey: "k", KeyLimit: 2, KeyRunning: 1},
		{ID: 2, Kind: "a", ConcurrencyKey: "k", KeyLimit: 2, KeyRunning: 1}, // k full after 1
		{ID: 3, Kind: "a", SequenceKey: "s"},
		{ID: 4, Kind: "a", SequenceKey: "s"}, // a second head of s in one claim
		{ID: 5, Kind: "b", SequenceKey: "t", Blocked: true},
		{ID: 6, Kind: "slow"},
		{ID: 7, Kind: "slow"}, // its kind's global limit
		{ID: 8, Kind: "a", ConcurrencyKey: "free"},
		{ID: 9, Kind: "a"}, // the queue's global limit
	}
	load := Load{}
	load.AddGlobal("", 5)
	load.AddGlobal("slow", 1)
	if got := Admit(cands, load, 100); !slices.Equal(got, []int64{1, 3, 6, 8, 9}) {
		t.Fatalf("admitted %v", got)
	}
	load.AddRunning("a", 1)
	if got := Admit(cands, load, 100); !slices.Equal(got, []int64{1, 3, 6, 8}) {
		t.Fatalf("with one running, admitted %v", got)
	}
	if got := Admit(cands, Load{}, 2); !slices.Equal(got, []int64{1, 3}) {
		t.Fatalf("with a claim limit of 2, admitted %v", got)
	}
}

// LockNames are distinct and sorted; LockIDs likewise, and never
// more than LockBuckets however many names.
func TestLockNames(t *testing.T) {
	cands := []Candidate{{ConcurrencyKey: "b", SequenceKey: "x"}, {ConcurrencyKey: "a"}, {ConcurrencyKey: "b"}}
	names := LockNames("q", cands, true)
	want := []string{"g\x1fq", "k\x1fq\x1fa", "k\x1fq\x1fb", "s\x1fq\x1fx"}
	if !slices.Equal(names, want) {
		t.Fatalf("names = %q, want %q", names, want)
	}
	ids := LockIDs(names)
	if len(ids) < 1 || len(ids) > 4 || !slices.IsSorted(ids) {
		t.Fatalf("ids = %v", ids)
	}
	if again := LockIDs(names); !slices.Equal(again, ids) {
		t.Fatalf("ids = %v, then %v", ids, again)
	}
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("k\x1fq\x1fcustomer:%d", i)
	}
	ids = LockIDs(many)
	if len(ids) != LockBuckets || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("10000 names: %d ids (want %d), sorted %v", len(ids), LockBuckets, slices.IsSorted(ids))
	}
}
