package drivertest

import (
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// BackoffEval evaluates a backend's backoff expression without jitter for
// attempts 1 to n after base, capped at max, in one query, and returns the
// delays in attempt order.
type BackoffEval func(t *testing.T, base, max time.Duration, n int) []time.Duration

// CheckBackoffExpression checks a backend's one backoff expression, the SQL
// that computes every retry delay (see fenced.Backoff): without jitter,
// attempt n waits exactly min(max, base·2^(n−1)) — never less once the
// doubling passed max, never more than max, whatever the attempt (no
// overflow), for bases that do and do not divide max.
func CheckBackoffExpression(t *testing.T, eval BackoffEval) {
	const attempts = 2000
	for _, base := range []time.Duration{time.Second, 4*time.Minute + 35*time.Second, 5 * time.Minute, 13*time.Hour + 7*time.Minute + 59*time.Second} {
		got := eval(t, base, fenced.MaxRetryDelay, attempts)
		if len(got) != attempts {
			t.Fatalf("base %s: %d delays for %d attempts", base, len(got), attempts)
		}
		prev := time.Duration(0)
		for i, d := range got {
			n := i + 1
			if want := backoffCeiling(base, fenced.MaxRetryDelay, n); d != want {
				t.Fatalf("base %s: attempt %d waits %s, want %s", base, n, d, want)
			}
			if d < prev || d > fenced.MaxRetryDelay {
				t.Fatalf("base %s: attempt %d waits %s, attempt %d waited %s (max %s)", base, n, d, n-1, prev, fenced.MaxRetryDelay)
			}
			prev = d
		}
		if prev != fenced.MaxRetryDelay {
			t.Fatalf("base %s: last delay %s, want %s", base, prev, fenced.MaxRetryDelay)
		}
	}
}

// backoffCeiling is min(max, base·2^(n−1)), the delay of attempt n before
// jitter, computed without overflow: base ≤ max>>shift keeps
// base<<shift ≤ max.
func backoffCeiling(base, max time.Duration, n int) time.Duration {
	if shift := n - 1; shift >= 0 && shift < 63 && base <= max>>shift {
		return base << shift
	}
	return max
}
