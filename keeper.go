package fenced

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrTrustExpired is the cause of a Keeper's loss when renewals kept failing
// (for example the database was unreachable) until the local trust window ran
// out. The lease may still be held in the database, but the keeper can no
// longer be sure, so it stops trusting it.
var ErrTrustExpired = errors.New("lease trust window ran out before a renewal succeeded")

// ErrKeeperStopped is the cause when Stop or Release ended the keeper.
var ErrKeeperStopped = errors.New("keeper stopped")

// KeepOptions tune a Keeper. The zero value works.
type KeepOptions struct {
	// RenewEvery is the interval between renewals. Default ttl/3.
	RenewEvery time.Duration
	// SafetyMargin is taken off the trust window: the keeper considers the
	// lease lost at (start of last successful renewal + ttl − SafetyMargin)
	// on the monotonic clock. Default ttl/10.
	SafetyMargin time.Duration
}

// Keeper holds a lease and renews it in the background.
//
// Its Context ends (and Done closes) when a renewal is refused as stale, when
// renewals keep failing until the local trust window runs out, or when Stop
// or Release is called; Err then says which. A keeper is a liveness aid: it
// tells work to stop, but it cannot stop a paused process from writing.
// Safety comes only from the fence checks in the database (LeaseTx,
// WriteResource), which must carry Lease().Fence.
type Keeper struct {
	c      *Client
	ttl    time.Duration
	opts   KeepOptions
	lease  Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{}
	ended  chan struct{}
	once   sync.Once
	mu     sync.Mutex
}

// Keep acquires the named lease and starts renewing it. ctx bounds the
// keeper's whole life: when it ends, renewal stops (the lease is not
// released; it expires).
func (c *Client) Keep(ctx context.Context, name, owner string, ttl time.Duration, opts KeepOptions) (*Keeper, error) {
	start := c.now()
	l, err := c.AcquireLease(ctx, name, owner, ttl)
	if err != nil {
		return nil, err
	}
	return c.keep(ctx, *l, start, ttl, opts), nil
}

// keep starts renewing l, acquired by a statement sent at start.
func (c *Client) keep(ctx context.Context, l Lease, start time.Time, ttl time.Duration, opts KeepOptions) *Keeper {
	if opts.RenewEvery <= 0 {
		opts.RenewEvery = ttl / 3
	}
	if opts.SafetyMargin <= 0 || opts.SafetyMargin >= ttl {
		opts.SafetyMargin = ttl / 10
	}
	kctx, cancel := context.WithCancelCause(ctx)
	k := &Keeper{c: c, ttl: ttl, opts: opts, lease: l, ctx: kctx, cancel: cancel,
		stop: make(chan struct{}), ended: make(chan struct{})}
	go k.run(start)
	return k
}

// Lease returns the generation held, with the expiry of the last renewal.
func (k *Keeper) Lease() Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lease
}

// Context returns a context that ends when the lease is lost or the keeper
// stops; context.Cause gives the reason.
func (k *Keeper) Context() context.Context { return k.ctx }

// Done is closed when the lease is lost or the keeper stops.
func (k *Keeper) Done() <-chan struct{} { return k.ctx.Done() }

// Err is nil while the lease is kept, then the reason it ended: a
// *StaleError, ErrTrustExpired, ErrKeeperStopped, or the parent context's
// error.
func (k *Keeper) Err() error {
	if k.ctx.Err() == nil {
		return nil
	}
	return context.Cause(k.ctx)
}

// Stop stops renewing without releasing: the lease runs out at its expiry.
// It waits for the renewal loop to end.
func (k *Keeper) Stop() {
	k.once.Do(func() {
		k.cancel(ErrKeeperStopped) // also interrupts a renewal in flight
		close(k.stop)
	})
	<-k.ended
}

// Release stops renewing and releases the lease.
func (k *Keeper) Release(ctx context.Context) error {
	k.Stop()
	_, err := k.c.ReleaseLease(ctx, k.Lease())
	return err
}

func (k *Keeper) run(start time.Time) {
	defer close(k.ended)
	trustUntil := start.Add(k.ttl - k.opts.SafetyMargin)
	trust := time.NewTimer(k.trustLeft(start))
	defer trust.Stop()
	renew := time.NewTimer(k.opts.RenewEvery)
	defer renew.Stop()
	for {
		select {
		case <-k.stop:
			k.cancel(ErrKeeperStopped)
			return
		case <-k.ctx.Done():
			return
		case <-trust.C:
			k.lose(fmt.Errorf("lease %q: %w", k.lease.Name, ErrTrustExpired))
			return
		case <-renew.C:
			// A renewal that is still waiting when the trust window ends is
			// abandoned: the timer cannot fire while it blocks.
			start := k.c.now()
			rctx, cancel := context.WithTimeout(k.ctx, trustUntil.Sub(start))
			l, err := k.c.RenewLease(rctx, k.Lease(), k.ttl)
			cancel()
			var stale *StaleError
			switch {
			case err == nil:
				k.mu.Lock()
				k.lease = *l
				k.mu.Unlock()
				trustUntil = start.Add(k.ttl - k.opts.SafetyMargin)
				trust.Reset(k.trustLeft(start))
				renew.Reset(k.opts.RenewEvery)
			case errors.As(err, &stale) || errors.Is(err, ErrNotFound):
				k.lose(fmt.Errorf("lease %q lost: %w", k.lease.Name, err))
				return
			case !k.c.now().Before(trustUntil):
				k.lose(fmt.Errorf("lease %q: %w (last error: %v)", k.lease.Name, ErrTrustExpired, err))
				return
			default:
				// Transient (connection) failure: retry soon; the trust timer
				// decides when to give up.
				if k.ctx.Err() == nil {
					k.c.log.Warn("fenced: lease renewal failed; retrying", "lease", k.lease.Name, "fence", k.lease.Fence, "err", err)
				}
				renew.Reset(min(k.opts.RenewEvery, 250*time.Millisecond))
			}
		}
	}
}

// lose ends the keeper with cause, logged (the Client's logger) as the
// lease's loss.
func (k *Keeper) lose(cause error) {
	k.c.log.Warn("fenced: keeper lost its lease", "lease", k.lease.Name, "fence", k.lease.Fence, "err", cause)
	k.cancel(cause)
}

// trustLeft is how long, from now, the lease can be trusted given a renewal
// (or the acquire) that started at start: start + ttl − margin, measured on
// the monotonic clock.
func (k *Keeper) trustLeft(start time.Time) time.Duration {
	return start.Add(k.ttl - k.opts.SafetyMargin).Sub(k.c.now())
}
