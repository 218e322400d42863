package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/fenced/fenced"
)

// ClockOffsetEnv names the environment variable a worker process reads its
// clock offset from (a Go duration, e.g. "-3h"). The worker runs its client
// with a clock that far off (fenced.Config.Now): outcomes must not change,
// since every expiry is judged by the database clock.
const ClockOffsetEnv = "FENCED_CHAOS_CLOCK_OFFSET"

// workerArgs configure one worker process.
type workerArgs struct {
	url         string
	proc        string // this incarnation's name, e.g. "w3.2"
	history     string // its history file
	queue       string
	jobTTL      time.Duration
	concurrency int
	leases      int // singleton leases, chaos-0 … chaos-(n-1)
	leaseTTL    time.Duration
	seed        uint64
	offset      time.Duration
}

func (a workerArgs) flags() []string {
	return []string{"--db", a.url, "--proc", a.proc, "--history", a.history, "--queue", a.queue,
		"--job-ttl", a.jobTTL.String(), "--concurrency", fmt.Sprint(a.concurrency),
		"--leases", fmt.Sprint(a.leases), "--lease-ttl", a.leaseTTL.String(), "--seed", fmt.Sprint(a.seed)}
}

// WorkerMain is the body of the hidden "fenced chaos-worker" command: one
// worker process of a chaos run. It works the run's jobs with a fenced
// Worker and runs the singleton-lease workload, recording every operation,
// until SIGTERM (a graceful stop) or SIGKILL. It returns the exit code.
func WorkerMain(args []string) int {
	fs := flag.NewFlagSet("chaos-worker", flag.ContinueOnError)
	var a workerArgs
	fs.StringVar(&a.url, "db", "", "database URL")
	fs.StringVar(&a.proc, "proc", "", "process name")
	fs.StringVar(&a.history, "history", "", "history file")
	fs.StringVar(&a.queue, "queue", "chaos", "queue")
	fs.DurationVar(&a.jobTTL, "job-ttl", 2*time.Second, "job lease")
	fs.IntVar(&a.concurrency, "concurrency", 8, "jobs at once")
	fs.IntVar(&a.leases, "leases", 4, "singleton leases")
	fs.DurationVar(&a.leaseTTL, "lease-ttl", time.Second, "singleton lease ttl")
	fs.Uint64Var(&a.seed, "seed", 1, "seed")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if v := os.Getenv(ClockOffsetEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "chaos-worker: %s: %v\n", ClockOffsetEnv, err)
			return 2
		}
		a.offset = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := runWorker(ctx, a); err != nil {
		fmt.Fprintf(os.Stderr, "chaos-worker %s: %v\n", a.proc, err)
		return 1
	}
	return 0
}

func runWorker(ctx context.Context, a workerArgs) error {
	rec, err := newRecorder(a.history, a.proc)
	if err != nil {
		return err
	}
	defer rec.close()
	cfg := fenced.Config{}
	if a.offset != 0 {
		cfg.Now = func() time.Time { return time.Now().Add(a.offset) }
	}
	b, err := backendOf(a.url)
	if err != nil {
		return err
	}
	// A worker started while the database is away (a restart, a failover)
	// waits for it, as one under a supervisor that restarts it would.
	var c *client
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var err error
		if c, err = b.open(context.Background(), a.url, cfg); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer c.Close()

	w, err := c.NewWorker(fenced.WorkerConfig{
		Owner:        a.proc,
		Queues:       map[string]int{a.queue: a.concurrency},
		LeaseTTL:     a.jobTTL,
		PollInterval: 100 * time.Millisecond,
		FetchBatch:   a.concurrency,
		Backoff:      fenced.Backoff{Base: 50 * time.Millisecond, Max: 500 * time.Millisecond},
	})
	if err != nil {
		return err
	}
	h := &jobHandler{c: c, rec: rec, d: b.dialect(), rng: rand.New(rand.NewPCG(a.seed, 1))}
	w.Handle(JobKind, h.handle)
	w.Handle(KeyedKind, h.handleKeyed)
	w.Handle(WorkflowKind, h.handleWorkflow)
	if err := w.Start(context.Background()); err != nil {
		return err
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		s := &singleton{c: c, d: b.dialect(), rec: rec, owner: a.proc, leases: a.leases, ttl: a.leaseTTL,
			rng: rand.New(rand.NewPCG(a.seed, 2))}
		s.run(ctx)
	}()
	<-ctx.Done()
	<-done
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.Stop(sctx)
}

// JobKind is the kind of the chaos workload's jobs.
const JobKind = "chaos.count"

// errDeliberate is the error of an attempt the workload fails on purpose.
const errDeliberate = "chaos: a failure on purpose"

// jobArgs are a chaos job's arguments.
type jobArgs struct {
	Key string `json:"key"`
}

// jobHandler runs the job workload: in one job-fenced transaction, read the
// key's counter (locking it), write counter+1 and a ledger row naming the
// job and its fence, and complete the job; the transaction commits only if
// the attempt is still current. Half the attempts ignore their context's
// end (a handler that does not check it): after a pause past the lease
// their writes reach the database, which must reject them.
type jobHandler struct {
	c   *client // for a task's additions to its workflow
	rec *recorder
	d   *dialect
	mu  sync.Mutex // guards rng: handlers run concurrently
	rng *rand.Rand
}

func (h *jobHandler) draw(f func(*rand.Rand)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h.rng)
}

func (h *jobHandler) handle(ctx context.Context, run *fenced.JobRun) error {
	var args jobArgs
	if err := json.Unmarshal(run.Args, &args); err != nil {
		return fenced.Discard(err)
	}
	var work time.Duration
	var stubborn, fail bool
	h.draw(func(r *rand.Rand) {
		work = time.Duration(r.IntN(600)) * time.Millisecond
		stubborn = r.IntN(2) == 0
		fail = r.IntN(20) == 0
	})
	if stubborn {
		ctx = context.WithoutCancel(ctx)
	}
	time.Sleep(work) // the work itself; a pause here outlives the lease
	call := time.Now()
	if fail {
		h.rec.job(run.ID, run.Fence, call, jobFailed)
		return errors.New(errDeliberate)
	}
	err := run.Tx(ctx, func(tx fenced.Tx) error {
		n, err := h.increment(ctx, tx, run, args.Key)
		if err != nil {
			return err
		}
		return run.CompleteTx(ctx, tx, map[string]int64{"before": n})
	})
	h.rec.job(run.ID, run.Fence, call, jobResult(err))
	return err
}

// The statements of a job's effect, in its attempt's job-fenced
// transaction, with ? placeholders (dialect.sql). The counter's read locks
// its row (dialect.forUpdate), so increments of one key queue.
const (
	counterReadSQL  = `SELECT n FROM chaos_counters WHERE ckey = ?`
	counterWriteSQL = `UPDATE chaos_counters SET n = ? WHERE ckey = ?`
	ledgerInsertSQL = `INSERT INTO chaos_ledger (job_id, fence, ckey, n_before, proc) VALUES (?, ?, ?, ?, ?)`
)

// increment is a job's effect, in tx: it reads key's counter, writes it
// plus one and records the increment in the ledger under the attempt's
// fence. It returns the value it read.
func (h *jobHandler) increment(ctx context.Context, tx fenced.Tx, run *fenced.JobRun, key string) (int64, error) {
	var n int64
	if err := tx.QueryRow(ctx, h.d.sql(counterReadSQL+h.d.forUpdate), key).Scan(&n); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, h.d.sql(counterWriteSQL), n+1, key); err != nil {
		return 0, err
	}
	_, err := tx.Exec(ctx, h.d.sql(ledgerInsertSQL), run.ID, run.Fence, key, n, h.rec.proc)
	return n, err
}

// jobResult classifies the outcome of an attempt's transaction.
func jobResult(err error) string {
	switch {
	case err == nil:
		return jobOK
	case errors.Is(err, fenced.ErrStale):
		return jobStale
	case errors.Is(err, fenced.ErrNotFound):
		return jobNotFound
	}
	return jobUnknown
}
