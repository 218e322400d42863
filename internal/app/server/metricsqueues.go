package server

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// A queue name is the client's to choose, and every queue a metric names
// is a series, kept until the server exits, so a metric labelled by queue
// names a queue only under two rules (docs/operations.md, "Metrics"):
//
//   - a queue is named only while it has jobs: fenced_jobs,
//     fenced_key_slots_in_use and fenced_jobs_held_back name the queues
//     that have jobs in the database at the scrape, fenced_job_claims_total
//     the queues a claim took a job from, and fenced_job_claims_waiting the
//     queues a claim waits on now (its series goes when the last waiting
//     claim returns). A claim that finds nothing leaves no series behind.
//   - each metric names at most Config.MaxMetricQueues queues (default
//     DefaultMaxMetricQueues); what the others count is summed in the
//     series of queue="_other", which no queue can be called (a queue name
//     starts with a letter or digit).

// DefaultMaxMetricQueues is the default of Config.MaxMetricQueues.
const DefaultMaxMetricQueues = 1000

// otherQueue is the label of the series that sums the queues past the limit.
const otherQueue = "_other"

// queueNames is the set of queues a counter has named: the first max
// queues it counted, kept for the server's life.
type queueNames struct {
	max   int
	mu    sync.Mutex
	named map[string]bool
}

func newQueueNames(max int) *queueNames { return &queueNames{max: max, named: map[string]bool{}} }

// label is the label queue's count goes under: its name if it is named
// already or there is room, else otherQueue.
func (q *queueNames) label(queue string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.named[queue] {
		if len(q.named) >= q.max {
			return otherQueue
		}
		q.named[queue] = true
	}
	return queue
}

// waitingGauge is fenced_job_claims_waiting: a series per queue that has a
// claim waiting now (at most max of them, the rest under otherQueue), gone
// when its last waiting claim returns.
type waitingGauge struct {
	g   *prometheus.GaugeVec
	max int

	mu sync.Mutex
	n  map[string]int // waiting claims by label; a label with none is absent
}

func newWaitingGauge(g *prometheus.GaugeVec, max int) *waitingGauge {
	return &waitingGauge{g: g, max: max, n: map[string]int{}}
}

// wait counts a claim waiting on queue and returns the label it was
// counted under, to pass to done when the wait ends.
func (w *waitingGauge) wait(queue string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	label := queue
	if w.n[queue] == 0 && len(w.n) >= w.max {
		label = otherQueue
	}
	w.n[label]++
	w.g.WithLabelValues(label).Set(float64(w.n[label]))
	return label
}

// done ends a wait counted under label.
func (w *waitingGauge) done(label string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[label]--; w.n[label] > 0 {
		w.g.WithLabelValues(label).Set(float64(w.n[label]))
		return
	}
	delete(w.n, label)
	w.g.DeleteLabelValues(label)
}

// waiting is how many claims wait on queue now under its own name.
func (w *waitingGauge) waiting(queue string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[queue]
}

// capQueues orders the queues a scrape read by name and keeps the first
// max; the values of the others are added to otherQueue's (which is last
// in the order returned). add(from, to) adds queue from's values to
// queue to's.
func capQueues(queues []string, max int, add func(from, to string)) []string {
	if len(queues) <= max {
		return queues
	}
	slices.Sort(queues)
	for _, q := range queues[max:] {
		add(q, otherQueue)
	}
	return append(queues[:max:max], otherQueue)
}
