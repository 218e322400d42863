package chaos

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/fenced/fenced"
)

// A fault the nemesis injects.
type faultKind string

const (
	faultPause    faultKind = "pause"     // SIGSTOP a worker past the job TTL, then SIGCONT
	faultKill     faultKind = "kill"      // SIGKILL a worker and start a replacement
	faultConnKill faultKind = "conn-kill" // kill a worker's connection on the server: pg_terminate_backend, KILL CONNECTION
	faultStall    faultKind = "stall"     // SQLite: hold the write lock past the job TTL
	faultRestart  faultKind = "restart"   // restart PostgreSQL
	faultFailover faultKind = "failover"  // kill the primary; the HA manager promotes the standby
)

// fault is one scheduled fault.
type fault struct {
	at     time.Duration // from the start of the run
	kind   faultKind
	pick   int           // which worker (or connection), modulo how many there are then
	length time.Duration // pause: how long the worker stays stopped
}

// schedule draws the run's faults from its seed: for each kind, arrivals at
// intervals drawn uniformly from half to one and a half times the kind's
// mean (random, yet never a long gap with none), in
// [settle, duration-settle);
// at most one restart, in the middle. Of connection kills and stalls, only
// the backend's disconnect kind. The same seed and options give the same
// schedule.
func schedule(o *Options, disconnect faultKind) []fault {
	rng := rand.New(rand.NewPCG(o.Seed, 0x6e656d65))
	settle := min(2*time.Second, o.Duration/10)
	var out []fault
	arrivals := func(kind faultKind, mean time.Duration) {
		if mean <= 0 {
			return
		}
		for t := settle; ; {
			t += mean/2 + time.Duration(rng.Int64N(int64(mean)))
			if t >= o.Duration-settle {
				return
			}
			f := fault{at: t, kind: kind, pick: rng.IntN(1 << 30)}
			if kind == faultPause || kind == faultStall {
				// past the job lease, by up to two more TTLs
				f.length = o.JobTTL + o.JobTTL/4 + time.Duration(rng.Int64N(int64(2*o.JobTTL)))
			}
			out = append(out, f)
		}
	}
	arrivals(faultPause, o.PauseEvery)
	arrivals(faultKill, o.KillEvery)
	switch disconnect {
	case faultConnKill:
		arrivals(faultConnKill, o.ConnKillEvery)
	case faultStall:
		arrivals(faultStall, o.StallEvery)
	}
	if o.RestartPostgres {
		out = append(out, fault{at: o.Duration / 2, kind: faultRestart})
	}
	if len(o.Failover) > 0 {
		out = append(out, fault{at: o.Duration / 2, kind: faultFailover})
	}
	slices.SortStableFunc(out, func(a, b fault) int { return cmp.Compare(a.at, b.at) })
	return out
}

// nemesis runs the schedule against the run's workers and database.
type nemesis struct {
	r       *run
	mu      sync.Mutex // guards what follows: the failover runs beside the other faults
	count   map[faultKind]int
	fails   map[faultKind]int    // faults that could not be injected (no target, or an error)
	lastErr map[faultKind]string // why, the last time
	// The failover, while it runs (from its command's start to the first
	// write that succeeded after it): the other faults injected meanwhile.
	failing bool
	during  map[faultKind]int
	fo      failoverOutcome
}

// failoverOutcome is what the failover fault measured.
type failoverOutcome struct {
	resume                        time.Duration // from the command's start to the first write that succeeded
	resumedAt                     time.Time     // the database clock just after that write
	timelineBefore, timelineAfter int64         // the server's timeline before the command and after that write (0: not read)
}

// run injects each fault at its time until the schedule ends or ctx does.
// Workers it paused resume at the end of their pause (the run resumes any
// still paused when the faulty phase ends). The failover runs in a
// goroutine of its own, so the other faults go on while the cluster fails
// over; run returns once it has ended.
func (n *nemesis) run(ctx context.Context, start time.Time, faults []fault) {
	n.count, n.fails, n.lastErr, n.during = map[faultKind]int{}, map[faultKind]int{}, map[faultKind]string{}, map[faultKind]int{}
	var failover sync.WaitGroup
	defer failover.Wait()
	for _, f := range faults {
		t := time.NewTimer(time.Until(start.Add(f.at)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if f.kind == faultFailover {
			n.mu.Lock()
			n.failing = true
			n.mu.Unlock()
			failover.Go(func() { n.done(f.kind, n.failover()) })
			continue
		}
		n.done(f.kind, n.inject(ctx, f))
	}
}

// done records the outcome of one fault.
func (n *nemesis) done(kind faultKind, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if kind == faultFailover {
		n.failing = false
	}
	if err != nil {
		n.fails[kind]++
		n.lastErr[kind] = err.Error()
		n.r.logf("nemesis: %s: %v", kind, err)
		return
	}
	n.count[kind]++
	if n.failing {
		n.during[kind]++
	}
}

func (n *nemesis) inject(ctx context.Context, f fault) error {
	switch f.kind {
	case faultPause:
		return n.r.pause(f.pick, f.length)
	case faultKill:
		return n.r.kill(f.pick)
	case faultConnKill, faultStall:
		return n.r.b.disconnect(ctx, n.r, f)
	case faultRestart:
		return n.restart(ctx)
	case faultFailover:
		return n.failover()
	}
	return fmt.Errorf("unknown fault %q", f.kind)
}

// restart runs the PostgreSQL restart command and waits for the server to
// accept connections again.
func (n *nemesis) restart(ctx context.Context) error {
	cmd := n.r.o.RestartCommand
	if len(cmd) == 0 {
		return fmt.Errorf("no restart command")
	}
	n.r.logf("nemesis: restarting PostgreSQL: %v", cmd)
	// Its own deadline: the end of the faulty phase must not kill a restart
	// halfway.
	rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(rctx, cmd[0], cmd[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %v: %s", cmd, err, out)
	}
	for {
		_, err := n.r.c.DatabaseTime(rctx)
		if err == nil {
			return nil
		}
		select {
		case <-rctx.Done():
			return fmt.Errorf("PostgreSQL did not come back: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// failover runs the failover command (which kills the primary, or a
// standby) and then writes until a write succeeds, timing it from the
// command's start; it reads the database clock just after that write, from
// which the run counts the work done after the failover, and the server's
// timeline before and after (a promotion starts a new one). The probe is a
// resource no worker touches.
func (n *nemesis) failover() error {
	cmd := n.r.o.Failover
	n.r.logf("nemesis: failover: %v", cmd)
	rctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var fo failoverOutcome
	fo.timelineBefore, _ = n.r.timeline(rctx)
	start := time.Now()
	out, err := exec.CommandContext(rctx, cmd[0], cmd[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %v: %s", cmd, err, out)
	}
	killed := time.Since(start)
	// A write and then a clock reading, both succeeded: a write can still
	// reach a dying primary, whose connections the reading then finds gone
	// (it is retried with the write).
	for probe := int64(1); ; probe++ {
		wctx, wcancel := context.WithTimeout(rctx, 2*time.Second)
		_, err = n.r.c.WriteResource(wctx, "chaos-failover-probe", []byte("probe"), probe, fenced.WriteOptions{})
		if err == nil {
			fo.resume = time.Since(start)
			if fo.resumedAt, err = n.r.c.DatabaseTime(wctx); err != nil {
				err = fmt.Errorf("the database clock after the failover: %w", err)
			}
		}
		wcancel()
		if err == nil {
			break
		}
		select {
		case <-rctx.Done():
			return fmt.Errorf("no write and clock reading succeeded after the failover: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	fo.timelineAfter, _ = n.r.timeline(rctx)
	n.r.logf("nemesis: failover: command done in %s, first write succeeded %s after it began; timeline %d, then %d",
		killed.Round(time.Millisecond), fo.resume.Round(time.Millisecond), fo.timelineBefore, fo.timelineAfter)
	n.mu.Lock()
	n.fo = fo
	n.mu.Unlock()
	return nil
}

// timelineSQL is the server's timeline: a WAL file's name starts with it,
// eight hex digits (pgdriver's promotion check reads it the same way).
const timelineSQL = `SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint`

// timeline reads the primary's timeline.
func (r *run) timeline(ctx context.Context) (int64, error) {
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var tl int64
	err := r.c.db.QueryRow(tctx, timelineSQL).Scan(&tl)
	return tl, err
}
