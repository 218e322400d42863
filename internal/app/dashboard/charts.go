package dashboard

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fenced/fenced"
)

// chartMinutes is how many minutes the charts show: the last hour.
const chartMinutes = 60

// maxQueueBytes is the longest queue name (docs/design.md §9).
const maxQueueBytes = 100

// chartsPage is the data of /charts.
type chartsPage struct {
	Chrome
	Now    time.Time
	Queue  string   // the queue shown; "" for all of them
	Queues []string // the queues with rows in the hour, for the selector
	From   time.Time
	To     time.Time // the end of the newest minute shown
	Rolled int       // minutes of the hour rolled up
	Rows   int       // rollup rows read
	Charts []chart
	// NoJobs, when set, says why there are no charts (a backend without
	// the job queue, or without a clock read).
	NoJobs string
}

// charts serves /charts?queue=: the last hour of the rolled-up minutes
// (one read of at most chartMinutes × (queues+1) rows of the rollup,
// whatever the number of jobs), drawn as four charts.
func (h *Handler) charts(w http.ResponseWriter, r *http.Request) {
	queue := strings.TrimSpace(r.URL.Query().Get("queue"))
	if len(queue) > maxQueueBytes {
		h.render(w, r, http.StatusBadRequest, "error", &errorPage{Title: "Not a queue",
			Message: fmt.Sprintf("A queue name has at most %d bytes.", maxQueueBytes)})
		return
	}
	p, err := h.loadCharts(r.Context(), queue)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p.Clock = clock(p.Now, true)
	h.render(w, r, http.StatusOK, "charts", p)
}

func (h *Handler) loadCharts(ctx context.Context, queue string) (*chartsPage, error) {
	p := &chartsPage{Queue: queue}
	switch {
	case h.noJobs != nil:
		p.NoJobs = "This backend keeps no jobs."
		return p, nil
	case !h.c.Supports(fenced.CapClock):
		p.NoJobs = "This backend cannot read its clock alone, and the charts' minutes are the database clock's."
		return p, nil
	}
	now, err := h.c.DatabaseTime(ctx)
	if err != nil {
		return nil, fmt.Errorf("database time: %w", err)
	}
	p.Now = now
	last := now.Add(-fenced.RollupGrace).Truncate(time.Minute).Add(-time.Minute)
	first := last.Add(-(chartMinutes - 1) * time.Minute)
	p.From, p.To = first, last.Add(time.Minute)
	rows, err := h.c.ListJobMinutes(ctx, first)
	if err != nil {
		return nil, fmt.Errorf("list job minutes: %w", err)
	}
	p.Rows = len(rows)
	m := newMinuteSeries(first, chartMinutes)
	queues := map[string]bool{}
	for _, row := range rows {
		if row.Queue != "" {
			queues[row.Queue] = true
		}
		m.add(row, queue)
	}
	for q := range queues {
		p.Queues = append(p.Queues, q)
	}
	slices.Sort(p.Queues)
	p.Rolled = m.rolled()
	p.Charts = []chart{m.throughput(), m.depthChart(queue), m.waitChart()}
	if h.o.StaleMinutes != nil {
		p.Charts = append(p.Charts, m.staleChart(h.o.StaleMinutes()))
	}
	return p, nil
}

// minuteSeries sums the rollup rows of the charts' minutes, of one queue
// or all of them.
type minuteSeries struct {
	minutes                                 []time.Time
	marked                                  []bool // the minute was rolled up
	depthOK                                 []bool // and its depths were counted
	succeeded, failed, retried, lost, depth []float64
	waits                                   [][]int64 // per minute, per bucket
}

func newMinuteSeries(first time.Time, n int) *minuteSeries {
	m := &minuteSeries{marked: make([]bool, n), depthOK: make([]bool, n), waits: make([][]int64, n)}
	for i := range n {
		m.minutes = append(m.minutes, first.Add(time.Duration(i)*time.Minute))
		m.waits[i] = make([]int64, len(fenced.WaitBucketsMS)+1)
	}
	for _, s := range []*[]float64{&m.succeeded, &m.failed, &m.retried, &m.lost, &m.depth} {
		*s = make([]float64, n)
	}
	return m
}

// add counts one rollup row, if it is of queue (or queue is "").
func (m *minuteSeries) add(row fenced.JobMinute, queue string) {
	i := int(row.Minute.Sub(m.minutes[0]) / time.Minute)
	if i < 0 || i >= len(m.minutes) {
		return
	}
	if row.Queue == "" {
		m.marked[i] = true
		m.depthOK[i] = row.Depth >= 0
		return
	}
	if queue != "" && row.Queue != queue {
		return
	}
	m.succeeded[i] += float64(row.Succeeded)
	m.failed[i] += float64(row.Failed)
	m.retried[i] += float64(row.Retried)
	m.lost[i] += float64(row.Lost)
	m.depth[i] += float64(max(row.Depth, 0))
	for b, n := range row.Waits {
		if b < len(m.waits[i]) {
			m.waits[i][b] += n
		}
	}
}

func (m *minuteSeries) rolled() int {
	n := 0
	for _, ok := range m.marked {
		if ok {
			n++
		}
	}
	return n
}

// known is vs with NaN for the minutes where ok is false.
func known(vs []float64, ok []bool) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = v
		if !ok[i] {
			out[i] = math.NaN()
		}
	}
	return out
}

func sum(vs []float64) float64 {
	t := 0.0
	for _, v := range vs {
		if !math.IsNaN(v) {
			t += v
		}
	}
	return t
}

func (m *minuteSeries) throughput() chart {
	c := chart{Title: "Jobs per minute", Minutes: m.minutes, Series: []series{
		{"succeeded", colorOK, known(m.succeeded, m.marked)},
		{"failed", colorBad, known(m.failed, m.marked)},
		{"retried", colorWarn, known(m.retried, m.marked)},
		{"lost (lease expired)", colorMuted, known(m.lost, m.marked)},
	}}
	c.Note = fmt.Sprintf("In the hour: %.0f succeeded, %.0f failed, %.0f retried, %.0f lost. "+
		"Jobs by the minute they finished; retried and lost attempts by the minute they ended.",
		sum(c.Series[0].Values), sum(c.Series[1].Values), sum(c.Series[2].Values), sum(c.Series[3].Values))
	return c
}

func (m *minuteSeries) depthChart(queue string) chart {
	v := known(m.depth, m.depthOK)
	what := "every queue"
	if queue != "" {
		what = "the queue"
	}
	c := chart{Title: "Queue depth", Minutes: m.minutes, Series: []series{{"queued", colorAccent, v}}}
	c.Note = fmt.Sprintf("Queued jobs (due or not) in %s at the end of each minute; none where the minute "+
		"was rolled up late (no maintainer was running).", what)
	if i := lastKnown(v); i >= 0 {
		c.Note = fmt.Sprintf("%.0f queued at %s. ", v[i], m.minutes[i].Add(time.Minute).UTC().Format("15:04")) + c.Note
	}
	return c
}

// waitChart draws the claim wait percentiles of each minute from its
// wait histogram: the upper edge of the bucket the percentile falls in.
func (m *minuteSeries) waitChart() chart {
	qs := []struct {
		name  string
		q     float64
		color string
	}{{"p50", .50, colorOK}, {"p95", .95, colorWarn}, {"p99", .99, colorBad}}
	c := chart{Title: "Claim wait", Log: true, Minutes: m.minutes}
	total := make([]int64, len(fenced.WaitBucketsMS)+1)
	for _, q := range qs {
		s := series{Name: q.name, Color: q.color, Values: make([]float64, len(m.minutes))}
		for i, w := range m.waits {
			s.Values[i] = percentileMS(w, q.q)
		}
		c.Series = append(c.Series, s)
	}
	for _, w := range m.waits {
		for b, n := range w {
			total[b] += n
		}
	}
	c.Note = "From due (enqueue, or the retry's time) to the start of the last attempt of the jobs that " +
		"finished in each minute: the upper edge of the bucket each percentile falls in."
	if p := percentileMS(total, .99); !math.IsNaN(p) {
		c.Note = fmt.Sprintf("In the hour: p50 ≤ %s, p95 ≤ %s, p99 ≤ %s. ", formatMS(percentileMS(total, .5)),
			formatMS(percentileMS(total, .95)), formatMS(p)) + c.Note
	}
	return c
}

// percentileMS is the upper edge (ms) of the bucket of counts holding the
// q-th quantile; the last bucket (an hour or more) counts as its lower
// edge. NaN without counts.
func percentileMS(counts []int64, q float64) float64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return math.NaN()
	}
	rank := int64(math.Ceil(q * float64(n)))
	var seen int64
	for b, c := range counts {
		seen += c
		if seen >= rank {
			if b < len(fenced.WaitBucketsMS) {
				return float64(fenced.WaitBucketsMS[b])
			}
			break
		}
	}
	return float64(fenced.WaitBucketsMS[len(fenced.WaitBucketsMS)-1])
}

func (m *minuteSeries) staleChart(counts map[time.Time]int64) chart {
	v := make([]float64, len(m.minutes))
	for i, at := range m.minutes {
		v[i] = float64(counts[at])
	}
	c := chart{Title: "Stale writes refused", Minutes: m.minutes, Series: []series{{"refused", colorBad, v}}}
	c.Note = fmt.Sprintf("In the hour: %.0f. Writes this server refused as stale (a lease, slot, job or resource "+
		"write with a fence that was no longer current), by the minute they were refused, since this server "+
		"started; other processes count their own (fenced_stale_writes_total).", sum(v))
	return c
}

func lastKnown(v []float64) int {
	for i := len(v) - 1; i >= 0; i-- {
		if !math.IsNaN(v[i]) {
			return i
		}
	}
	return -1
}
