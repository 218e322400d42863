package fencedtype

import (
	"testing"
	"time"
)

// A Backoff as stored (after WithDefaults) restored and given defaults
// again is itself: no jitter stays none, a jitter stays that jitter.
func TestRestoredBackoffMeansWhatWasStored(t *testing.T) {
	for _, given := range []Backoff{{Jitter: -1}, {Jitter: 0.25}, {}, {Base: 2 * time.Second, Max: time.Minute, Jitter: 1}} {
		stored := given.WithDefaults()
		if got := stored.Restored().WithDefaults(); got != stored {
			t.Errorf("given %+v, stored %+v: restored then defaulted %+v", given, stored, got)
		}
	}
}
