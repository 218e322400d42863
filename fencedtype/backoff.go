package fencedtype

import (
	"math/rand/v2"
	"time"
)

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

// Restored turns a Backoff that WithDefaults returned, as a job's stored
// Retry is (Job.Retry: a Jitter of 0 there means none), back into the form
// a Backoff is given in (where a Jitter of 0 means the default): none
// becomes a negative Jitter. WithDefaults of the result is b again, so a
// job's own backoff handed to a worker or the database means what it did
// at enqueue.
func (b Backoff) Restored() Backoff {
	if b.Jitter == 0 {
		b.Jitter = -1
	}
	return b
}

// NextRetry is the delay after attempt j.Attempt fails, as the database
// computes it for a Backoff: min(Max, Base·2^(n−1)) scaled by a random
// factor in [1−Jitter, 1], after WithDefaults. It makes a Backoff a retry
// policy (fenced.RetryPolicy); a worker given a Backoff does not call it
// but hands the Backoff to the database (JobEnd.Backoff), which computes
// the same delay in the statement that records the failure.
func (b Backoff) NextRetry(j *Job, _ error) time.Duration {
	b = b.WithDefaults()
	n := 1
	if j != nil && j.Attempt > 1 {
		n = j.Attempt
	}
	d := b.Max
	if n-1 < 62 {
		if e := b.Base << (n - 1); e > 0 && e>>(n-1) == b.Base && e < b.Max {
			d = e
		}
	}
	return time.Duration(float64(d) * (1 - b.Jitter*rand.Float64()))
}
