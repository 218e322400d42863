package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

func TestBenchBurnDown(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		r := c.run("bench", "--jobs", "300", "--workers", "30")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		last := lines[len(lines)-1]
		if !regexp.MustCompile(`^bench: burn-down 300 jobs in [0-9.]+s = [0-9]+ jobs/s \(insert [0-9]+ jobs/s\)(, WAL [0-9]+ bytes/job, [0-9]+ statements in [0-9]+ round trips \([0-9.]+ a job\)(, [0-9.]+ row writes/job \([0-9.]+ HOT\), [0-9.]+ row locks, [0-9.]+ index inserts)?)? backend=(sqlite|postgres) workers=30`).MatchString(last) {
			t.Fatalf("summary %q", last)
		}
		for _, l := range lines[:len(lines)-1] { // progress, one plain line each: not a terminal
			if !strings.HasPrefix(l, "bench: ") || strings.Contains(l, "\r") {
				t.Fatalf("progress line %q", l)
			}
		}
		var res struct {
			Mode    string  `json:"mode"`
			Backend string  `json:"backend"`
			Jobs    int     `json:"jobs"`
			Rate    float64 `json:"jobs_per_sec"`
			Workers int     `json:"workers"`
		}
		c.json(&res, "bench", "--jobs", "100", "--workers", "10", "--json")
		if res.Mode != "burn-down" || res.Jobs != 100 || res.Rate <= 0 || res.Workers != 10 {
			t.Fatalf("--json = %+v", res)
		}
		out := c.ok("job", "counts", "--json")
		if strings.Contains(out, "fenced-bench") {
			t.Fatalf("the benchmark's jobs were left behind: %s", out)
		}
	})
}

func TestBenchContinuous(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "") // a fresh SQLite file in a temporary directory
	out := c.ok("bench", "--duration", "300ms", "--workers", "10", "--keep")
	if !regexp.MustCompile(`bench: continuous 0\.[0-9]s: worked [0-9]+ = [0-9]+ jobs/s, inserted [0-9]+ = [0-9]+ jobs/s backend=sqlite workers=10\n$`).MatchString(out) {
		t.Fatalf("summary %q", out)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "fenced.db")); !os.IsNotExist(err) {
		t.Fatalf("the benchmark wrote the default database, not a temporary one (stat: %v)", err)
	}
}

func TestBenchKeysAndSequences(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "") // a fresh SQLite file in a temporary directory
	out := c.ok("bench", "--jobs", "200", "--workers", "10", "--keys", "4", "--key-limit", "2", "--sequences", "5")
	if !regexp.MustCompile(`bench: burn-down 200 jobs in .* keys=4 key-limit=2 \(at most [12] of a key at once\) sequences=5 \(at most 1 of a sequence at once, 0 out of order\)\n$`).MatchString(out) {
		t.Fatalf("summary %q", out)
	}
}

func TestBenchUsage(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	for _, args := range [][]string{
		{"bench", "--jobs", "10", "--duration", "1s"},
		{"bench", "--jobs", "0"},
		{"bench", "--duration", "0s"},
		{"bench", "--workers", "0"},
		{"bench", "--keys", "0"},
		{"bench", "--sequences", "0"},
		{"bench", "--key-limit", "2"},
		{"bench", "--keys", "3", "--key-limit", "0"},
		{"bench", "--wakeups", "3", "--keys", "3"},
		{"bench", "extra"},
	} {
		c.fails(exitUsage, args...)
	}
}

// TestBenchProfiles: --cpuprofile and --memprofile write non-empty pprof
// files; a path that cannot be written fails before the benchmark runs.
func TestBenchProfiles(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	cpu, mem := filepath.Join(c.dir, "cpu.prof"), filepath.Join(c.dir, "mem.prof")
	c.ok("bench", "--jobs", "100", "--workers", "10", "--cpuprofile", cpu, "--memprofile", mem)
	for _, p := range []string{cpu, mem} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v (size %d)", p, err, st.Size())
		}
	}
	missing := filepath.Join(c.dir, "no-such-dir", "mem.prof")
	r := c.run("bench", "--jobs", "100", "--workers", "10", "--memprofile", missing)
	if r.code == 0 || !strings.Contains(r.stderr, "memory profile") || strings.Contains(r.stdout, "burn-down") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want a failure before the run", r.code, r.stdout, r.stderr)
	}
}
