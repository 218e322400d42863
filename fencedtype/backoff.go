package fencedtype

import (
	"math/rand/v2"
	"time"
)

// Backoff is an exponential retry delay with jitter: attempt n waits
// min(Max, Base·2^(n−1)), scaled by a random factor in [1−Jitter, 1].
type Backoff struct {
	// Base is the first delay. Default 1s.
	Base time.Duration
	// Max caps the delay. Default 1h.
	Max time.Duration
	// Jitter is the fraction of the delay that is random, 0 to 1. Default 0.5;
	// a negative value means none.
	Jitter float64
}

// MaxRetryDelay is the longest retry or snooze delay.
const MaxRetryDelay = 365 * 24 * time.Hour

// DefaultBackoff is the backoff used when none is configured.
var DefaultBackoff = Backoff{Base: time.Second, Max: time.Hour, Jitter: 0.5}

// WithDefaults fills the zero fields from DefaultBackoff and brings the rest
// into range: Max at most MaxRetryDelay, Base at most Max, Jitter from 0 to 1
// (a negative Jitter means none). A backend receives a Backoff this way.
func (b Backoff) WithDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBackoff.Base
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoff.Max
	}
	b.Max = min(b.Max, MaxRetryDelay)
	b.Base = min(b.Base, b.Max)
	switch {
	case b.Jitter == 0:
		b.Jitter = DefaultBackoff.Jitter
	case b.Jitter < 0:
		b.Jitter = 0
	case b.Jitter > 1:
		b.Jitter = 1
	}
	return b
}

// Delay is the wait before the retry that follows attempt (1-based).
func (b Backoff) Delay(attempt int) time.Duration {
	b = b.WithDefaults()
	d := b.Max
	// Base ≤ Max>>shift keeps Base<<shift ≤ Max: no overflow, whatever attempt.
	if shift := attempt - 1; shift >= 0 && shift < 63 && b.Base <= b.Max>>shift {
		d = b.Base << shift
	}
	return time.Duration(float64(d) * (1 - b.Jitter*rand.Float64()))
}
