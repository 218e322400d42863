package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/fenced/fenced"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are what /metrics exposes, in a registry of the server's own.
//
//	fenced_jobs{queue,state}                   gauge: jobs now, read from the database at each scrape
//	fenced_job_claims_total{queue}             jobs claimed through this server (jobs, not calls)
//	fenced_job_claims_waiting{queue}           long-polling claims now waiting for a job
//	fenced_key_slots_in_use{queue}             running attempts of jobs with a concurrency key (metricslots.go)
//	fenced_jobs_held_back{queue}               due jobs held back by their concurrency key's limit
//	fenced_job_completions_total               completions accepted
//	fenced_job_failures_total                  fail requests accepted (retried or dead-lettered alike)
//	fenced_job_recoveries_total                expired running jobs taken back by this server's maintenance
//	fenced_lease_acquires_total{result}        acquires: "acquired" or "held" (refused)
//	fenced_semaphore_acquires_total{result}    semaphore slot acquires: "acquired" or "held" (every slot held)
//	fenced_stale_writes_total{kind,reason}     writes refused as stale: kind lease, semaphore, job or resource
//	fenced_http_request_duration_seconds{route,code}
//
// "acquired" counts new grants and an owner's re-entrant acquire of a lease
// it already holds (same fence, extended) alike: the library's acquire
// does not say which it was, and telling them apart would cost another
// read. Takeovers are not counted when they happen, for the same reason;
// they show when the previous holder next writes, as
// fenced_stale_writes_total{kind="lease",reason="superseded"} (or
// kind="job" for a job's attempt).
//
// The queues the series of a metric labelled by queue name are bounded as
// metricsqueues.go says: only queues with jobs, at most maxQueues of them,
// the rest summed under queue="_other".
type metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.HistogramVec
	claims      *prometheus.CounterVec
	claimQueues *queueNames // the queues claims names
	waiting     *waitingGauge
	completions prometheus.Counter
	failures    prometheus.Counter
	recovered   prometheus.Counter
	acquires    *prometheus.CounterVec
	stale       *prometheus.CounterVec
	// slotAcquires counts semaphore acquires as acquires does leases'.
	slotAcquires *prometheus.CounterVec
}

func newMetrics(c *fenced.Client, maxQueues int) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fenced_http_request_duration_seconds",
			Help: "Time to answer an HTTP request, by route pattern and status code (claims include their long-poll wait).",
			// From a renew on loopback to a claim's longest wait.
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "code"}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fenced_job_claims_total",
			Help: "Jobs claimed through this server, by queue (each claimed job counts once).",
		}, []string{"queue"}),
		claimQueues: newQueueNames(maxQueues),
		waiting: newWaitingGauge(prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fenced_job_claims_waiting",
			Help: "Long-polling claims now waiting for a job, by queue.",
		}, []string{"queue"}), maxQueues),
		completions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fenced_job_completions_total",
			Help: "Job completions accepted by this server.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fenced_job_failures_total",
			Help: "Job failures accepted by this server, whether the job will retry or is failed for good.",
		}),
		recovered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fenced_job_recoveries_total",
			Help: "Running jobs whose lease expired, taken back by this server's maintenance.",
		}),
		acquires: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fenced_lease_acquires_total",
			Help: `Lease acquires by result: "acquired" (a new grant, or the holder's re-entrant acquire keeping its fence) or "held" (refused: another owner holds it).`,
		}, []string{"result"}),
		stale: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fenced_stale_writes_total",
			Help: "Writes refused because their fence was no longer current, by kind (lease, semaphore, job, resource) and reason.",
		}, []string{"kind", "reason"}),
		slotAcquires: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fenced_semaphore_acquires_total",
			Help: `Semaphore slot acquires by result: "acquired" (a new grant, or the holder's re-entrant acquire keeping its fence) or "held" (refused: every slot is held).`,
		}, []string{"result"}),
	}
	// Series that exist from the start read 0 rather than missing.
	for _, r := range []string{"acquired", "held"} {
		m.acquires.WithLabelValues(r)
		m.slotAcquires.WithLabelValues(r)
	}
	for kind, reasons := range map[fenced.StaleKind][]fenced.StaleReason{
		fenced.StaleLease: {fenced.ReasonSuperseded, fenced.ReasonNeverGranted, fenced.ReasonWrongOwner,
			fenced.ReasonExpired, fenced.ReasonReleased},
		fenced.StaleSemaphore: {fenced.ReasonSuperseded, fenced.ReasonNeverGranted, fenced.ReasonWrongOwner,
			fenced.ReasonExpired, fenced.ReasonReleased},
		fenced.StaleJob:      {fenced.ReasonSuperseded, fenced.ReasonNeverGranted, fenced.ReasonExpired, fenced.ReasonNotRunning},
		fenced.StaleResource: {fenced.ReasonSuperseded},
	} {
		for _, r := range reasons {
			m.stale.WithLabelValues(string(kind), string(r))
		}
	}
	m.reg.MustRegister(m.requests, m.claims, m.waiting.g, m.completions, m.failures, m.recovered, m.acquires, m.stale, m.slotAcquires,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if c.Supports(fenced.CapJobs) {
		// The gauges read from the job table at scrape time; a backend
		// without the job queue has none.
		m.reg.MustRegister(jobsCollector{c: c, maxQueues: maxQueues}, keySlotsCollector{c: c, maxQueues: maxQueues})
	}
	return m
}

// claimed counts the jobs one claim on queue took; a claim that took
// none names no queue.
func (m *metrics) claimed(queue string, jobs int) {
	if jobs > 0 {
		m.claims.WithLabelValues(m.claimQueues.label(queue)).Add(float64(jobs))
	}
}

// observe records one request's latency.
func (m *metrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Observe(d.Seconds())
}

// handler serves the registry; a failed part (the job counts, if the
// database is down) is logged and left out rather than failing the scrape.
func (m *metrics) handler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slogPrinter{log},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// Gatherer gives the server's metrics (for the dashboard's stale-write
// count).
func (s *Server) Gatherer() prometheus.Gatherer { return s.metrics.reg }

// jobsDesc describes fenced_jobs.
var jobsDesc = prometheus.NewDesc("fenced_jobs", "Jobs in the database now, by queue and state.",
	[]string{"queue", "state"}, nil)

// jobsCollector reads the job counts at scrape time. Every queue that has
// jobs reports all five states, zeros included; past maxQueues queues, the
// others' counts are summed under otherQueue.
type jobsCollector struct {
	c         *fenced.Client
	maxQueues int
}

func (j jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- jobsDesc }

func (j jobsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := j.c.CountJobs(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(jobsDesc, fmt.Errorf("job counts: %w", err))
		return
	}
	states := []fenced.JobState{fenced.JobQueued, fenced.JobRunning, fenced.JobSucceeded, fenced.JobFailed, fenced.JobCancelled}
	byQueue := map[string]map[fenced.JobState]int64{}
	var order []string
	for _, c := range counts {
		if byQueue[c.Queue] == nil {
			byQueue[c.Queue] = map[fenced.JobState]int64{}
			order = append(order, c.Queue)
		}
		byQueue[c.Queue][c.State] += c.Count
	}
	order = capQueues(order, j.maxQueues, func(from, to string) {
		if byQueue[to] == nil {
			byQueue[to] = map[fenced.JobState]int64{}
		}
		for s, n := range byQueue[from] {
			byQueue[to][s] += n
		}
	})
	for _, q := range order {
		for _, s := range states {
			ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(byQueue[q][s]), q, string(s))
		}
	}
}

// slogPrinter gives promhttp a logger.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Warn("metrics: " + fmt.Sprint(v...)) }
