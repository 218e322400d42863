package server

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// scrape is every sample of one /metrics answer: series → value.
func (e *env) scrape() map[string]float64 {
	e.t.Helper()
	r := e.ok("GET", "/metrics", nil)
	out := map[string]float64{}
	for _, line := range strings.Split(string(r.raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		var v float64
		fmt.Sscan(line[i+1:], &v)
		out[line[:i]] = v
	}
	return out
}

// seriesOf is the series of metric name in a scrape: its labels → value.
func seriesOf(samples map[string]float64, name string) map[string]float64 {
	out := map[string]float64{}
	for s, v := range samples {
		if labels, ok := strings.CutPrefix(s, name+"{"); ok {
			out["{"+labels] = v
		}
	}
	return out
}

func sum(series map[string]float64) float64 {
	var n float64
	for _, v := range series {
		n += v
	}
	return n
}

// TestMetricsQueueSeriesAreBounded: a queue name is the client's to
// choose, so claims on queues that have no jobs leave no series behind, a
// waiting claim's series goes when it returns, and no metric labelled by
// queue names more than MaxMetricQueues queues: the rest are summed under
// queue="_other".
func TestMetricsQueueSeriesAreBounded(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		t.Run("ClaimsOnEmptyQueuesAddNoSeries", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			e.claim("warm-up", map[string]any{"owner": "w"})
			e.scrape() // the scrape's own route is counted from the second
			before := e.scrape()
			const claims = 300
			var wg sync.WaitGroup
			slots := make(chan struct{}, 16) // claims at once
			for i := range claims {
				slots <- struct{}{}
				wg.Go(func() {
					defer func() { <-slots }()
					body := map[string]any{"owner": "w"}
					if i%10 == 0 {
						body["wait_ms"] = 20 // some wait, and stop waiting
					}
					if r, err := e.send("POST", fmt.Sprintf("/v1/queues/empty-%d/claim", i), body); err != nil || r.status != 200 {
						t.Errorf("claim %d: %v %d %s", i, err, r.status, r.raw)
					}
				})
			}
			wg.Wait()
			after := e.scrape()
			for _, name := range []string{"fenced_job_claims_total", "fenced_job_claims_waiting", "fenced_jobs"} {
				if s := seriesOf(after, name); len(s) != 0 {
					t.Errorf("after %d claims on empty queues %s has %d series: %v", claims, name, len(s), s)
				}
			}
			var added []string
			for s := range after {
				if _, ok := before[s]; !ok {
					added = append(added, s)
				}
			}
			if len(after) != len(before) || len(added) != 0 {
				t.Errorf("after %d claims on empty queues /metrics went from %d to %d series; new: %.20q",
					claims, len(before), len(after), added)
			}
		})
		t.Run("EachQueueMetricNamesAtMostMaxMetricQueues", func(t *testing.T) {
			t.Parallel()
			const maxQueues, queues = 3, 8
			e := setup(t, db(t), Config{MaxMetricQueues: maxQueues})
			ch := make([]<-chan claimResult, queues)
			for i := range queues {
				ch[i] = e.claimAsync(fmt.Sprintf("q%d", i), map[string]any{"owner": "w", "wait_ms": 30000})
			}
			waitFor(t, "every claim to wait", func() bool {
				return sum(seriesOf(e.scrape(), "fenced_job_claims_waiting")) == queues
			})
			if s := seriesOf(e.scrape(), "fenced_job_claims_waiting"); len(s) != maxQueues+1 || s[`{queue="_other"}`] != queues-maxQueues {
				t.Errorf("claims waiting on %d queues: %v, want %d queues and _other %d", queues, s, maxQueues, queues-maxQueues)
			}
			for i := range queues {
				e.ok("PUT", "/v1/queues/"+fmt.Sprintf("q%d", i)+"/limit", map[string]any{"per_key": 1})
				e.enqueue(map[string]any{"kind": "k", "queue": fmt.Sprintf("q%d", i), "concurrency_key": "c"})
				e.enqueue(map[string]any{"kind": "k", "queue": fmt.Sprintf("q%d", i), "concurrency_key": "c"})
			}
			for i := range queues {
				(<-ch[i]).want(t, 1)
			}
			after := e.scrape()
			for name, want := range map[string]float64{
				"fenced_job_claims_total":   queues,     // one job claimed from each queue
				"fenced_jobs":               2 * queues, // all of them, by state
				"fenced_key_slots_in_use":   queues,     // one running per queue
				"fenced_jobs_held_back":     queues,     // one held back per queue
				"fenced_job_claims_waiting": 0,          // none waits now
			} {
				s := seriesOf(after, name)
				queuesNamed := map[string]bool{}
				for labels := range s {
					q, _, _ := strings.Cut(strings.TrimPrefix(labels[strings.Index(labels, `queue="`):], `queue="`), `"`)
					queuesNamed[q] = true
				}
				if sum(s) != want || want > 0 && (len(queuesNamed) != maxQueues+1 || !queuesNamed[otherQueue]) || want == 0 && len(s) != 0 {
					t.Errorf("%s: %d queues named (%v), sum %v; want %d queues and _other, sum %v", name,
						len(queuesNamed), s, sum(s), maxQueues, want)
				}
			}
		})
	})
}
