package fencedtype

import (
	"testing"
	"time"
)

// Backoff.Delay is min(Max, Base·2^(n−1)) without jitter: never less once
// the doubling passed Max, whatever the attempt (no overflow).
func TestBackoffDelayDoesNotOverflow(t *testing.T) {
	for _, base := range []time.Duration{time.Second, 4*time.Minute + 35*time.Second, 5 * time.Minute, 13*time.Hour + 7*time.Minute + 59*time.Second} {
		b := Backoff{Base: base, Max: MaxRetryDelay, Jitter: -1}
		prev := time.Duration(0)
		for n := 1; n <= 2000; n++ {
			d := b.Delay(n)
			if d < prev || d > MaxRetryDelay {
				t.Fatalf("base %s: attempt %d waits %s, attempt %d waited %s (max %s)", base, n, d, n-1, prev, MaxRetryDelay)
			}
			prev = d
		}
		if prev != MaxRetryDelay {
			t.Fatalf("base %s: last delay %s, want %s", base, prev, MaxRetryDelay)
		}
	}
}
