package fenced

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// WorkerConfig tunes a Worker. The zero value works.
type WorkerConfig struct {
	// Owner names this worker in the jobs it claims; unique per process.
	// Default hostname:pid:random.
	Owner string
	// Queues maps each queue to work to its concurrency (jobs at once).
	// Default {"default": 10}.
	Queues map[string]int
	// LeaseTTL is each claimed job's lease, renewed by heartbeats. Default
	// DefaultJobTTL (30s).
	LeaseTTL time.Duration
	// HeartbeatEvery is the interval of the batched heartbeat. Default
	// LeaseTTL/3.
	HeartbeatEvery time.Duration
	// PollInterval is how long an idle queue waits before claiming again
	// when nothing wakes it (PostgreSQL wakes it on enqueue). Default 1s.
	PollInterval time.Duration
	// FetchBatch caps the jobs one claim statement takes. Default the
	// queue's concurrency, at most DefaultFetchBatch; never more than
	// MaxClaimBatch.
	FetchBatch int
	// Backoff is the retry delay after a failed attempt, computed by the
	// database from the job's attempt number as the failure is recorded
	// (JobEnd.Backoff). Default DefaultBackoff.
	Backoff Backoff
	// Timeout bounds each attempt of a kind or job without a timeout of
	// its own (KindOptions.Timeout, EnqueueParams.Timeout). Default none;
	// otherwise 1ms to MaxJobTimeout.
	Timeout time.Duration
	// TimeoutGrace is how long after an attempt's timeout the worker waits
	// for a handler that ignores its context. Then it records the attempt
	// failed itself, through the attempt's fence (so the handler's later
	// writes are refused as stale), stops renewing its lease, frees its
	// slot and leaves the handler's goroutine to return when it does.
	// Default DefaultTimeoutGrace.
	TimeoutGrace time.Duration
	// Logger receives the worker's own errors. Default the Client's
	// (Config.Logger).
	Logger *slog.Logger
	// WorkMiddleware wraps the handler of every attempt this worker runs,
	// the first outermost, inside the Client's and outside the kind's
	// (see Hooks for the order). Default none.
	WorkMiddleware []WorkMiddleware
	// Hooks are called around every attempt this worker runs, after the
	// Client's (see Hooks). Default none.
	Hooks []Hooks
	// NoHandoff turns off the hand-off: by default, on a backend that has
	// it (PostgreSQL), a task's completion that releases a dependent this
	// worker runs starts that dependent on this worker at once, in the
	// slot the completed task leaves, ahead of the jobs queued before it
	// (docs/design.md §6.18). With NoHandoff every released task is queued
	// and claimed in claim order.
	NoHandoff bool
}

// DefaultFetchBatch is the most jobs one claim takes when
// WorkerConfig.FetchBatch is zero. A claim and an outcome batch each cost a
// statement and a commit whatever their size, so a busy worker spends less
// per job on larger ones (docs/design.md §10, measurements).
const DefaultFetchBatch = 1000

// WorkerStats count what a worker did. An attempt it claimed is counted
// once by how it ended, whichever path wrote the end: the worker's own
// outcome write, or the handler (completing in its job-fenced transaction
// with CompleteTx, in a transaction of its own, or through the Client); an
// attempt whose end could not be written at all (the database unreachable
// until the lease ran out) is not counted.
// Succeeded, Failed (the dead letter), Retried, Snoozed and Cancelled are
// ends written for the attempt; Lost are attempts taken from the worker (a
// newer attempt, or recovery after the lease expired); Stale are outcome
// writes refused otherwise (the lease ran out first).
//
// HandedOff counts the attempts among Claimed that the worker's own
// completions were handed (docs/design.md §6.18, hand-off) rather than
// claimed.
type WorkerStats struct {
	Claimed, Succeeded, Failed, Retried, Snoozed, Cancelled, Lost, Stale int64
	HandedOff                                                            int64
}

// Worker claims jobs from its queues and runs their handlers, with batched
// heartbeats and batched fenced completions. Create it with NewWorker,
// register handlers with Handle, then Start; Stop shuts it down gracefully.
type Worker struct {
	c        *Client
	cfg      WorkerConfig
	handlers map[string]Handler     // each inside its kind's, the Worker's and the Client's work middleware
	kindOpts map[string]KindOptions // each kind's policies (HandleWith)
	kinds    []string               // the kinds of handlers, set by Start: the claims' filter
	regErr   error                  // the first refused registration, reported by Start
	log      *slog.Logger
	hooks    attemptHooks // the Client's, then the Worker's

	mu      sync.Mutex
	active  map[int64]*activeJob
	started bool

	runCtx    context.Context
	claimCtx  context.Context // runCtx, also ended when Stop's deadline passes
	endClaims context.CancelFunc
	stopFetch chan struct{}
	stopBg    context.CancelFunc
	ends      chan endRequest
	queues    map[string]*queueSlots // each queue's slots, set by Start
	fetchWG   sync.WaitGroup
	jobsWG    sync.WaitGroup
	bgWG      sync.WaitGroup
	stopOnce  sync.Once

	stats struct {
		claimed, succeeded, failed, retried, snoozed, cancelled, lost, stale, handedOff atomic.Int64
	}
}

// queueSlots are one queue's running attempts, one token each, at most
// its concurrency: taken by the queue's claims and by the spare slots of a
// hand-off (handoff.go).
type queueSlots struct {
	tokens chan struct{}
	// drained tells that the queue's last claim took fewer jobs than it
	// had slots for (the queue had no more work it could start): only then
	// does a hand-off hold its free slots.
	drained atomic.Bool
}

// activeJob is one attempt this worker runs.
type activeJob struct {
	ctx          context.Context
	cancel       context.CancelCauseFunc
	ref          JobRef
	trustedUntil time.Time // monotonic: claim or last good heartbeat start + ttl − margin
	// lost: the database said this attempt is no longer current (a
	// heartbeat reported it lost, or a newer attempt was claimed). Without
	// it, an ErrJobLost cause only means the local trust window ran out,
	// and the attempt's outcome is still written: its fence decides.
	lost bool
}

// NewWorker returns a worker on this client's job queue.
func (c *Client) NewWorker(cfg WorkerConfig) (*Worker, error) {
	if cfg.Owner == "" {
		cfg.Owner = DefaultOwner()
	}
	if err := validName("owner", cfg.Owner); err != nil {
		return nil, err
	}
	if len(cfg.Queues) == 0 {
		cfg.Queues = map[string]int{DefaultQueue: 10}
	}
	for q, n := range cfg.Queues {
		if err := validQueue(q); err != nil {
			return nil, err
		}
		if n < 1 || n > 100000 {
			return nil, fencedtype.Invalid("concurrency", "%d for queue %q is outside 1 to 100000", n, q)
		}
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultJobTTL
	}
	if err := validTTL(cfg.LeaseTTL); err != nil {
		return nil, err
	}
	if cfg.HeartbeatEvery <= 0 || cfg.HeartbeatEvery >= cfg.LeaseTTL {
		cfg.HeartbeatEvery = cfg.LeaseTTL / 3
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	cfg.Backoff = cfg.Backoff.WithDefaults()
	if err := validTimeout("timeout", cfg.Timeout); err != nil {
		return nil, err
	}
	if cfg.TimeoutGrace <= 0 {
		cfg.TimeoutGrace = DefaultTimeoutGrace
	}
	log := c.orLogger(cfg.Logger)
	return &Worker{c: c, cfg: cfg, handlers: map[string]Handler{}, kindOpts: map[string]KindOptions{}, log: log,
		hooks:  attemptHooks{hooks: slices.Concat(c.hooks, cfg.Hooks), log: log},
		active: map[int64]*activeJob{}}, nil
}

// DefaultOwner is hostname:pid:random, unique per process and call.
func DefaultOwner() string {
	host, _ := os.Hostname()
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

// Owner returns the name this worker claims jobs under.
func (w *Worker) Owner() string { return w.cfg.Owner }

// Handle registers the handler of a kind, wrapped in mw (the kind's work
// middleware, the first outermost, inside the Client's and the Worker's;
// see Hooks). Call it before Start. The worker claims only jobs of the
// kinds it has handlers for: a job of another kind stays queued for a
// worker that runs it. An invalid kind, a nil handler, a kind registered
// already (by Handle, HandleWith or HandleKind) and a call after Start are
// errors: the registration is not made, and Start refuses to start with the
// first such error, so one a caller dropped is not lost. Handle(kind, h,
// mw...) is HandleWith(kind, h, KindOptions{Middleware: mw}).
func (w *Worker) Handle(kind string, h Handler, mw ...WorkMiddleware) error {
	return w.HandleWith(kind, h, KindOptions{Middleware: mw})
}

// recordErr keeps err as the registration error Start reports, unless one
// was kept already.
func (w *Worker) recordErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.regErr == nil && !w.started {
		w.regErr = err
	}
}

// Stats returns what the worker did so far.
func (w *Worker) Stats() WorkerStats {
	s := &w.stats
	return WorkerStats{Claimed: s.claimed.Load(), Succeeded: s.succeeded.Load(), Failed: s.failed.Load(),
		Retried: s.retried.Load(), Snoozed: s.snoozed.Load(), Cancelled: s.cancelled.Load(),
		Lost: s.lost.Load(), Stale: s.stale.Load(), HandedOff: s.handedOff.Load()}
}

// Start begins claiming and running jobs of the kinds it has handlers for;
// it returns at once. ctx bounds the worker's life: cancelling it stops
// everything at once, as if the process died — running attempts write
// nothing more, their leases expire and recovery takes them back. Use Stop
// for a graceful shutdown. A worker without handlers, or with more than
// MaxClaimKinds, is refused; so is a backend without the job queue
// (ErrJobsNotSupported), a database with migrations pending (a
// *NotMigratedError: run "fenced migrate" or Client.Migrate first), or one
// whose migrations cannot be read (the error of the read).
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("fenced: worker already started")
	}
	if w.regErr != nil {
		return w.refuse(ctx, fmt.Errorf("fenced: the worker's handlers: %w", w.regErr))
	}
	kinds, err := claimKinds(slices.Collect(maps.Keys(w.handlers)))
	if err != nil {
		return fmt.Errorf("fenced: the worker's handlers: %w", err)
	}
	if len(kinds) == 0 {
		return errors.New("fenced: the worker has no handlers: register one with Handle before Start")
	}
	if _, err := w.c.jobQueue(); err != nil {
		return w.refuse(ctx, fmt.Errorf("fenced: start worker: %w", err))
	}
	if err := w.c.checkMigrated(ctx); err != nil {
		return w.refuse(ctx, fmt.Errorf("fenced: start worker: %w", err))
	}
	w.kinds = kinds
	w.started = true
	w.runCtx = ctx
	w.claimCtx, w.endClaims = context.WithCancel(ctx)
	w.stopFetch = make(chan struct{})
	// Buffered: while the completer writes one batch, the next queues up
	// without parking every finishing handler's goroutine on the channel.
	w.ends = make(chan endRequest, MaxClaimBatch)
	bg, stopBg := context.WithCancel(ctx)
	w.stopBg = stopBg
	w.bgWG.Add(3)
	go w.heartbeats(bg)
	go w.completer(bg)
	release := w.c.ListenForJobs() // enqueues anywhere wake idle queues
	go func() {
		defer w.bgWG.Done()
		<-bg.Done()
		release()
	}()
	w.queues = make(map[string]*queueSlots, len(w.cfg.Queues))
	for q, n := range w.cfg.Queues {
		w.queues[q] = &queueSlots{tokens: make(chan struct{}, n)}
	}
	for q, n := range w.cfg.Queues {
		w.fetchWG.Add(1)
		go w.fetch(q, n)
	}
	return nil
}

// refuse logs why Start refused to start (a program that drops Start's
// error would otherwise run a worker that does nothing, silently) and
// returns err.
func (w *Worker) refuse(ctx context.Context, err error) error {
	w.log.LogAttrs(ctx, slog.LevelError, "fenced: the worker refuses to start and will work no job",
		slog.String("owner", w.cfg.Owner), slog.String("err", err.Error()))
	return err
}

// Stop shuts the worker down gracefully: it stops claiming, lets running
// jobs finish until ctx ends, then cancels their contexts (cause
// ErrWorkerStopping; such an attempt is snoozed to run again at once, not
// counted), waits for their handlers to return, writes their outcomes, and
// returns. Handlers must honour their context.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if !started {
		return nil
	}
	w.stopOnce.Do(func() {
		close(w.stopFetch)
		fetched := make(chan struct{})
		go func() { w.fetchWG.Wait(); close(fetched) }()
		select {
		case <-fetched:
		case <-ctx.Done():
			w.endClaims() // a claim that hangs must not hold Stop past its deadline
			<-fetched
		}
		defer w.endClaims()
		done := make(chan struct{})
		go func() { w.jobsWG.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			w.cancelAll(ErrWorkerStopping)
			<-done
		}
		w.stopBg()
		w.bgWG.Wait()
	})
	return ctx.Err()
}

// Stopping reports whether Stop has been called.
func (w *Worker) Stopping() bool {
	w.mu.Lock()
	stop := w.stopFetch
	w.mu.Unlock()
	if stop == nil {
		return false
	}
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

func (w *Worker) cancelAll(cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.active {
		a.cancel(cause)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
