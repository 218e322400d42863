package main

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/fenced/fenced/internal/app/jobbench"
	"github.com/spf13/cobra"
)

// benchFlags are the options of "bench".
type benchFlags struct {
	o                      jobbench.Options
	asJSON                 bool
	cpuProfile, memProfile string
}

func newBenchCmd(a *app) *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench [--jobs N | --duration D [--rate R --work D] | --wakeups N]",
		Short: "Measure the job queue's throughput with no-op jobs",
		Long: `Measure how many jobs a second the fenced job queue works, with no-op jobs
that still take the whole fenced path: a claim that bumps the fence, a
completion guarded by it, the attempt recorded (on the job's row, as a
successful attempt is).

Burn-down (the default) inserts --jobs jobs, a thousand per statement
(Client.EnqueueBulk: a COPY on PostgreSQL, one INSERT on SQLite), timed on
their own; then starts workers running --workers jobs at once and times
them from their start until every job succeeded. On PostgreSQL it adds the
database work per job while the workers worked: the WAL written, the
statements and round trips the pool sent, and, when the database has the
pg_walinspect extension, the WAL's row writes (HOT updates among them),
row locks and index inserts. The WAL is the whole server's. With --duration, a producer
keeps a backlog of jobs inserted while the workers work, a maintainer runs
as in production, and the run prints the throughput of every --window and
reports the jobs worked and inserted a second over that time (and, over two
minutes or more, the first and the last minute's throughput and their
ratio). With --rate as well, a producer offers that many jobs a second
whatever the backlog (above the queue's capacity, the backlog grows), each
job's handler takes --work, and the run ends with the first and the last
minute's throughput, their ratio, and the enqueue-to-start latency
percentiles (start of the attempt minus the job's run_at, both read from
the database clock).

With --keys N every job carries a concurrency key, k<n mod N>, and with
--key-limit L the queue gets a per-key limit of L for the run (removed,
or put back as it was, at the end); with --sequences N every job carries
a sequence key, s<n mod N>. Such jobs take the limited claim; the summary
adds the most jobs of one key and of one sequence the handlers saw
running at once, and sequence jobs started out of order (expected at
most L, 1 and 0).

With --wakeups N, the workers wait idle on an empty queue and one job is
enqueued at a time, N times, 50-100 ms apart: the result is how soon an
idle worker starts a single job (the same percentiles).

Progress is one line rewritten in place on a terminal, a line a second
otherwise; the summary is one line, or JSON with --json (progress then goes
to stderr). The jobs go to their own queue, which must hold no unfinished
jobs, and are deleted at the end unless --keep.

The database is --db or FENCED_DATABASE_URL; with neither, a fresh SQLite
file in a temporary directory, removed afterwards. On PostgreSQL and MySQL
the pool holds --pool connections unless the URL sets pool_max_conns.`,
		Example: `  fenced bench
  fenced --db postgres://postgres@127.0.0.1:5432/test bench --jobs 100000 --workers 2000
  fenced --db postgres://postgres@127.0.0.1:5432/test bench --duration 30s --json
  fenced --db mysql://root@127.0.0.1:3306/test bench --jobs 100000
  fenced --db postgres://postgres@127.0.0.1:5432/test bench --jobs 30000 --keys 1000 --key-limit 2
  fenced --db postgres://postgres@127.0.0.1:5432/test bench --jobs 100000 --sequences 100
  fenced --db postgres://postgres@127.0.0.1:5432/test bench --duration 5m --rate 4000 --work 1ms --workers 32
  fenced --db postgres://postgres@127.0.0.1:5432/test bench --wakeups 200 --workers 10`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			return a.bench(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.o.Jobs, "jobs", jobbench.DefaultJobs, "burn-down: jobs to insert and work")
	fl.DurationVar(&f.o.Duration, "duration", 0, "run in continuous mode for this long")
	fl.Float64Var(&f.o.Rate, "rate", 0, "with --duration: offer this many jobs a second whatever the backlog (fixed-rate mode)")
	fl.DurationVar(&f.o.Work, "work", 0, "fixed-rate mode: how long each job's handler takes")
	fl.Int64Var(&f.o.VacuumRows, "vacuum-rows", 0, "with --duration: the maintainer's vacuum threshold (default its own; negative: never vacuum)")
	fl.DurationVar(&f.o.Window, "window", jobbench.DefaultWindow, "with --duration: interval of the throughput figures")
	fl.IntVar(&f.o.Wakeups, "wakeups", 0, "measure how soon idle workers start a single job, this many times (wake-up mode)")
	fl.IntVar(&f.o.Keys, "keys", 0, "give job n the concurrency key k<n mod N>, so that every claim takes the limited way")
	fl.IntVar(&f.o.KeyLimit, "key-limit", 0, "with --keys: declare this per-key limit on the queue for the run (SetJobLimit), removed afterwards")
	fl.IntVar(&f.o.Sequences, "sequences", 0, "give job n the sequence key s<n mod N>: each sequence's jobs run one at a time, in order")
	fl.IntVar(&f.o.FanOut, "workflow-fanout", 0, "burn-down of workflows of a split task, N parts after it and a join after them all (1→N→1)")
	fl.IntVar(&f.o.Chain, "workflow-chain", 0, "burn-down of workflows of N tasks, each after the one before")
	fl.IntVar(&f.o.Concurrency, "workers", jobbench.DefaultConcurrency, "jobs worked at once")
	fl.StringVar(&f.o.Queue, "queue", jobbench.DefaultQueue, "queue of the benchmark's jobs")
	fl.BoolVar(&f.o.Keep, "keep", false, "keep the benchmark's jobs instead of deleting them")
	fl.IntVar(&f.o.Instances, "instances", jobbench.DefaultInstances, "fenced workers sharing --workers, each with its own claim loop")
	fl.IntVar(&f.o.FetchBatch, "fetch-batch", 0, "jobs one claim takes at most (default the worker's)")
	fl.IntVar(&f.o.PoolConns, "pool", jobbench.DefaultPoolConns, "PostgreSQL or MySQL connections, unless the URL sets pool_max_conns")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write the benchmark's CPU profile (of this process, not the database) to this file")
	fl.StringVar(&f.memProfile, "memprofile", "", "write its allocation profile to this file at the end")
	jsonFlag(cmd, &f.asJSON)
	return cmd
}

// check refuses what the engine would read as "not given".
func (f *benchFlags) check(cmd *cobra.Command) error {
	fl := cmd.Flags()
	switch {
	case fl.Changed("jobs") && fl.Changed("duration"):
		return usage("--jobs and --duration cannot be used together")
	case fl.Changed("queue") && f.o.Queue == "":
		return invalid("queue", "must not be empty")
	case f.o.Jobs < 1:
		return usage("--jobs must be at least 1")
	case fl.Changed("duration") && f.o.Duration <= 0:
		return usage("--duration must be positive")
	case fl.Changed("wakeups") && (fl.Changed("jobs") || fl.Changed("duration")):
		return usage("--wakeups cannot be used with --jobs or --duration")
	case fl.Changed("wakeups") && f.o.Wakeups < 1:
		return usage("--wakeups must be at least 1")
	case fl.Changed("rate") && !(f.o.Rate > 0):
		return usage("--rate must be positive")
	case fl.Changed("rate") && !fl.Changed("duration"):
		return usage("--rate needs --duration")
	case fl.Changed("work") && !fl.Changed("rate"):
		return usage("--work belongs to fixed-rate mode: give --rate")
	case (fl.Changed("window") || fl.Changed("vacuum-rows")) && !fl.Changed("duration"):
		return usage("--window and --vacuum-rows belong to a run of --duration")
	case f.o.Work < 0:
		return usage("--work must not be negative")
	case f.o.Window <= 0:
		return usage("--window must be positive")
	case fl.Changed("keys") && f.o.Keys < 1:
		return usage("--keys must be at least 1")
	case fl.Changed("workflow-fanout") && f.o.FanOut < 1, fl.Changed("workflow-chain") && f.o.Chain < 1:
		return usage("--workflow-fanout and --workflow-chain must be at least 1")
	case fl.Changed("sequences") && f.o.Sequences < 1:
		return usage("--sequences must be at least 1")
	case fl.Changed("key-limit") && (f.o.KeyLimit < 1 || !fl.Changed("keys")):
		return usage("--key-limit must be at least 1, with --keys")
	case fl.Changed("wakeups") && (fl.Changed("keys") || fl.Changed("sequences")):
		return usage("--wakeups cannot be used with --keys or --sequences")
	case f.o.Concurrency < 1:
		return usage("--workers must be at least 1")
	case f.o.Instances < 1:
		return usage("--instances must be at least 1")
	case f.o.PoolConns < 1:
		return usage("--pool must be at least 1")
	}
	return nil
}

// bench runs the benchmark and prints its summary.
func (a *app) bench(cmd *cobra.Command, f benchFlags) error {
	o := f.o
	o.URL = a.databaseURL()
	progress := a.stdout
	if f.asJSON {
		progress = a.stderr
	}
	p := &jobbench.Printer{W: progress, TTY: isTerminal(progress)}
	o.Progress, o.ProgressEvery = p.Print, time.Second
	o.OnWindow = func(w jobbench.Window) { p.Line(w.String()) }
	o.Logger = slog.New(slog.NewTextHandler(&lineBreaker{p: p, w: a.stderr}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if p.TTY {
		o.ProgressEvery = 200 * time.Millisecond
	}
	stop, err := startProfiles(f.cpuProfile, f.memProfile)
	if err != nil {
		return err
	}
	res, err := jobbench.Run(cmd.Context(), o)
	if perr := stop(); err == nil {
		err = perr
	}
	p.Clear()
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(a.stdout, res)
	}
	_, err = io.WriteString(a.stdout, res.String()+"\n")
	return err
}

// lineBreaker writes the workers' warnings to w, first ending a progress
// line on the same terminal.
type lineBreaker struct {
	p *jobbench.Printer
	w io.Writer
}

func (l *lineBreaker) Write(b []byte) (int, error) {
	l.p.Clear()
	return l.w.Write(b)
}

// isTerminal reports whether f, a writer or a reader, is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
