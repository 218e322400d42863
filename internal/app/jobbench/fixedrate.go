package jobbench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenced/fenced"
)

// producerTick is how often the fixed-rate producer tops up what it owes.
const producerTick = 10 * time.Millisecond

// Window is the throughput of one interval of a fixed-rate or continuous
// run, and in a fixed-rate run the enqueue→start latency of the jobs that
// started in it.
type Window struct {
	End        float64  `json:"end_s"` // seconds since the work began
	JobsPerSec float64  `json:"jobs_per_sec"`
	Backlog    int64    `json:"backlog"` // jobs inserted and not yet worked, at End
	Latency    *Latency `json:"latency,omitempty"`
}

// String is the window as a line of a run's output.
func (w Window) String() string {
	s := fmt.Sprintf("bench: window to %5.0fs: %6.0f jobs/s, backlog %d", w.End, w.JobsPerSec, w.Backlog)
	if l := w.Latency; l != nil {
		s += fmt.Sprintf(", enqueue->start p50 %.1fms p99 %.1fms max %.1fms", l.P50, l.P99, l.Max)
	}
	return s
}

// fixedRate offers o.Rate jobs a second for o.Duration to workers whose
// handler takes o.Work, with a maintainer running as in production, and
// records the throughput of every o.Window. Offered above capacity, it shows
// whether the queue keeps working at its capacity as the backlog grows.
func (b *bench) fixedRate(ctx context.Context) (*Result, error) {
	in := b.newInserter()
	lat := &latencies{}
	ws, err := b.startWorkersWith(ctx, func(ctx context.Context, r *fenced.JobRun) error {
		lat.record(r)
		if b.o.Work > 0 {
			sleep(ctx, b.o.Work)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m, err := b.startMaintenance(ctx)
	if err != nil {
		ws.stop()
		return nil, err
	}
	worked := func() int64 { return ws.stats().Succeeded }
	pctx, stopProducer := context.WithCancel(ctx)
	var perr error
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() { perr = produceAt(pctx, in, b.o.Rate, start) })

	rep := b.report("work", 0, worked, in.done.Load)
	windows := recordWindows(ctx, b.o.Window, b.o.Duration, start, worked, in.done.Load, lat, b.o.OnWindow)
	jobs, inserted, secs := worked(), in.done.Load(), time.Since(start).Seconds()
	rep.stop()
	stopProducer()
	wg.Wait()
	ws.stop()
	m.Stop()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if perr != nil {
		return nil, perr
	}
	res := b.result(FixedRate, ws)
	res.Jobs, res.Seconds, res.JobsPerSec = jobs, secs, rate(jobs, secs)
	res.Inserted, res.InsertSeconds, res.InsertPerSec = inserted, secs, rate(inserted, secs)
	res.Offered, res.WorkMS = b.o.Rate, float64(b.o.Work)/float64(time.Millisecond)
	res.setWindows(windows, b.o.Window)
	res.Latency = lat.percentiles()
	return res, nil
}

// produceAt inserts jobs so that rate a second have been inserted since
// start, in batches of at most InsertBatch, until ctx ends. A producer that
// cannot keep up inserts as fast as it can; the result shows the shortfall.
func produceAt(ctx context.Context, in *inserter, rate float64, start time.Time) error {
	t := time.NewTicker(producerTick)
	defer t.Stop()
	for {
		owed := int64(rate*time.Since(start).Seconds()) - in.done.Load()
		for owed > 0 && ctx.Err() == nil {
			k := int(min(owed, InsertBatch))
			if err := in.insertBatch(ctx, k); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("insert: %w", err)
			}
			owed -= int64(k)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// recordWindows samples worked() every window until d has passed since
// start, and returns each window's rate, with the latencies lat recorded in
// it when lat is not nil; each also goes to onWindow when set.
func recordWindows(ctx context.Context, window, d time.Duration, start time.Time, worked, inserted func() int64, lat *latencies, onWindow func(Window)) []Window {
	var ws []Window
	last := worked()
	for i := 1; ; i++ {
		end := start.Add(min(time.Duration(i)*window, d))
		sleep(ctx, time.Until(end))
		if ctx.Err() != nil {
			return ws
		}
		n := worked()
		span := end.Sub(start.Add(time.Duration(i-1) * window)).Seconds()
		w := Window{End: end.Sub(start).Seconds(), JobsPerSec: rate(n-last, span), Backlog: inserted() - n}
		if lat != nil {
			w.Latency = lat.takeWindow()
		}
		ws = append(ws, w)
		if onWindow != nil {
			onWindow(w)
		}
		last = n
		if !end.Before(start.Add(d)) {
			return ws
		}
	}
}

// startMaintenance starts the maintainer a fixed-rate or continuous run
// runs beside its workers, as in production.
func (b *bench) startMaintenance(ctx context.Context) (*fenced.Maintainer, error) {
	return b.db.c.StartMaintenance(ctx, fenced.MaintenanceConfig{Owner: "fenced-bench", Logger: b.o.Logger, VacuumRows: b.o.VacuumRows})
}

// setWindows records a run's windows of length window, the mean rate of its
// first and its last minute (minuteRates) and their ratio.
func (r *Result) setWindows(ws []Window, window time.Duration) {
	r.Windows = ws
	r.FirstMinute, r.LastMinute = minuteRates(ws, window)
	if r.FirstMinute > 0 {
		r.Steadiness = r.LastMinute / r.FirstMinute
	}
}

// minuteRates is the mean rate of the first and of the last minute's
// windows (fewer when the run is shorter than two minutes: the first and
// the last half).
func minuteRates(ws []Window, window time.Duration) (first, last float64) {
	if len(ws) == 0 {
		return 0, 0
	}
	k := max(1, int(time.Minute/window))
	k = min(k, max(1, len(ws)/2))
	mean := func(ws []Window) float64 {
		var s float64
		for _, w := range ws {
			s += w.JobsPerSec
		}
		return s / float64(len(ws))
	}
	return mean(ws[:k]), mean(ws[len(ws)-k:])
}

// latencies collects enqueue→start delays: a job's start of attempt minus
// its run_at, both read from the database clock. It keeps the whole run's
// (d, n) and the current window's (w, wn) apart.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
	n  atomic.Int64
	w  []time.Duration
	wn int64
}

// record adds a job's enqueue→start delay: the start of its attempt minus
// its run_at, both read from the database clock.
func (l *latencies) record(r *fenced.JobRun) {
	if r.AttemptedAt != nil {
		l.add(r.AttemptedAt.Sub(r.RunAt))
	}
}

// maxLatencySamples bounds the memory of a long run: past it, each new
// sample replaces the oldest.
const maxLatencySamples = 1 << 21

func (l *latencies) add(d time.Duration) {
	i := l.n.Add(1) - 1
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) < maxLatencySamples {
		l.d = append(l.d, d)
	} else {
		l.d[i%maxLatencySamples] = d
	}
	if len(l.w) < maxLatencySamples {
		l.w = append(l.w, d)
	} else {
		l.w[l.wn%maxLatencySamples] = d
	}
	l.wn++
}

// takeWindow is the percentiles of the delays recorded since the last
// takeWindow, nil when there were none; it starts the next window.
func (l *latencies) takeWindow() *Latency {
	l.mu.Lock()
	d, n := l.w, l.wn
	l.w, l.wn = nil, 0
	l.mu.Unlock()
	return percentilesOf(d, n)
}

// Latency is enqueue→start percentiles, in milliseconds.
type Latency struct {
	Samples int64   `json:"samples"`
	P50     float64 `json:"p50_ms"`
	P95     float64 `json:"p95_ms"`
	P99     float64 `json:"p99_ms"`
	Max     float64 `json:"max_ms"`
}

// percentiles is the whole run's percentiles, nil when nothing was
// recorded.
func (l *latencies) percentiles() *Latency {
	l.mu.Lock()
	d := slices.Clone(l.d)
	l.mu.Unlock()
	return percentilesOf(d, l.n.Load())
}

// percentilesOf sorts d, samples of n delays, and reads its percentiles;
// nil when d is empty.
func percentilesOf(d []time.Duration, n int64) *Latency {
	if len(d) == 0 {
		return nil
	}
	slices.Sort(d)
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(d)))) - 1
		return float64(d[max(0, i)]) / float64(time.Millisecond)
	}
	return &Latency{Samples: n, P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: at(1)}
}
