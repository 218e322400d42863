package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fenced/fenced/internal/app/chaos"
	"github.com/fenced/fenced/internal/lib/dburl"
	"github.com/spf13/cobra"
)

// chaosFlags are the flags of "fenced chaos".
type chaosFlags struct {
	o        chaos.Options
	long     bool
	report   string
	asJSON   bool
	failover string
	restart  string
}

func newChaosCmd(a *app) *cobra.Command {
	f := &chaosFlags{}
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Run worker processes under injected faults and check that no stale write stuck",
		Long: `Run fenced's chaos suite against PostgreSQL, MySQL or MariaDB, or SQLite:
worker processes (this binary, as "fenced chaos-worker") work a job
workload — each job increments a counter and writes a ledger row in a
job-fenced transaction that also completes it — and a singleton-lease
workload through the resource store, while a seeded nemesis pauses workers
past their leases (SIGSTOP), kills them (SIGKILL) and starts replacements,
kills their database connections (PostgreSQL pg_terminate_backend, MySQL
KILL CONNECTION; SQLite, with no server, has none: --stall-every holds its
write lock past the job TTL instead), skews their clocks and, on
PostgreSQL with --restart-postgres, restarts it once. On SQLite every
worker process opens the same file. Then it drains the queue and checks: the lease
and resource history is linearizable (porcupine, against the model of
docs/design.md §4–§5), every job ended once, succeeded or failed, each
succeeded job has exactly one effect written under its fence, no counter
lost an update, fences only increase, and every rejected write was
rejected as stale.

With --workload keyed the jobs carry concurrency keys, a few dozen, each
with a declared limit of 1 or 2; an attempt writes a START row, works, then
writes an END row with its increment and completion, each in a job-fenced
transaction, stamped with the database clock. The keyed checker then
verifies from those rows that no more attempts of a key overlapped than
its limit, and that no attempt wrote after a later one took its key's last
slot.

With --workload workflow (on a backend with workflows: PostgreSQL) the run
enqueues workflows — chains of 10, diamonds, and fan-outs 1→50→1, half of
which enqueue their root alone and have it add the parts as it completes —
whose tasks each increment a counter and write a workflow ledger row in
the job-fenced transaction that completes them. The workflow checker then
verifies that every task has exactly one effect, written under the fence it
succeeded under, after every dependency's effect, and that every workflow
succeeded. --rate counts tasks.

The run works in a place of its own, removed at the end: a schema on
PostgreSQL, a database on MySQL, a new file beside the named one on SQLite.
The same --seed gives the same fault schedule. Exits 1 on any anomaly.`,
		Example: `  fenced --db postgres://postgres@127.0.0.1:5432/test chaos
  fenced --db postgres://postgres@127.0.0.1:5432/test chaos --long --report chaos.json
  fenced --db postgres://postgres@127.0.0.1:5432/test chaos --seed 42 --duration 2m --workers 4
  fenced --db mysql://root@127.0.0.1:3306/test chaos --workload keyed
  fenced --db postgres://postgres@127.0.0.1:5432/test chaos --workload workflow
  fenced --db sqlite:/tmp/chaos/fenced.db chaos --long`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error { return a.chaos(cmd, f) },
	}
	d := chaos.DefaultOptions()
	fl := cmd.Flags()
	fl.BoolVar(&f.long, "long", false, "the long variant: 10 minutes, 6 workers, 100 jobs a second, on PostgreSQL one restart (other flags override it)")
	fl.StringVar(&f.o.Workload, "workload", chaos.WorkloadCount, "the jobs' workload: count (each job increments a counter), keyed (jobs under per-key concurrency limits of 1 or 2, each attempt writing START and END rows; the keyed checker verifies the limits), or workflow (chains, diamonds and fan-outs of tasks; the workflow checker verifies each task's one effect came after its dependencies'; needs a backend with workflows)")
	fl.Uint64Var(&f.o.Seed, "seed", 0, "seed of the fault schedule and the workload (default random)")
	fl.DurationVar(&f.o.Duration, "duration", d.Duration, "length of the faulty phase")
	fl.IntVar(&f.o.Workers, "workers", d.Workers, "worker processes")
	fl.IntVar(&f.o.JobsPerSecond, "rate", d.JobsPerSecond, "jobs enqueued a second")
	fl.DurationVar(&f.o.JobTTL, "job-ttl", d.JobTTL, "job lease TTL (pauses outlast it)")
	fl.DurationVar(&f.o.PauseEvery, "pause-every", d.PauseEvery, "mean interval between pauses (0: none)")
	fl.DurationVar(&f.o.KillEvery, "kill-every", d.KillEvery, "mean interval between kills (0: none)")
	fl.DurationVar(&f.o.ConnKillEvery, "conn-kill-every", d.ConnKillEvery, "PostgreSQL and MySQL: mean interval between connection kills (0: none)")
	fl.DurationVar(&f.o.StallEvery, "stall-every", d.StallEvery, "SQLite: mean interval between write-lock stalls, each past the job TTL (0: none)")
	fl.BoolVar(&f.o.RestartPostgres, "restart-postgres", false, "restart PostgreSQL once, halfway (pg_ctlcluster)")
	fl.StringVar(&f.restart, "restart-command", "", "restart PostgreSQL with this command instead of pg_ctlcluster (e.g. 'pg_ctl -D DIR -m fast restart' for a cluster of its own)")
	fl.StringVar(&f.failover, "failover", "", "instead, run this command once, halfway, to kill the primary of an HA cluster (e.g. 'scripts/ha-cluster kill-primary DIR'); --db names every host with target_session_attrs=read-write")
	fl.DurationVar(&f.o.ClockSkew, "clock-skew", d.ClockSkew, "largest offset of a worker's clock, either way")
	fl.StringVar(&f.o.Dir, "dir", "", "keep histories and worker logs in this directory")
	fl.StringVar(&f.report, "report", "", "also write the report as JSON to this file")
	jsonFlag(cmd, &f.asJSON)
	return cmd
}

// check refuses what the suite would read as "not given" (a zero count,
// rate or length, which it replaces by its default) or would read as "none"
// (a negative interval or skew): a value given must mean what it says.
func (f *chaosFlags) check(cmd *cobra.Command) error {
	fl := cmd.Flags()
	if w := f.o.Workload; w != chaos.WorkloadCount && w != chaos.WorkloadKeyed && w != chaos.WorkloadWorkflow {
		return usage("--workload must be %s, %s or %s", chaos.WorkloadCount, chaos.WorkloadKeyed, chaos.WorkloadWorkflow)
	}
	for _, c := range []struct {
		name     string
		bad      bool
		positive bool
	}{
		{"duration", f.o.Duration <= 0, true},
		{"workers", f.o.Workers <= 0, true},
		{"rate", f.o.JobsPerSecond <= 0, true},
		{"job-ttl", f.o.JobTTL <= 0, true},
		{"pause-every", f.o.PauseEvery < 0, false},
		{"kill-every", f.o.KillEvery < 0, false},
		{"conn-kill-every", f.o.ConnKillEvery < 0, false},
		{"stall-every", f.o.StallEvery < 0, false},
		{"clock-skew", f.o.ClockSkew < 0, false},
	} {
		switch {
		case !fl.Changed(c.name) || !c.bad:
		case c.positive:
			return usage("--%s must be positive", c.name)
		default:
			return usage("--%s must not be negative (0 means none)", c.name)
		}
	}
	return nil
}

func (a *app) chaos(cmd *cobra.Command, f *chaosFlags) error {
	if err := f.check(cmd); err != nil {
		return err
	}
	o := f.o
	o.URL = a.databaseURL()
	if o.URL == "" {
		return usage("chaos needs a database: --db postgres://…, mysql://… or sqlite:…, or FENCED_DATABASE_URL")
	}
	backend := dburl.Backend(o.URL)
	postgres := backend == "postgres"
	fl := cmd.Flags()
	switch {
	case backend == "sqlite" && fl.Changed("conn-kill-every"):
		return usage("--conn-kill-every: SQLite has no server connections to kill; --stall-every sets its write-lock stalls")
	case backend != "sqlite" && fl.Changed("stall-every"):
		return usage("--stall-every holds SQLite's write lock; on a server --conn-kill-every kills connections")
	case !postgres && (fl.Changed("restart-postgres") || fl.Changed("restart-command") || fl.Changed("failover")):
		return usage("--restart-postgres, --restart-command and --failover run on PostgreSQL only")
	}
	if f.long {
		l := chaos.LongOptions()
		o.Duration = changed(fl.Changed("duration"), o.Duration, l.Duration)
		o.Workers = changed(fl.Changed("workers"), o.Workers, l.Workers)
		o.JobsPerSecond = changed(fl.Changed("rate"), o.JobsPerSecond, l.JobsPerSecond)
		o.PauseEvery = changed(fl.Changed("pause-every"), o.PauseEvery, l.PauseEvery)
		o.KillEvery = changed(fl.Changed("kill-every"), o.KillEvery, l.KillEvery)
		o.ConnKillEvery = changed(fl.Changed("conn-kill-every"), o.ConnKillEvery, l.ConnKillEvery)
		o.StallEvery = changed(fl.Changed("stall-every"), o.StallEvery, l.StallEvery)
		o.RestartPostgres = changed(fl.Changed("restart-postgres"), o.RestartPostgres, l.RestartPostgres && postgres)
	}
	o.Failover = strings.Fields(f.failover)
	o.RestartCommand = strings.Fields(f.restart)
	if len(o.RestartCommand) > 0 && !o.RestartPostgres {
		return usage("--restart-command needs --restart-postgres (or --long)")
	}
	if o.Dir != "" {
		o.Keep = true
	}
	o.Log = a.stderr
	rep, err := chaos.Run(cmd.Context(), o)
	if err != nil {
		return err
	}
	if f.report != "" {
		if err := os.WriteFile(filepath.Clean(f.report), rep.JSON(), 0o644); err != nil {
			return err
		}
	}
	if f.asJSON {
		a.stdout.Write(rep.JSON())
	} else {
		rep.WriteTable(a.stdout)
	}
	if rep.AnomalyCount > 0 {
		return &exitStatus{code: exitError, msg: fmt.Sprintf("chaos: %d anomalies found", rep.AnomalyCount)}
	}
	return nil
}

// changed is v if the flag was given, else the long variant's value.
func changed[T any](given bool, v, long T) T {
	if given {
		return v
	}
	return long
}

// newChaosWorkerCmd is the hidden worker process "fenced chaos" starts.
func newChaosWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "chaos-worker",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			os.Exit(chaos.WorkerMain(args))
			return nil
		},
	}
}
