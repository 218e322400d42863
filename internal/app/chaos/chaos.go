// Package chaos is fenced's fault-injection suite: several worker OS
// processes run a fenced job workload and a singleton-lease workload
// against PostgreSQL, MySQL/MariaDB or SQLite while a seeded nemesis
// pauses them past their leases (SIGSTOP), kills them (SIGKILL), kills
// their connections from the server side (pg_terminate_backend, KILL
// CONNECTION; on SQLite, which has no server, it holds the database's write
// lock instead), restarts PostgreSQL and skews their clocks.
// Every operation is recorded; at the end checkers look for any stale write
// that stuck, any job lost or run twice, and any history that is not
// linearizable against the model of docs/design.md §4–§5. See docs/chaos.md.
package chaos

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fenced/fenced"
)

// Options configure a chaos run. Start from DefaultOptions or LongOptions:
// zero sizes and TTLs take the short variant's defaults, but a zero fault
// interval (PauseEvery, KillEvery, ConnKillEvery, StallEvery) or ClockSkew
// disables that fault.
type Options struct {
	// URL of the database: PostgreSQL, MySQL or MariaDB, or SQLite. The
	// run works in a place of its own, removed at the end unless Keep: on
	// PostgreSQL a schema, on MySQL a database, on SQLite a file in the
	// directory of the one the URL names.
	URL string
	// Exe and ExeArgs start a worker process: Exe ExeArgs… --db … (default
	// this executable, "chaos-worker").
	Exe     string
	ExeArgs []string
	// Seed draws the fault schedule, clock offsets, keys and each worker's
	// choices. Default: random.
	Seed uint64
	// Duration of the faulty phase; then faults and enqueueing stop and the
	// remaining jobs drain.
	Duration time.Duration
	// Workers is the number of worker processes at any time.
	Workers int
	// Concurrency is each worker's jobs at once.
	Concurrency int
	// JobsPerSecond is the enqueue rate.
	JobsPerSecond int
	// Keys is the number of counters jobs increment.
	Keys int
	// Leases is the number of singleton leases.
	Leases int
	// Workload is the jobs' workload: WorkloadCount (the default),
	// WorkloadKeyed (jobs under per-key concurrency limits, checked by the
	// keyed checker besides the job checkers) or WorkloadWorkflow
	// (workflows of tasks, checked by the workflow checker besides the job
	// checkers; on a backend with workflows only, fenced.CapWorkflows).
	// With WorkloadWorkflow, JobsPerSecond counts tasks.
	Workload string
	// JobTTL is the job lease; LeaseTTL the singleton leases' TTL.
	JobTTL, LeaseTTL time.Duration
	// Mean intervals between faults of each kind; 0 disables a kind.
	// ConnKillEvery applies to PostgreSQL and MySQL, StallEvery to SQLite
	// only (each is ignored elsewhere): a stall holds SQLite's write lock
	// past the job TTL, in place of the connection kills SQLite, with no
	// server, has none of.
	PauseEvery, KillEvery, ConnKillEvery, StallEvery time.Duration
	// RestartPostgres (PostgreSQL only) restarts PostgreSQL once, halfway, with
	// RestartCommand (default pg_ctlcluster for the one cluster of
	// /etc/postgresql).
	RestartPostgres bool
	RestartCommand  []string
	// Failover runs this command once, halfway, instead of a restart: it
	// kills the primary of a high-availability cluster (for example
	// scripts/ha-cluster kill-primary DIR), whose manager promotes the
	// standby, or takes down the standby (kill-standby DIR). URL names
	// every host (target_session_attrs=read-write), so clients follow the
	// new primary. The other faults go on while it runs. The run measures
	// the time from the command's start to the first write that succeeds
	// afterwards, and counts the work done from that write to the end of
	// the faulty phase (Report.AfterFailover).
	Failover []string
	// ClockSkew is the largest offset, either way, of a worker's clock.
	ClockSkew time.Duration
	// Drain bounds the wait for the last jobs after the faulty phase.
	Drain time.Duration
	// CheckTimeout bounds the linearizability check (default 5 minutes);
	// one that runs out is an anomaly, since it proved nothing.
	CheckTimeout time.Duration
	// Dir receives, in a subdirectory run-ID of its own, the histories and
	// the workers' stderr. Default a temporary directory, removed unless
	// Keep or the run found an anomaly.
	Dir string
	// Keep keeps the schema and Dir.
	Keep bool
	// Log receives progress lines. Default discarded.
	Log io.Writer
}

// DefaultOptions are the short variant's: 30 seconds, 3 workers.
func DefaultOptions() Options {
	return Options{
		Duration: 30 * time.Second, Workers: 3, Concurrency: 16, JobsPerSecond: 60, Keys: 8, Leases: 4,
		JobTTL: time.Second, LeaseTTL: time.Second,
		PauseEvery: 2 * time.Second, KillEvery: 6 * time.Second, ConnKillEvery: 1500 * time.Millisecond,
		StallEvery: 6 * time.Second, ClockSkew: 2 * time.Hour, Drain: 2 * time.Minute,
	}
}

// LongOptions are the long variant's: 10 minutes, 6 workers, one
// PostgreSQL restart (turn RestartPostgres off on the other backends).
func LongOptions() Options {
	o := DefaultOptions()
	o.Duration, o.Workers, o.JobsPerSecond = 10*time.Minute, 6, 100
	o.PauseEvery, o.KillEvery, o.ConnKillEvery, o.StallEvery = 4*time.Second, 15*time.Second, 4*time.Second, 15*time.Second
	o.RestartPostgres = true
	return o
}

func (o *Options) fill(b backend) error {
	d := DefaultOptions()
	o.Duration = cmp.Or(o.Duration, d.Duration)
	o.Workers = cmp.Or(o.Workers, d.Workers)
	o.Concurrency = cmp.Or(o.Concurrency, d.Concurrency)
	o.JobsPerSecond = cmp.Or(o.JobsPerSecond, d.JobsPerSecond)
	o.Keys = cmp.Or(o.Keys, d.Keys)
	o.Leases = cmp.Or(o.Leases, d.Leases)
	o.JobTTL = cmp.Or(o.JobTTL, d.JobTTL)
	o.LeaseTTL = cmp.Or(o.LeaseTTL, d.LeaseTTL)
	o.Drain = cmp.Or(o.Drain, d.Drain)
	o.Workload = cmp.Or(o.Workload, WorkloadCount)
	o.CheckTimeout = cmp.Or(o.CheckTimeout, linTimeout)
	if o.Seed == 0 {
		var b [8]byte
		rand.Read(b[:])
		for _, x := range b {
			o.Seed = o.Seed<<8 | uint64(x)
		}
		o.Seed = o.Seed>>1 | 1
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		o.Exe = exe
	}
	if o.ExeArgs == nil {
		o.ExeArgs = []string{"chaos-worker"}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if b.dialect().name != "postgres" && (o.RestartPostgres || len(o.Failover) > 0) {
		return fmt.Errorf("restart and failover: only on PostgreSQL: %w", fenced.ErrInvalid)
	}
	if o.RestartPostgres && len(o.RestartCommand) == 0 {
		vs, err := os.ReadDir("/etc/postgresql")
		if err != nil || len(vs) != 1 {
			return fmt.Errorf("restart: no RestartCommand and no single cluster in /etc/postgresql: %w", fenced.ErrInvalid)
		}
		o.RestartCommand = []string{"pg_ctlcluster", "--skip-systemctl-redirect", "--mode=fast", vs[0].Name(), "main", "restart"}
	}
	switch {
	case o.Workers < 2 || o.Workers > 64:
		return fmt.Errorf("workers: %d is outside 2 to 64: %w", o.Workers, fenced.ErrInvalid)
	case o.Duration < 5*time.Second:
		return fmt.Errorf("duration: %s is under 5s: %w", o.Duration, fenced.ErrInvalid)
	case o.JobTTL < 100*time.Millisecond || o.LeaseTTL < 100*time.Millisecond:
		return fmt.Errorf("ttl: job and lease TTLs must be at least 100ms: %w", fenced.ErrInvalid)
	case o.Workload != WorkloadCount && o.Workload != WorkloadKeyed && o.Workload != WorkloadWorkflow:
		return fmt.Errorf("workload: %q is none of %s, %s and %s: %w", o.Workload, WorkloadCount, WorkloadKeyed, WorkloadWorkflow, fenced.ErrInvalid)
	case o.RestartPostgres && len(o.Failover) > 0:
		return fmt.Errorf("restart and failover: choose one fault for the middle of the run: %w", fenced.ErrInvalid)
	}
	return nil
}

// Run runs a chaos run and checks it. The error is for a run that could
// not be carried out; anomalies are in the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	b, err := backendOf(o.URL)
	if err != nil {
		return nil, err
	}
	if err := o.fill(b); err != nil {
		return nil, err
	}
	r := &run{o: &o, b: b, d: b.dialect(), started: time.Now()}
	var id [4]byte
	rand.Read(id[:])
	r.id = hex.EncodeToString(id[:])
	if o.Dir == "" {
		if o.Dir, err = os.MkdirTemp("", "fenced-chaos-"); err != nil {
			return nil, err
		}
		defer func() {
			if !o.Keep {
				os.RemoveAll(o.Dir)
			}
		}()
	}
	r.dir = filepath.Join(o.Dir, "run-"+r.id)
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	if err := r.setup(ctx); err != nil {
		r.teardown()
		return nil, err
	}
	defer r.teardown()
	rep, err := r.execute(ctx)
	if rep != nil && rep.AnomalyCount > 0 {
		o.Keep = true // keep the evidence: histories, logs, the schema
		rep.Dir, rep.Schema = r.dir, r.schema
	}
	return rep, err
}

// Discard removes the evidence a run kept (Report.Dir and Report.Schema), on
// the database at url the run was given: for a run whose anomalies were
// expected.
func Discard(ctx context.Context, url string, rep *Report) error {
	b, err := backendOf(url)
	if err != nil {
		return err
	}
	var errs []error
	if rep.Schema != "" {
		errs = append(errs, b.drop(ctx, url, rep.Schema))
	}
	if rep.Dir != "" {
		errs = append(errs, os.RemoveAll(rep.Dir))
	}
	return errors.Join(errs...)
}

// run is one chaos run in progress.
type run struct {
	o       *Options
	b       backend
	d       *dialect
	id      string // names the schema, the directory and the workers' connections
	dir     string // histories and logs of this run
	schema  string // the run's own place: schema, database or file (backend.isolate)
	url     string // works in the run's schema
	c       *client
	started time.Time
	stalls  sync.WaitGroup // SQLite write-lock stalls in progress

	// The failover's window of the database clock: from just after the
	// first write that succeeded after it to the end of the faulty phase;
	// the work done in it is counted (zero: no failover).
	workFrom, workTo time.Time

	mu       sync.Mutex
	workers  []*proc // by slot
	spawned  int     // processes started
	crashes  []string
	stopping bool
}

func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(r.o.Log, "chaos %5.1fs  %s\n", time.Since(r.started).Seconds(), fmt.Sprintf(format, args...))
}

// setup creates the run's schema (backend.isolate) and tables.
func (r *run) setup(ctx context.Context) error {
	var err error
	if r.schema, r.url, err = r.b.isolate(ctx, r.o.URL, r.id); err != nil {
		return err
	}
	if r.c, err = r.b.open(ctx, r.url, fenced.Config{}); err != nil {
		return err
	}
	if r.o.Workload == WorkloadWorkflow {
		if err := r.c.Unsupported(fenced.CapWorkflows); err != nil {
			return fmt.Errorf("workload %s needs workflows: %w", WorkloadWorkflow, err)
		}
	}
	if _, err := r.c.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, q := range schemaSQL(r.o, r.d) {
		if _, err := r.c.db.Exec(ctx, q); err != nil {
			return fmt.Errorf("create the workload's tables: %w", err)
		}
	}
	if r.o.Workload == WorkloadKeyed {
		return declareKeyedLimits(ctx, r.c)
	}
	return nil
}

// teardown closes the client and drops the schema unless Keep.
func (r *run) teardown() {
	if r.c != nil {
		r.c.Close()
	}
	if r.o.Keep || r.schema == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.b.drop(ctx, r.o.URL, r.schema); err != nil {
		r.logf("drop %s: %v", r.schema, err)
	}
}

// execute runs the workload under faults, drains, stops and checks.
func (r *run) execute(ctx context.Context) (*Report, error) {
	o := r.o
	r.logf("workload %s, seed %d, %d workers, %s, schema %s, histories in %s", o.Workload, o.Seed, o.Workers, o.Duration, r.schema, r.dir)
	for i := range o.Workers {
		if err := r.start(i); err != nil {
			r.stopAll()
			return nil, err
		}
	}
	m, err := r.c.StartMaintenance(context.Background(), fenced.MaintenanceConfig{
		Owner: "chaos-maintainer", Every: 200 * time.Millisecond, LeaseTTL: 5 * time.Second, Retention: -1,
		Backoff: fenced.Backoff{Base: 20 * time.Millisecond, Max: 200 * time.Millisecond},
	})
	if err != nil {
		r.stopAll()
		return nil, err
	}
	defer m.Stop()

	start := time.Now()
	faulty, stopFaults := context.WithTimeout(ctx, o.Duration)
	defer stopFaults()
	n := &nemesis{r: r}
	var wg sync.WaitGroup
	var enq enqueuer
	wg.Go(func() { n.run(faulty, start, schedule(o, r.d.disconnect)) })
	wg.Go(func() { enq.run(faulty, r) })
	wg.Go(func() { r.progress(faulty, &enq) })
	wg.Wait()
	r.resumeAll()
	r.stalls.Wait()
	if err := ctx.Err(); err != nil {
		r.stopAll()
		return nil, err
	}
	faultyFor := time.Since(start)
	if !n.fo.resumedAt.IsZero() {
		// The work after the failover is counted up to here, by the
		// database clock: the end of the faulty phase.
		end, err := r.databaseTime(ctx)
		if err != nil {
			r.stopAll()
			return nil, fmt.Errorf("the database clock at the end of the faulty phase: %w", err)
		}
		r.workFrom, r.workTo = n.fo.resumedAt, end
	}
	r.logf("faults stop: %s injected; enqueued %d; draining", tally(n.count), enq.n.Load())
	drained := r.drain(ctx)
	r.stopAll()
	m.Stop()
	if err := r.finalReads(); err != nil {
		return nil, err
	}

	rep := &Report{Backend: r.d.name, Workload: o.Workload, Seed: o.Seed, Seconds: faultyFor.Seconds(), Workers: o.Workers, Enqueued: enq.n.Load(),
		Pauses: n.count[faultPause], Kills: n.count[faultKill], ConnKills: n.count[faultConnKill], Stalls: n.count[faultStall],
		Restarts: n.count[faultRestart]}
	for _, missed := range n.fails {
		rep.FaultsMissed += missed
	}
	r.mu.Lock()
	rep.Processes, rep.Crashes = r.spawned, len(r.crashes)
	for _, c := range r.crashes {
		rep.anomaly(anomalyCrash, "worker exited on its own: %s", c)
	}
	r.mu.Unlock()
	if drained != nil {
		rep.anomaly(anomalyDrain, "jobs did not drain: %v", drained)
	}
	if o.RestartPostgres && n.count[faultRestart] == 0 {
		rep.anomaly(anomalyNemesis, "PostgreSQL was not restarted: %s", n.lastErr[faultRestart])
	}
	rep.Failovers, rep.ResumeSeconds = n.count[faultFailover], n.fo.resume.Seconds()
	rep.TimelineBefore, rep.TimelineAfter = n.fo.timelineBefore, n.fo.timelineAfter
	if len(o.Failover) > 0 {
		rep.FaultsDuringFailover = byName(n.during)
	}
	if len(o.Failover) > 0 && n.count[faultFailover] == 0 {
		rep.anomaly(anomalyNemesis, "the failover did not happen: %s", n.lastErr[faultFailover])
	}
	if err := check(ctx, r, rep, enq.confirmed(), enq.confirmedWorkflows()); err != nil {
		return nil, err
	}
	rep.Reproduce = reproduce(o, r.d)
	return rep, nil
}

// databaseTime reads the database clock, again while the server cannot
// answer (a failover ending), for up to a minute.
func (r *run) databaseTime(ctx context.Context) (time.Time, error) {
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		at, err := r.c.DatabaseTime(dctx)
		if err == nil {
			return at, nil
		}
		select {
		case <-dctx.Done():
			return time.Time{}, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// progress logs a line every few seconds.
func (r *run) progress(ctx context.Context, enq *enqueuer) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.logf("enqueued %d", enq.n.Load())
		}
	}
}

// drain waits until every job of the run has finished, or Drain passes.
func (r *run) drain(ctx context.Context) error {
	deadline := time.Now().Add(r.o.Drain)
	var left int64
	for time.Now().Before(deadline) {
		counts, err := r.c.CountJobs(ctx)
		if err == nil {
			left = 0
			for _, c := range counts {
				if !c.State.Finished() {
					left += c.Count
				}
			}
			if left == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("%d jobs unfinished after %s", left, r.o.Drain)
}

// finalReads reads, once every worker has stopped, each lease, its resource
// and its counter, recorded as the coordinator's history: a stale write that
// stuck after the workers' last reads shows there.
func (r *run) finalReads() error {
	rec, err := newRecorder(r.historyPath("final"), "final")
	if err != nil {
		return err
	}
	defer rec.close()
	s := &singleton{c: r.c, d: r.d, rec: rec, owner: "final"}
	for i := range r.o.Leases {
		name := leaseName(i)
		s.get(name)
		s.read(name)
		s.counter(name)
	}
	return nil
}

// reproduce is the command that repeats a run (the run sets its own
// search_path and application_name): every option the schedule and the
// workload depend on, of the run's backend.
func reproduce(o *Options, d *dialect) string {
	u := redactURL(o.URL)
	if p, err := url.Parse(u); err == nil {
		q := p.Query()
		q.Del("search_path")
		q.Del("application_name")
		p.RawQuery = q.Encode()
		u = p.String()
	}
	s := fmt.Sprintf("fenced --db '%s' chaos --workload %s --seed %d --duration %s --workers %d --rate %d --job-ttl %s"+
		" --pause-every %s --kill-every %s",
		u, o.Workload, o.Seed, o.Duration, o.Workers, o.JobsPerSecond, o.JobTTL, o.PauseEvery, o.KillEvery)
	if d.disconnect == faultStall {
		s += fmt.Sprintf(" --stall-every %s", o.StallEvery)
	} else {
		s += fmt.Sprintf(" --conn-kill-every %s", o.ConnKillEvery)
	}
	s += fmt.Sprintf(" --clock-skew %s", o.ClockSkew)
	if o.RestartPostgres {
		s += " --restart-postgres"
	}
	if len(o.Failover) > 0 {
		s += fmt.Sprintf(" --failover '%s'", strings.Join(o.Failover, " "))
	}
	return s
}

// withParams sets query parameters of a URL.
func withParams(raw string, params map[string]string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("database URL: %w", err)
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// redactURL hides a password.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "URL"
	}
	return u.Redacted()
}

// paths of a worker process's files.
func (r *run) historyPath(name string) string { return filepath.Join(r.dir, name+".jsonl") }
func (r *run) stderrPath(name string) string  { return filepath.Join(r.dir, name+".stderr") }
