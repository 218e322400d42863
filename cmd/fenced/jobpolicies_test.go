package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

// "job enqueue --timeout --retry-base --retry-max" store the job's own
// policies (shown by "job show --json"); "job work" ends an attempt at the
// job's timeout, or at its own --timeout for a job without one, with
// SIGTERM, and the attempt fails saying it timed out and is retried.
func TestJobWorkTimeouts(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	own := enqueueWork(c, "slow", `{}`, "--timeout", "300ms", "--retry-base", "1ms", "--retry-max", "2ms", "--retry-jitter", "0")
	plain := enqueueWork(c, "slow", `{}`)
	var shown struct {
		Job struct {
			TimeoutMs *int64          `json:"timeout_ms"`
			Retry     json.RawMessage `json:"retry"`
		} `json:"job"`
	}
	c.json(&shown, "job", "show", fmt.Sprint(own), "--json")
	var retry map[string]any
	if err := json.Unmarshal(shown.Job.Retry, &retry); err != nil || shown.Job.TimeoutMs == nil || *shown.Job.TimeoutMs != 300 ||
		!reflect.DeepEqual(retry, map[string]any{"base_ms": 1.0, "max_ms": 2.0, "jitter": 0.0}) {
		t.Fatalf("job show: timeout_ms %v, retry %s; want 300 and the backoff given", shown.Job.TimeoutMs, shown.Job.Retry)
	}
	if r := c.run("job", "show", fmt.Sprint(own)); r.code != 0 || !strings.Contains(r.stdout, "timeout:") ||
		!strings.Contains(r.stdout, "300ms") || !strings.Contains(r.stdout, "base 1ms, max 2ms, jitter 0") {
		t.Fatalf("job show: exit %d\n%s", r.code, r.stdout)
	}
	script := `[ "$FENCED_ATTEMPT" = 1 ] && exec sleep 60; exit 0`
	r := c.run("job", "work", "slow", "--timeout", "400ms", "--grace", "100ms", "--max-jobs", "4", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("job work: exit %d\nstderr: %s", r.code, r.stderr)
	}
	for id, want := range map[int64]string{own: "job timed out after 300ms", plain: "job timed out after 400ms"} {
		j := workedJob(c, id)
		if j.Job.State != "succeeded" || len(j.Attempts) != 2 || j.Attempts[0].Outcome != "retry" || j.Attempts[0].Error != want {
			t.Fatalf("job %d = %+v, attempts %+v; want a retry after %q, then a success", id, j.Job, j.Attempts, want)
		}
	}
	if r := c.run("job", "enqueue", "k", "--retry-jitter", "2"); r.code == 0 {
		t.Fatal("--retry-jitter 2 was accepted")
	}
	if r := c.run("job", "enqueue", "k", "--timeout", "-1s"); r.code == 0 {
		t.Fatal("--timeout -1s was accepted")
	}
}
