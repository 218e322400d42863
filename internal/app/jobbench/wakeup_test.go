package jobbench

import (
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

// A wake-up run starts each single job once and measures each start.
func TestWakeupsMeasureEachSingleJob(t *testing.T) {
	t.Parallel()
	url := testdb.SQLite(t)
	res, err := Run(ctx(t), Options{URL: url, Wakeups: 5, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != Wakeup || res.Jobs != 5 || res.Latency == nil || res.Latency.Samples != 5 {
		t.Fatalf("result %+v, latency %+v; want 5 wake-ups measured", res, res.Latency)
	}
	if n := counts(t, url, DefaultQueue); len(n) != 0 {
		t.Fatalf("jobs left in the benchmark's queue: %v", n)
	}
}
