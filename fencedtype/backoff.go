package fencedtype

import "time"

// Backoff is an exponential retry delay with jitter: attempt n waits
// min(Max, Base·2^(n−1)), scaled by a random factor in [1−Jitter, 1].
//
// The delay is computed by the database, in the statement that puts the job
// back to queued (a recovery of an expired attempt, or a failure whose
// JobEnd.Backoff is set), from the attempt number on the job's row: each
// backend states the rule once, as one SQL expression, and no attempt
// number is read first.
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

// WithDefaults fills the zero fields (and a NaN Jitter) from DefaultBackoff
// and brings the rest into range: Max at most MaxRetryDelay, Base at most
// Max, Jitter from 0 to 1 (a negative Jitter means none). A backend
// receives a Backoff this way.
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
	case b.Jitter == 0 || b.Jitter != b.Jitter: // zero or NaN
		b.Jitter = DefaultBackoff.Jitter
	case b.Jitter < 0:
		b.Jitter = 0
	case b.Jitter > 1:
		b.Jitter = 1
	}
	return b
}
