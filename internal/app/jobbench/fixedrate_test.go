package jobbench

import (
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/testdb"
)

// A fixed-rate run offers its rate whatever the workers do, reports every
// window, and measures enqueue→start latency; its jobs are cleaned up.
func TestFixedRateReportsWindowsAndLatency(t *testing.T) {
	t.Parallel()
	url := testdb.SQLite(t)
	var seen []Window
	res, err := Run(ctx(t), Options{URL: url, Duration: 3 * time.Second, Rate: 200, Work: time.Millisecond,
		Window: time.Second, Concurrency: 8, OnWindow: func(w Window) { seen = append(seen, w) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != FixedRate || len(res.Windows) != 3 || len(seen) != 3 {
		t.Fatalf("mode %q, %d windows (%d reported), want fixed-rate with 3", res.Mode, len(res.Windows), len(seen))
	}
	// 200/s for 3 s: the producer owes 600 by the end; the workers take
	// what they can.
	if res.Inserted < 400 || res.Inserted > 600 || res.Jobs < 1 || res.Jobs > res.Inserted {
		t.Fatalf("inserted %d, worked %d; want about 600 inserted and some of them worked", res.Inserted, res.Jobs)
	}
	if l := res.Latency; l == nil || l.Samples < res.Jobs || l.P50 > l.P99 || l.P99 > l.Max {
		t.Fatalf("latency %+v for %d jobs", res.Latency, res.Jobs)
	}
	// Each window's latency counts the jobs started in it: together, the
	// run's samples less those of jobs started after the last window.
	var windowSamples int64
	for _, w := range res.Windows {
		if l := w.Latency; l != nil {
			if l.P50 > l.P99 || l.P99 > l.Max || l.Max > res.Latency.Max {
				t.Fatalf("window %+v: percentiles out of order or past the run's max %v", l, res.Latency.Max)
			}
			windowSamples += l.Samples
		}
	}
	if windowSamples < 1 || windowSamples > res.Latency.Samples {
		t.Fatalf("windows hold %d latency samples; the run recorded %d", windowSamples, res.Latency.Samples)
	}
	if res.FirstMinute <= 0 || res.LastMinute <= 0 {
		t.Fatalf("first %v, last %v: want both measured", res.FirstMinute, res.LastMinute)
	}
	if n := counts(t, url, DefaultQueue); len(n) != 0 {
		t.Fatalf("jobs left in the benchmark's queue: %v", n)
	}
}

func TestFixedRateNeedsADuration(t *testing.T) {
	t.Parallel()
	if _, err := Run(ctx(t), Options{URL: testdb.SQLite(t), Rate: 100}); err == nil {
		t.Fatal("a rate without a duration was accepted")
	}
}

func TestMinuteRates(t *testing.T) {
	ws := make([]Window, 30) // 5 minutes of 10 s windows
	for i := range ws {
		ws[i].JobsPerSec = float64(i)
	}
	first, last := minuteRates(ws, 10*time.Second)
	if first != 2.5 || last != 26.5 {
		t.Fatalf("first %v, last %v; want the means of windows 0-5 (2.5) and 24-29 (26.5)", first, last)
	}
	first, last = minuteRates(ws[:4], 10*time.Second) // shorter than two minutes: halves
	if first != 0.5 || last != 2.5 {
		t.Fatalf("first %v, last %v; want 0.5 and 2.5", first, last)
	}
}
