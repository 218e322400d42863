//go:build !fenced_broken_limits

package driver

import (
	"fmt"
	"slices"
	"testing"
)

// AdmitClaims admits in claim order while each key, kind and the queue stay
// within their limits, and at most one unblocked job per sequence.
func TestAdmitClaims(t *testing.T) {
	cands := []ClaimCandidate{
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
	load := ClaimLoad{}
	load.AddGlobal("", 5)
	load.AddGlobal("slow", 1)
	if got := AdmitClaims(cands, load, 100); !slices.Equal(got, []int64{1, 3, 6, 8, 9}) {
		t.Fatalf("admitted %v", got)
	}
	load.AddRunning("a", 1)
	if got := AdmitClaims(cands, load, 100); !slices.Equal(got, []int64{1, 3, 6, 8}) {
		t.Fatalf("with one running, admitted %v", got)
	}
	if got := AdmitClaims(cands, ClaimLoad{}, 2); !slices.Equal(got, []int64{1, 3}) {
		t.Fatalf("with a claim limit of 2, admitted %v", got)
	}
}

// LimitLockNames are distinct and sorted; LimitLockIDs likewise, and never
// more than LimitLockBuckets however many names.
func TestLimitLockNames(t *testing.T) {
	cands := []ClaimCandidate{{ConcurrencyKey: "b", SequenceKey: "x"}, {ConcurrencyKey: "a"}, {ConcurrencyKey: "b"}}
	names := LimitLockNames("q", cands, true)
	want := []string{"g\x1fq", "k\x1fq\x1fa", "k\x1fq\x1fb", "s\x1fq\x1fx"}
	if !slices.Equal(names, want) {
		t.Fatalf("names = %q, want %q", names, want)
	}
	ids := LimitLockIDs(names)
	if len(ids) < 1 || len(ids) > 4 || !slices.IsSorted(ids) {
		t.Fatalf("ids = %v", ids)
	}
	if again := LimitLockIDs(names); !slices.Equal(again, ids) {
		t.Fatalf("ids = %v, then %v", ids, again)
	}
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("k\x1fq\x1fcustomer:%d", i)
	}
	ids = LimitLockIDs(many)
	if len(ids) != LimitLockBuckets || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("10000 names: %d ids (want %d), sorted %v", len(ids), LimitLockBuckets, slices.IsSorted(ids))
	}
}
