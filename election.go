package fenced

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// CampaignOptions tune Campaign. The zero value works.
type CampaignOptions struct {
	// Keep tunes the Keeper that holds the lease during a term.
	Keep KeepOptions
	// RetryEvery is how often a campaigner waiting for the lease (another
	// owner holds it, or it steps aside for another campaigner) tries
	// again, each wait drawn at random from 3/4 to 5/4 of it so that
	// campaigners spread out. Default ttl/4 (at least 10ms). A waiting
	// campaigner's record lasts max(ttl, 2*RetryEvery) from each try.
	RetryEvery time.Duration
	// Once ends Campaign after its first term instead of campaigning again.
	Once bool
	// OnElected, when set, is called with the lease at the start of every
	// term, before lead. It runs on Campaign's goroutine; keep it short.
	OnElected func(Lease)
	// OnTermEnd, when set, is called after every term, once lead returned
	// and the lease was released, with why the term ended: nil when lead
	// returned while still leading and the release succeeded; otherwise the
	// leadership context's cause (a *StaleError, ErrTrustExpired, or ctx's
	// cause) or the release's error (a *StaleError when another owner had
	// already taken over). It runs on Campaign's goroutine.
	OnTermEnd func(l Lease, ended error)
	// Logger receives the errors Campaign retries past (an acquire or a
	// release that failed other than by the lease being held) and, at
	// Debug level, every try that left the campaigner waiting. Default the
	// Client's (Config.Logger).
	Logger *slog.Logger
}

// Campaign runs for leadership of the named lease as owner and calls lead
// for every term it wins, until ctx ends.
//
// A term starts when the lease is acquired under a Keeper (see Keep; ttl is
// the lease's TTL). While another owner holds the lease, Campaign waits
// (see CampaignOptions.RetryEvery) and tries again; an acquire that fails
// otherwise (the database unreachable) is logged and retried the same way.
// lead runs with the lease, whose Fence names the term, and a context that
// ends when leadership is lost — a renewal refused as stale, or the trust
// window ran out — or when ctx ends; context.Cause says which. Campaign
// waits for lead to return, then releases the lease, and campaigns again.
//
// Campaigners take turns. A campaigner the lease refused is recorded in the
// database as waiting for it, until it wins the lease or Campaign returns,
// and while such a record of another campaigner lasts, the lease's last
// holder does not win it back: it waits as they do. A leader whose term
// ended, and that campaigns again, records itself as waiting before it
// releases the lease; so a waiting campaigner takes over at its next try
// (within RetryEvery·5/4), and two campaigners alternate term by term. A
// record lasts max(ttl, 2·RetryEvery) from the campaigner's last try, so a
// campaigner that vanished while waiting, without Campaign returning, holds
// the last leader back at most that long; with nobody else waiting, a
// leader that steps down wins the lease again at once. Among more than two
// campaigners, the first of those waiting to try wins. The records decide
// only who may win a free lease: the fence of every term is granted as
// AcquireLease grants it, above every fence granted before.
//
// The context ending is a liveness signal: it tells a well-behaved leader
// to stop, but it cannot stop one that is paused, or slow to notice, from
// writing. Safety comes from passing l.Fence to every protected write —
// LeaseTx, WriteResource, or a job's fenced writes — which the database
// checks: once another term has begun, the deposed leader's writes are
// refused with a *StaleError, whatever its context says.
//
// Campaign returns:
//   - context.Cause(ctx) once ctx ends, after lead returned and any lease
//     it held was released, and its record of waiting deleted. An acquire
//     still running then is waited for, and the lease it won released, so
//     that no lease is left held unseen; each statement gets at most
//     min(ttl, 5s) past ctx's end (a lease whose release failed or was cut
//     off expires at its TTL, a record at its end);
//   - lead's error, after releasing the lease, when lead returns a non-nil
//     error — except an error that is its own context's error or cause,
//     returned after that context ended: that is lead reporting it was
//     told to stop, and the term ends as a loss;
//   - with Once, after the first term: nil, or the loss (the leadership
//     context's cause, or a stale release) if leadership was lost;
//   - an *InvalidError for a bad name, owner or ttl, or a nil lead, before
//     campaigning.
//
// See docs/design.md §4.6.
func (c *Client) Campaign(ctx context.Context, name, owner string, ttl time.Duration, opts CampaignOptions, lead func(ctx context.Context, l Lease) error) error {
	if err := validName("lease name", name); err != nil {
		return err
	}
	if err := validName("owner", owner); err != nil {
		return err
	}
	if err := validTTL(ttl); err != nil {
		return err
	}
	if lead == nil {
		return fencedtype.Invalid("lead", "is nil")
	}
	if opts.RetryEvery <= 0 {
		opts.RetryEvery = max(ttl/4, 10*time.Millisecond)
	}
	opts.Logger = c.orLogger(opts.Logger)
	w := waiter{c: c, name: name, owner: owner, ttl: ttl, wait: waitRecord(ttl, opts.RetryEvery), log: opts.Logger}
	for {
		if ctx.Err() != nil {
			w.withdraw(ctx)
			return context.Cause(ctx)
		}
		k, err := c.campaignKeep(ctx, name, owner, ttl, w.wait, opts.Keep)
		if err != nil {
			w.recorded = true // a refusal records it; another failure may have
			if errors.Is(err, ErrInvalid) {
				w.withdraw(ctx)
				return err
			}
			switch {
			case errors.Is(err, ErrHeld) || errors.Is(err, driver.ErrWaitersFirst):
				opts.Logger.Debug("fenced: campaign waits", "lease", name, "owner", owner, "err", err)
			case ctx.Err() == nil:
				opts.Logger.Warn("fenced: campaign", "lease", name, "err", err)
			}
			sleepCtx(ctx, jittered(opts.RetryEvery))
			continue
		}
		w.recorded = false // the grant deleted it
		ended, err := c.term(ctx, k, ttl, opts, &w, lead)
		switch {
		case err != nil:
			return err
		case ctx.Err() != nil:
			w.withdraw(ctx)
			return context.Cause(ctx)
		case opts.Once:
			return ended
		}
	}
}

// waitRecord is how long a campaigner's record of waiting lasts from each
// try: its lease's TTL, or two of its retry intervals when longer, so that
// a campaigner trying every RetryEvery (at most 5/4 of it) keeps its record
// while it lives.
func waitRecord(ttl, retryEvery time.Duration) time.Duration { return max(ttl, 2*retryEvery) }

// waiter is one Campaign's record of waiting for its lease.
type waiter struct {
	c           *Client
	name, owner string
	ttl, wait   time.Duration
	log         *slog.Logger
	recorded    bool // the database may hold the record
}

// add records the campaigner as waiting: a leader does before it releases
// the lease, when it campaigns again, so that a campaigner waiting leads
// next. Failing, the leader may win the next term too; it is logged.
func (w *waiter) add(ctx context.Context) {
	w.recorded = true
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWithin(w.ttl))
	defer cancel()
	if err := w.c.d.AddLeaseWaiter(rctx, driver.LeaseWaiter{Name: w.name, Owner: w.owner, For: w.wait}); err != nil {
		w.log.Warn("fenced: campaign record of waiting", "lease", w.name, "err", err)
	}
}

// withdraw deletes the record, if there may be one, when Campaign returns;
// one left behind lapses at its end.
func (w *waiter) withdraw(ctx context.Context) {
	if !w.recorded {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWithin(w.ttl))
	defer cancel()
	if err := w.c.d.RemoveLeaseWaiter(rctx, w.name, w.owner); err != nil {
		w.log.Warn("fenced: campaign withdraw (the record of waiting will lapse)", "lease", w.name, "err", err)
		return
	}
	w.recorded = false
}

// campaignKeep is Keep for Campaign, which promises to release every lease
// it won, with the lease acquired as a campaigner (driver.CampaignLease,
// recording it as waiting for wait when refused). The acquire is not cut
// off when ctx ends, so its outcome is known —
// a statement cut off on the client can still commit on the server and leave
// the lease held, unseen, until it expires. Once ctx has ended, the acquire
// gets releaseWithin more before it is cut off after all; while ctx lives it
// is bounded by nothing else, as any acquire. If ctx ended while it ran,
// the lease it won is released at once.
func (c *Client) campaignKeep(ctx context.Context, name, owner string, ttl, wait time.Duration, opts KeepOptions) (*Keeper, error) {
	start := c.now()
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopLimit := context.AfterFunc(ctx, func() { time.AfterFunc(releaseWithin(ttl), cancel) })
	l, err := c.d.CampaignLease(actx, driver.CampaignLeaseParams{
		AcquireLeaseParams: driver.AcquireLeaseParams{Name: name, Owner: owner, TTL: ttl}, Wait: wait})
	stopLimit()
	cancel()
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWithin(ttl))
		_, _ = c.ReleaseLease(rctx, *l) // if this fails too, the lease expires
		cancel()
		return nil, context.Cause(ctx)
	}
	return c.keep(ctx, *l, start, ttl, opts), nil
}

// releaseWithin bounds each statement Campaign runs past its context's end:
// the acquire it waits for and the release that ends a term.
func releaseWithin(ttl time.Duration) time.Duration { return min(ttl, 5*time.Second) }

// term runs lead for one term under k, then releases the lease, having
// recorded the campaigner as waiting (w) when it will campaign again. It
// returns why the term ended (see OnTermEnd), and lead's error when that
// ends the campaign.
func (c *Client) term(ctx context.Context, k *Keeper, ttl time.Duration, opts CampaignOptions, w *waiter, lead func(context.Context, Lease) error) (ended, err error) {
	l := k.Lease()
	if opts.OnElected != nil {
		opts.OnElected(l)
	}
	lctx := k.Context()
	err = lead(lctx, l)
	if lctx.Err() != nil {
		ended = context.Cause(lctx)
		if errors.Is(err, lctx.Err()) || errors.Is(err, ended) {
			err = nil // lead stopped because it was told to
		}
	}
	if err == nil && ctx.Err() == nil && !opts.Once {
		w.add(ctx)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWithin(ttl))
	rerr := k.Release(rctx)
	cancel()
	if rerr != nil {
		if ended == nil {
			ended = rerr
		}
		if !errors.Is(rerr, ErrStale) {
			opts.Logger.Warn("fenced: campaign release (the lease will expire)", "lease", l.Name, "err", rerr)
		}
	}
	if opts.OnTermEnd != nil {
		opts.OnTermEnd(l, ended)
	}
	return ended, err
}

// jittered is d scaled by a random factor from 3/4 to 5/4.
func jittered(d time.Duration) time.Duration {
	return d*3/4 + rand.N(d/2+1)
}

// Leader returns the generation of the named lease that leads now by the
// database clock — held, unreleased and unexpired — or nil when none does
// (never acquired, released, or expired). Like GetLease it is a
// point-in-time answer for display and liveness, never the basis for a
// write.
func (c *Client) Leader(ctx context.Context, name string) (*Lease, error) {
	l, err := c.GetLease(ctx, name)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case !l.Held:
		return nil, nil
	}
	return l, nil
}
