// Package jobbench is the engine of "fenced bench": it measures the job
// queue's throughput the way a queue's own benchmark does, with no-op jobs.
//
// Burn-down mode inserts Jobs jobs (batched, timed on their own), then starts
// the workers and measures from their start to the last job succeeded.
// Continuous mode keeps a backlog topped up by a producer while the workers
// work, and measures the jobs worked and inserted over Duration.
//
// Every job goes through the real fenced path: a claim that bumps its fence,
// a completion guarded by id + fence + running + unexpired lease, and the
// attempt recorded (on the job's row, as a successful attempt is).
package jobbench

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
)

// Defaults of Options.
const (
	DefaultJobs        = 100000
	DefaultConcurrency = 2000
	DefaultQueue       = "fenced-bench"
	// Kind is the kind of the benchmark's no-op jobs.
	Kind = "fenced-bench"
	// InsertBatch is the number of jobs one EnqueueBulk call carries: as
	// many as River's benchmark inserts at a time. Against 1,000, the
	// continuous mode worked ~6% more jobs/s on PostgreSQL (39.2k vs 36.9k,
	// medians of 7 alternated rounds, 2026-12-03): a fifth of the producer's
	// statements, commits and notices.
	InsertBatch = 5000
	// DefaultBacklog is how many queued jobs the continuous producer keeps
	// ahead of the workers (as River's benchmark does).
	DefaultBacklog = 75000
	// DefaultWindow is the interval of a fixed-rate run's figures.
	DefaultWindow = 10 * time.Second
)

// Options configure a run. The zero value is a burn-down of DefaultJobs on a
// fresh SQLite file.
type Options struct {
	// URL is the database (see fenced.Open). Empty: a fresh SQLite file in
	// a temporary directory, removed afterwards.
	URL string
	// Jobs is the number of jobs a burn-down inserts and works. Default
	// DefaultJobs.
	Jobs int
	// Duration selects continuous mode and is its length. Default 0
	// (burn-down).
	Duration time.Duration
	// Rate, with Duration, selects fixed-rate mode: a producer offers Rate
	// jobs a second whatever the backlog, a maintainer runs, and the result
	// has the throughput of every Window and enqueue→start percentiles.
	Rate float64
	// Work is how long a fixed-rate job's handler takes. Default 0.
	Work time.Duration
	// VacuumRows is the maintainer's MaintenanceConfig.VacuumRows in
	// fixed-rate and continuous runs (0 its default; negative: the
	// maintainer never vacuums, to see what that costs).
	VacuumRows int64
	// Window is the interval of a fixed-rate or continuous run's
	// throughput figures.
	// Default DefaultWindow.
	Window time.Duration
	// Wakeups selects wake-up mode: this many times, one job is enqueued
	// into the empty queue of idle workers, and the result has the
	// enqueue→start percentiles.
	Wakeups int
	// Concurrency is the number of jobs worked at once, in all. Default
	// DefaultConcurrency.
	Concurrency int
	// Instances is the number of fenced Workers sharing Concurrency, each
	// with its own claim loop. Default DefaultInstances.
	Instances int
	// PoolConns sets the PostgreSQL pool size (pool_max_conns) unless the
	// URL sets it. Default DefaultPoolConns.
	PoolConns int
	// FetchBatch caps the jobs one claim takes. Default: the library's.
	FetchBatch int
	// Keys, when above zero, gives job n the concurrency key k<n mod Keys>.
	Keys int
	// KeyLimit, with Keys, is the per-key limit the run declares on its
	// queue (SetJobLimit, the queue's default PerKey) before it starts, and
	// removes (or puts back as it was) at the end. Zero: no limit declared,
	// the keys are unlimited unless the queue has limits of its own.
	KeyLimit int
	// Sequences, when above zero, gives job n the sequence key
	// s<n mod Sequences>: each sequence's jobs run one at a time in order.
	Sequences int
	// FanOut, when above zero, inserts a burn-down's jobs as workflows of
	// a split task, FanOut parts and a join (workflow.go); Chain, as
	// workflows of Chain tasks, each after the one before. Jobs is rounded
	// down to whole workflows.
	FanOut, Chain int
	// Queue is the queue the benchmark fills and works; it must hold no
	// unfinished jobs when the run starts. Default DefaultQueue.
	Queue string
	// Backlog is the number of queued jobs a continuous run keeps ahead of
	// the workers. Default DefaultBacklog.
	Backlog int
	// Keep leaves the benchmark's jobs in the database; by default they are
	// deleted at the end.
	Keep bool
	// Logger receives the workers' warnings (a failed claim or write).
	// Default: discarded.
	Logger *slog.Logger
	// Progress, when set, receives a snapshot every ProgressEvery.
	Progress func(Snapshot)
	// OnWindow, when set, receives each window of a fixed-rate or
	// continuous run as it ends.
	OnWindow func(Window)
	// ProgressEvery is the interval of Progress. Default 1s.
	ProgressEvery time.Duration
}

// Defaults of the worker side. A worker holds one connection listening for
// enqueues, and while busy one claiming and one writing outcomes; a
// continuous run's producer holds a fourth. pgx's default pool (max(4,
// NumCPU)) then leaves the heartbeat and any second statement waiting: on 2
// cores a continuous run worked ~1.6x more jobs/s with 8 connections.
const (
	DefaultInstances = 1
	DefaultPoolConns = 8
)

func (o Options) withDefaults() Options {
	if o.Jobs <= 0 {
		o.Jobs = DefaultJobs
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Instances <= 0 {
		o.Instances = DefaultInstances
	}
	o.Instances = min(o.Instances, o.Concurrency)
	if o.PoolConns <= 0 {
		o.PoolConns = DefaultPoolConns
	}
	if o.Backlog <= 0 {
		o.Backlog = DefaultBacklog
	}
	if o.Queue == "" {
		o.Queue = DefaultQueue
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = time.Second
	}
	if size := o.workflowSize(); size > 0 {
		o.Jobs = max(1, o.Jobs/size) * size
	}
	return o
}

func (o Options) validate() error {
	if o.Duration < 0 {
		return fencedtype.Invalid("duration", "%s is negative", o.Duration)
	}
	if o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) {
		return fencedtype.Invalid("rate", "%v is not a rate of jobs a second", o.Rate)
	}
	if o.Rate > 0 && o.Duration <= 0 {
		return fencedtype.Invalid("rate", "needs a duration to run for")
	}
	if o.Wakeups > 0 && (o.Rate > 0 || o.Duration > 0) {
		return fencedtype.Invalid("wake-ups", "a wake-up run has no duration or rate")
	}
	if o.Work < 0 {
		return fencedtype.Invalid("work", "%s is negative", o.Work)
	}
	if o.Keys < 0 || o.Sequences < 0 {
		return fencedtype.Invalid("keys", "counts of keys and sequences must not be negative")
	}
	if o.KeyLimit < 0 || o.KeyLimit > fenced.MaxJobLimit || o.KeyLimit > 0 && o.Keys == 0 {
		return fencedtype.Invalid("key limit", "%d: give 1 to %d, with keys", o.KeyLimit, fenced.MaxJobLimit)
	}
	if o.Wakeups > 0 && (o.Keys > 0 || o.Sequences > 0) {
		return fencedtype.Invalid("wake-ups", "a wake-up run has no keys or sequences")
	}
	if o.FanOut < 0 || o.Chain < 0 || o.FanOut > 0 && o.Chain > 0 || o.FanOut+2 > fenced.MaxWorkflowTasks || o.Chain > fenced.MaxWorkflowTasks {
		return fencedtype.Invalid("workflow", "give a fan-out or a chain, each up to %d tasks", fenced.MaxWorkflowTasks)
	}
	if o.workflowSize() > 0 && (o.Rate > 0 || o.Duration > 0 || o.Wakeups > 0 || o.Keys > 0 || o.Sequences > 0) {
		return fencedtype.Invalid("workflow", "a workflow run is a burn-down without keys or sequences")
	}
	if o.FetchBatch < 0 || o.FetchBatch > fenced.MaxClaimBatch {
		return fencedtype.Invalid("fetch batch", "%d is outside 1 to %d", o.FetchBatch, fenced.MaxClaimBatch)
	}
	return nil
}

// Run runs one benchmark and returns its result. ctx ends it early (an
// error).
func Run(ctx context.Context, o Options) (res *Result, err error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	db, err := openDB(ctx, o.URL, o.PoolConns)
	if err != nil {
		return nil, err
	}
	defer db.close()
	if err := db.checkQueue(ctx, o.Queue); err != nil {
		return nil, err
	}
	b := &bench{o: o, db: db}
	if o.Keys > 0 || o.Sequences > 0 {
		b.watch = newKeyWatch()
	}
	if o.KeyLimit > 0 {
		scope, lerr := b.declareKeyLimit(ctx)
		if lerr != nil {
			return nil, lerr
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if rerr := scope.restore(cctx); rerr != nil && err == nil {
				res, err = nil, rerr
			}
		}()
	}
	switch {
	case o.Wakeups > 0:
		res, err = b.wakeups(ctx)
	case o.Rate > 0:
		res, err = b.fixedRate(ctx)
	case o.Duration > 0:
		res, err = b.continuous(ctx)
	default:
		res, err = b.burnDown(ctx)
	}
	if !o.Keep {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if cerr := db.cleanup(cctx, o.Queue); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, err
	}
	res.Keys, res.KeyLimit, res.Sequences = o.Keys, o.KeyLimit, o.Sequences
	res.FanOut, res.Chain = o.FanOut, o.Chain
	if b.watch != nil {
		b.watch.fill(res)
	}
	return res, nil
}

// bench is one run in progress.
type bench struct {
	o     Options
	db    *benchDB
	watch *keyWatch // with keys or sequences
}
