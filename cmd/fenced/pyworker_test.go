package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/testdb"
)

// The Python worker of examples/python against a real "fenced serve": it
// works echo jobs to succeeded, heartbeating through handlers that run
// longer than their lease, and its completion after a takeover is refused
// with 409 stale_fence.

// python3 finds the interpreter: the test is skipped without one, except
// under CI=true where that fails it.
func python3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is required under CI=true: %v", err)
		}
		t.Skipf("python3 not found: %v", err)
	}
	return py
}

// pyWorker runs examples/python/worker.py with args against s and returns
// its stdout; it must exit 0 within a minute.
func pyWorker(t *testing.T, s *served, args ...string) string {
	t.Helper()
	py := python3(t)
	script, err := filepath.Abs(filepath.Join("..", "..", "examples", "python", "worker.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{script, "--url", s.base}, args...)...)
	cmd.Dir = t.TempDir() // no __pycache__ next to the script
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "FENCED_TOKEN=", "FENCED_URL=")
	var stderr syncBuf
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("worker.py %s: %v\nstdout: %s\nstderr: %s\nserver: %s",
			strings.Join(args, " "), err, out, stderr.String(), s.stderr)
	}
	return string(out)
}

// lastJSON decodes the last line of out into v.
func lastJSON(t *testing.T, out string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("worker output %q: %v", out, err)
	}
}

func TestPythonWorker(t *testing.T) {
	t.Parallel()
	python3(t)
	c := newCLI(t, testdb.SQLite(t))
	s := c.serve()

	// Echo jobs: each runs 3.1s under a 1.5s lease, so each lives only by
	// the worker's heartbeats (the server's maintenance recovers expired
	// work every second). The heartbeats come every 0.5s, so a loaded
	// machine may delay one by up to a second before the job is lost.
	const n = 4
	ids := make([]any, n)
	args := make([]map[string]any, n)
	for i := range n {
		args[i] = map[string]any{"i": float64(i), "text": fmt.Sprintf("job %d", i)}
		body, _ := json.Marshal(map[string]any{"kind": "echo", "queue": "py", "args": args[i]})
		ids[i] = s.want(201, "POST", "/v1/jobs", string(body))["id"]
	}
	out := pyWorker(t, s, "--queue", "py", "--kind", "echo", "--max-jobs", fmt.Sprint(n),
		"--lease-ms", "1500", "--sleep-ms", "3100", "--owner", "py-test")
	var counts map[string]float64
	lastJSON(t, out, &counts)
	if want := map[string]float64{"completed": n, "failed": 0, "stale": 0}; !reflect.DeepEqual(counts, want) {
		t.Fatalf("worker counts = %v, want %v", counts, want)
	}
	for i, id := range ids {
		got := s.want(200, "GET", fmt.Sprintf("/v1/jobs/%v", id), "")
		j := got["job"].(map[string]any)
		if j["state"] != "succeeded" || j["attempt"] != 1.0 || j["fence"] != 1.0 || j["owner"] != "py-test" {
			t.Fatalf("job %v = %v, want succeeded on its first attempt by py-test", id, j)
		}
		if !reflect.DeepEqual(j["output"], any(args[i])) {
			t.Fatalf("job %v output = %v, want its args %v", id, j["output"], args[i])
		}
	}

	// The stale path: w1 claims with a 200ms lease and stalls, recovery
	// takes the job back, w2 claims it with the next fence; w1's completion
	// is refused with 409 stale_fence naming both fences, and w2's stands.
	out = pyWorker(t, s, "--demo-stale", "--queue", "stale")
	var demo struct {
		JobID        int64          `json:"job_id"`
		FirstFence   int64          `json:"first_fence"`
		SecondFence  int64          `json:"second_fence"`
		Stale        bool           `json:"stale"`
		Status       int            `json:"status"`
		Error        string         `json:"error"`
		YourFence    int64          `json:"your_fence"`
		CurrentFence int64          `json:"current_fence"`
		CurrentOwner string         `json:"current_owner"`
		FinalState   string         `json:"final_state"`
		FinalOutput  map[string]any `json:"final_output"`
	}
	lastJSON(t, out, &demo)
	if !demo.Stale || demo.Status != 409 || demo.Error != "stale_fence" {
		t.Fatalf("w1's late completion was not refused as stale: %s", out)
	}
	if demo.YourFence != demo.FirstFence || demo.CurrentFence != demo.FirstFence+1 ||
		demo.SecondFence != demo.CurrentFence || demo.CurrentOwner != "w2" {
		t.Fatalf("stale_fence details: %s; want your_fence = first, current_fence = first+1 = second, owner w2", out)
	}
	if demo.FinalState != "succeeded" || demo.FinalOutput["by"] != "w2" {
		t.Fatalf("after the stale completion: %s; want succeeded with w2's output", out)
	}
	got := s.want(200, "GET", fmt.Sprintf("/v1/jobs/%d", demo.JobID), "")
	if j := got["job"].(map[string]any); j["state"] != "succeeded" || j["fence"] != float64(demo.SecondFence) ||
		!reflect.DeepEqual(j["output"], any(map[string]any{"by": "w2"})) {
		t.Fatalf("demo job = %v", j)
	}
	s.stop()
}
