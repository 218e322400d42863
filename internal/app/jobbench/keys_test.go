package jobbench

import (
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// open is a client of url, closed at the end of the test.
func open(t *testing.T, url string) *fenced.Client {
	t.Helper()
	c, err := fenced.Open(ctx(t), url, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// keptJobs lists the jobs of queue.
func keptJobs(t *testing.T, c *fenced.Client, queue string) []*fenced.Job {
	t.Helper()
	var all []*fenced.Job
	for after := int64(0); ; {
		page, err := c.ListJobs(ctx(t), fenced.JobFilter{Queue: queue, AfterID: after, Limit: fenced.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].ID
	}
}

// TestKeysWithALimitOnSQLite: a burn-down with keys gives job n the key
// k<n mod keys>, runs at most the limit of a key at once, and leaves the
// queue's own limit as it found it: removed when there was none, put back
// when there was one.
func TestKeysWithALimitOnSQLite(t *testing.T) {
	t.Parallel()
	url := testdb.SQLite(t)
	c := open(t, url)
	if _, err := c.Migrate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx(t), Options{URL: url, Jobs: 300, Concurrency: 20, Queue: "keyed", Keys: 5, KeyLimit: 2, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	wantBurnDown(t, res, "sqlite", 300)
	if res.Keys != 5 || res.KeyLimit != 2 || res.MaxRunningPerKey < 1 || res.MaxRunningPerKey > 2 {
		t.Fatalf("keys %d, limit %d, at most %d of a key at once; want 5, 2, 1 to 2", res.Keys, res.KeyLimit, res.MaxRunningPerKey)
	}
	if !strings.Contains(res.String(), " keys=5 key-limit=2 (at most ") {
		t.Errorf("summary %q", res.String())
	}
	jobs := keptJobs(t, c, "keyed")
	if len(jobs) != 300 {
		t.Fatalf("%d jobs kept, want 300", len(jobs))
	}
	seen := map[string]int{}
	for _, j := range jobs {
		seen[j.ConcurrencyKey]++
		if j.SequenceKey != "" {
			t.Fatalf("job %d has sequence key %q", j.ID, j.SequenceKey)
		}
	}
	if len(seen) != 5 || seen["k0"] != 60 || seen["k4"] != 60 {
		t.Fatalf("jobs by key %v, want 60 each of k0 to k4", seen)
	}
	if ls, err := c.ListJobLimits(ctx(t), "keyed"); err != nil || len(ls) != 0 {
		t.Fatalf("limits left behind: %+v, %v", ls, err)
	}

	prior := fenced.JobLimit{Queue: "keyed2", PerKey: 7, Global: 100}
	if _, err := c.SetJobLimit(ctx(t), prior); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx(t), Options{URL: url, Jobs: 50, Concurrency: 5, Queue: "keyed2", Keys: 3, KeyLimit: 1}); err != nil {
		t.Fatal(err)
	}
	if ls, err := c.ListJobLimits(ctx(t), "keyed2"); err != nil || len(ls) != 1 || ls[0] != prior {
		t.Fatalf("limits after the run: %+v, %v; want %+v put back", ls, err, prior)
	}
}

// TestKeyLimitHoldsForJobsThatTakeTime: in a fixed-rate run whose jobs
// take a few milliseconds, 20 workers over 3 keys of limit 1 would run
// several jobs of a key at once; they run one.
func TestKeyLimitHoldsForJobsThatTakeTime(t *testing.T) {
	t.Parallel()
	res, err := Run(ctx(t), Options{URL: testdb.SQLite(t), Duration: 2 * time.Second, Rate: 300, Work: 5 * time.Millisecond,
		Concurrency: 20, Keys: 3, KeyLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs < 10 || res.MaxRunningPerKey != 1 {
		t.Fatalf("%d jobs worked, at most %d of a key at once; want some, and 1", res.Jobs, res.MaxRunningPerKey)
	}
}

// TestSequencesOnSQLite: a burn-down with sequences gives job n the
// sequence key s<n mod sequences>, and runs each sequence one job at a
// time, in order.
func TestSequencesOnSQLite(t *testing.T) {
	t.Parallel()
	url := testdb.SQLite(t)
	res, err := Run(ctx(t), Options{URL: url, Jobs: 300, Concurrency: 20, Queue: "seq", Sequences: 3, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	wantBurnDown(t, res, "sqlite", 300)
	if res.Sequences != 3 || res.MaxRunningPerSequence != 1 || res.SequenceOutOfOrder != 0 {
		t.Fatalf("sequences %d, at most %d of one at once, %d out of order; want 3, 1, 0",
			res.Sequences, res.MaxRunningPerSequence, res.SequenceOutOfOrder)
	}
	seen := map[string]int{}
	for _, j := range keptJobs(t, open(t, url), "seq") {
		seen[j.SequenceKey]++
		if j.ConcurrencyKey != "" {
			t.Fatalf("job %d has concurrency key %q", j.ID, j.ConcurrencyKey)
		}
	}
	if len(seen) != 3 || seen["s0"] != 100 || seen["s1"] != 100 || seen["s2"] != 100 {
		t.Fatalf("jobs by sequence %v, want 100 each of s0 to s2", seen)
	}
}

// TestKeyWatchCountsWhatRunsAtOnce: the watch's figures, which the tests
// above rely on, do go over a limit and out of order when the jobs do.
func TestKeyWatchCountsWhatRunsAtOnce(t *testing.T) {
	t.Parallel()
	w := newKeyWatch()
	w.enter(1, "k0", "s0")
	w.enter(3, "k0", "")
	w.enter(2, "k0", "s0") // three of k0 at once, two of s0 (in order)
	w.leave("k0", "s0")
	w.enter(5, "", "s1")
	w.leave("", "s1")
	w.enter(4, "", "s1") // after job 5 of its sequence
	var res Result
	w.fill(&res)
	if res.MaxRunningPerKey != 3 || res.MaxRunningPerSequence != 2 || res.SequenceOutOfOrder != 1 {
		t.Fatalf("watch: at most %d of a key, %d of a sequence, %d out of order; want 3, 2, 1",
			res.MaxRunningPerKey, res.MaxRunningPerSequence, res.SequenceOutOfOrder)
	}
}

func TestInvalidKeyOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{Keys: -1}, {Sequences: -1}, {KeyLimit: 2}, {Keys: 3, KeyLimit: -1},
		{Keys: 3, KeyLimit: fenced.MaxJobLimit + 1}, {Wakeups: 3, Keys: 2}} {
		if _, err := Run(ctx(t), o); err == nil || !strings.Contains(err.Error(), "invalid") {
			t.Fatalf("%+v: err = %v", o, err)
		}
	}
}
