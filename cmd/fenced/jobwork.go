package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fenced/fenced"
	"github.com/spf13/cobra"
)

// workParams are the inputs of "job work".
type workParams struct {
	kinds       []string
	argv        []string
	queue       string
	concurrency int
	owner       string
	ttl         time.Duration
	grace       time.Duration
	shutdown    time.Duration
	maxJobs     int
	timeout     time.Duration
}

func newJobWorkCmd(a *app) *cobra.Command {
	var p workParams
	cmd := &cobra.Command{
		Use:   "work KIND [KIND...] [flags] -- COMMAND [ARG...]",
		Short: "Run a command for each claimed job of the kinds (a worker with no client library)",
		Long: `Claim jobs of the KINDs from --queue and run COMMAND once per attempt, up to
--concurrency at once, heartbeating each attempt's lease (every ttl/3) while
its command runs: the job-queue twin of "lease run", so a shell script or a
program in any language is a fenced worker. Jobs of other kinds stay queued.

COMMAND gets the job's args (JSON) on stdin and fenced's stderr as its
stderr (its stdout is read as the output, below), and these variables
added to its environment:

  FENCED_JOB_ID        the job id
  FENCED_JOB_KIND      its kind
  FENCED_JOB_QUEUE     its queue
  FENCED_JOB_ARGS      its args (JSON), when they are at most 64 KiB
  FENCED_FENCE         this attempt's fence: pass it to your protected writes
  FENCED_ATTEMPT       this attempt's number, from 1
  FENCED_MAX_ATTEMPTS  the attempts allowed
  FENCED_OWNER         the worker's owner name
  FENCED_DATABASE_URL  the --db URL, when --db was given

How an attempt ends:

  exit 0, stdout empty       the job succeeds, with no output
  exit 0, stdout JSON        the job succeeds; stdout is its output
  exit 0, stdout not JSON    the attempt fails for good (no retry: the work
                             ran, and running it again could repeat it);
                             the error says where stdout stops being JSON
  exit N (not 0)             the attempt fails with "exit status N: " and
                             the last 8 KiB of its stderr; it is retried
                             with backoff until its attempts run out
  not started (not found)    the attempt fails for good

If the attempt's lease is lost (a heartbeat finds it superseded, as after
"fence advance", or heartbeats fail until its time is up), or the job is
cancelled, COMMAND gets SIGTERM, then SIGKILL after --grace; whatever it
does then, nothing more is written for that attempt: its fence is no
longer current (and an end written before fenced noticed the loss is
refused by the fence). COMMAND runs in a process group of its own, and a
signal reaches the whole group.

With --timeout, or a job's own timeout (job enqueue --timeout), COMMAND
gets SIGTERM at that time (SIGKILL after --grace) and the attempt fails
with "job timed out after …", retried as any failure.

SIGINT or SIGTERM stops the worker gracefully: it claims no more jobs,
waits up to --shutdown-timeout for the running commands, then sends them
SIGTERM (SIGKILL after --grace) and gives their attempts back to run again
at once, not counted. A second signal stops at once. With --max-jobs N it
stops the same way once N attempts have ended (attempts running by then
still finish). fenced then prints what it did to stderr and exits 0.`,
		Example: `  # Send mail: args {"to": ...} on stdin; the address sent to is the output.
  fenced job work email.send -- sh -c 'to=$(jq -r .to) && ./send-mail "$to" && jq -n --arg to "$to" "{sent_to: \$to}"'

  # A Python script, four at once, answering JSON on stdout.
  fenced job work report.build --queue reports --concurrency 4 -- python3 build_report.py`,
		Args: workArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := p.parse(cmd, args); err != nil {
				return err
			}
			return a.work(cmd.Context(), p)
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.queue, "queue", fenced.DefaultQueue, "the queue to claim from")
	f.IntVar(&p.concurrency, "concurrency", 1, "commands running at once (1 to 1000)")
	ownerFlag(cmd, &p.owner, "owner to claim jobs as (default hostname:pid:random)")
	f.DurationVar(&p.ttl, "ttl", fenced.DefaultJobTTL, "each attempt's lease, renewed by heartbeats every ttl/3 (1ms to 24h)")
	f.DurationVar(&p.grace, "grace", 10*time.Second, "time a command has to exit after SIGTERM before SIGKILL")
	f.DurationVar(&p.shutdown, "shutdown-timeout", 30*time.Second, "on SIGINT or SIGTERM, how long running commands may go on")
	f.IntVar(&p.maxJobs, "max-jobs", 0, "stop after this many attempts have ended (0: no limit)")
	f.DurationVar(&p.timeout, "timeout", 0, "end each attempt of a job without a timeout of its own after this long (SIGTERM, then SIGKILL after --grace); it fails and is retried (default none)")
	return cmd
}

// workArgs accepts "KIND [KIND...] -- COMMAND [ARG...]", and "KIND COMMAND
// [ARG...]" when COMMAND has no flags of its own.
func workArgs(cmd *cobra.Command, args []string) error {
	switch d := cmd.ArgsLenAtDash(); {
	case len(args) == 0 || d == 0:
		return usage("want KIND [KIND...] -- COMMAND [ARG...]: missing KIND")
	case d > 0 && d == len(args), d < 0 && len(args) < 2:
		return usage("want KIND [KIND...] -- COMMAND [ARG...]: missing COMMAND")
	}
	return nil
}

// parse reads the KINDs and COMMAND of "job work" and refuses bad input
// before the database is opened.
func (p *workParams) parse(cmd *cobra.Command, args []string) error {
	p.kinds, p.argv = args[:1], args[1:]
	if d := cmd.ArgsLenAtDash(); d > 0 {
		p.kinds, p.argv = args[:d], args[d:]
	}
	switch {
	case p.concurrency < 1 || p.concurrency > 1000:
		return usage("--concurrency %d is outside 1 to 1000", p.concurrency)
	case p.grace < 0:
		return usage("--grace %s is negative", p.grace)
	case p.shutdown < 0:
		return usage("--shutdown-timeout %s is negative", p.shutdown)
	case p.maxJobs < 0:
		return usage("--max-jobs %d is negative", p.maxJobs)
	case p.timeout != 0 && (p.timeout < time.Millisecond || p.timeout > fenced.MaxJobTimeout):
		return usage("--timeout %s is outside 1ms to %s", p.timeout, fenced.MaxJobTimeout)
	}
	if !cmd.Flags().Changed("owner") {
		p.owner = fenced.DefaultOwner()
	}
	// The library's checks of kind and queue names (a job filter's), and
	// of an owner and a lease's ttl (an attempt's lease is a lease's:
	// NewWorker checks the same), before anything is opened.
	for _, k := range p.kinds {
		if err := fenced.ValidateListJobs(fenced.JobFilter{Kind: k, Queue: p.queue}); err != nil {
			return err
		}
	}
	return fenced.ValidateAcquireLease("job-work", p.owner, p.ttl)
}

// work runs the worker until it is stopped (see the command's help).
func (a *app) work(ctx context.Context, p workParams) error {
	c, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := c.NewWorker(fenced.WorkerConfig{Owner: p.owner, Queues: map[string]int{p.queue: p.concurrency},
		LeaseTTL: p.ttl, Logger: newLog(a.stderr),
		// A timed-out command gets SIGTERM, then SIGKILL after --grace:
		// the worker waits for that before it abandons the attempt.
		Timeout: p.timeout, TimeoutGrace: p.grace + 5*time.Second})
	if err != nil {
		return err
	}
	var ended atomic.Int64
	enough := make(chan struct{})
	var once sync.Once
	h := a.jobHandler(p, func() {
		if n := ended.Add(1); p.maxJobs > 0 && n >= int64(p.maxJobs) {
			once.Do(func() { close(enough) })
			for !w.Stopping() { // claim nothing more once this attempt's slot frees
				time.Sleep(time.Millisecond)
			}
		}
	})
	for _, k := range p.kinds {
		w.Handle(k, h)
	}

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// The worker's life is not ctx's: an interrupt stops it gracefully.
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "fenced: working %v from queue %s as %s (concurrency %d)\n", p.kinds, p.queue, p.owner, p.concurrency)
	select {
	case sig := <-sigs:
		fmt.Fprintf(a.stderr, "fenced: %s: claiming no more jobs; waiting up to %s for the running ones (again to stop at once)\n", sig, p.shutdown)
	case <-enough:
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), p.shutdown)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-stopCtx.Done():
		}
	}()
	_ = w.Stop(stopCtx) // past the deadline the running attempts were given back
	s := w.Stats()
	fmt.Fprintf(a.stderr, "fenced: stopped: claimed %d, succeeded %d, failed %d, retried %d, snoozed %d, cancelled %d, lost %d, stale %d\n",
		s.Claimed, s.Succeeded, s.Failed, s.Retried, s.Snoozed, s.Cancelled, s.Lost, s.Stale)
	return nil
}
