package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// fenced serve's maintenance enqueues the periodic jobs of --periodic and
// --periodic-file: each slot once, with the file's args and queue.
func TestServeEnqueuesPeriodicJobs(t *testing.T) {
	t.Parallel()
	url := testdb.SQLite(t)
	c := newCLI(t, url)
	file := filepath.Join(t.TempDir(), "periodic.json")
	spec := `[{"kind": "report", "every": "1h", "queue": "reports", "args": {"to": "ops"}},
	          {"kind": "weekly", "cron": "CRON_TZ=Europe/Paris 0 9 * * 1"}]`
	if err := os.WriteFile(file, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	s := c.serve("--periodic", "minutely=* * * * *", "--periodic", "tick=1s", "--periodic-file", file)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lib, err := fenced.Open(ctx, url, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	kinds := map[string][]*fenced.Job{}
	for ctx.Err() == nil {
		jobs, err := lib.ListJobs(ctx, fenced.JobFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		clear(kinds)
		for _, j := range jobs {
			kinds[j.Kind] = append(kinds[j.Kind], j)
		}
		// tick every second: wait for its second slot.
		if len(kinds["minutely"]) > 0 && len(kinds["report"]) > 0 && len(kinds["weekly"]) > 0 && len(kinds["tick"]) >= 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.stop()
	if ctx.Err() != nil {
		t.Fatalf("periodic jobs enqueued within a minute: %v; serve's log: %s", kinds, s.stderr)
	}
	r := kinds["report"][0]
	var args bytes.Buffer
	if err := json.Compact(&args, r.Args); err != nil {
		t.Fatal(err)
	}
	if len(kinds["report"]) != 1 || r.Queue != "reports" || args.String() != `{"to":"ops"}` {
		t.Fatalf("report jobs: %d, the first in queue %q with args %s: want one, in queue reports with the file's args", len(kinds["report"]), r.Queue, r.Args)
	}
	// The weekly slot is last Monday 09:00 in Paris, 08:00 UTC in winter
	// and 07:00 in summer.
	w := kinds["weekly"][0]
	slot := strings.TrimPrefix(w.IdempotencyKey, "periodic:weekly:")
	if len(kinds["weekly"]) != 1 || slot == w.IdempotencyKey {
		t.Fatalf("weekly jobs %+v: want one, keyed by its slot", kinds["weekly"])
	}
	seen := map[string]bool{}
	for _, j := range kinds["tick"] {
		if seen[j.IdempotencyKey] {
			t.Fatalf("two tick jobs under the key %q", j.IdempotencyKey)
		}
		seen[j.IdempotencyKey] = true
	}
}

// A periodic job that cannot be enqueued is refused before the server
// opens the database.
func TestServeRefusesBadPeriodicJobs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--periodic", "nokind"}, "want KIND=SCHEDULE"},
		{[]string{"--periodic", "=5m"}, "want KIND=SCHEDULE"},
		{[]string{"--periodic", "k=61 * * * *"}, "above maximum"},
		{[]string{"--periodic", "k=500ms"}, "under 1s"},
		{[]string{"--periodic", "k=@every 1h"}, "give the interval as Every"},
		{[]string{"--periodic", "k=5m", "--no-maintenance"}, "drop --no-maintenance"},
		{[]string{"--periodic-file", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"--periodic-file", write("typo.json", `[{"kind": "k", "crom": "0 9 * * *"}]`)}, `unknown field "crom"`},
		{[]string{"--periodic-file", write("both.json", `[{"kind": "k", "every": "1h", "cron": "0 9 * * *"}]`)}, "give one"},
		{[]string{"--periodic-file", write("every.json", `[{"kind": "k", "every": "hourly"}]`)}, "want a duration"},
		{[]string{"--periodic-file", write("dup.json", `[{"kind": "k", "every": "1h", "args": {"a": 1, "a": 2}}]`)}, `key "a" twice`},
		{[]string{"--periodic-file", write("two.json", `[] []`)}, "at line 1, column 4"},
		{[]string{"--periodic-file", write("broken.json", "[\n  {\"kind\": \"k\",}\n]")}, "at line 2, column 16"},
	} {
		cl := newCLI(t, "")
		r := cl.fails(exitUsage, append([]string{"serve"}, c.args...)...)
		contains(t, "stderr", r.stderr, c.want)
		if _, err := os.Stat(filepath.Join(cl.dir, "fenced.db")); !os.IsNotExist(err) {
			t.Errorf("fenced serve %q: exit 2, but the default database was created (stat: %v)", c.args, err)
		}
	}
}
