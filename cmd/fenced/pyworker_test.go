package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

// The Python worker of examples/python, on the fenced_client package of
// clients/python (found in the checkout, not installed), against a real
// "fenced serve": it
// works echo jobs to succeeded, heartbeating through handlers that run
// longer than their lease, and claims no job of another kind; its
// completion after a takeover is refused with 409 stale_fence, on a queue
// of its own that it leaves with nothing queued or running; against a
// server that wants a token it does not have, it exits 1 saying so.

// workerScript is the absolute path of examples/python/worker.py.
func workerScript(t *testing.T) string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "examples", "python", "worker.py"))
	if err != nil {
		t.Fatal(err)
	}
	return script
}

// pyWorker runs examples/python/worker.py with args against s and returns
// its stdout; it must exit 0 within a minute.
func pyWorker(t *testing.T, s *served, args ...string) string {
	t.Helper()
	r := runPython(t, nil, append([]string{workerScript(t), "--url", s.base}, args...)...)
	if r.code != 0 {
		t.Fatalf("worker.py %s: exit %d\nstdout: %s\nstderr: %s\nserver: %s",
			strings.Join(args, " "), r.code, r.stdout, r.stderr, s.stderr)
	}
	return r.stdout
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

	// Jobs of other kinds, ahead of the echo jobs in claim order: the
	// worker runs only echo, so it must leave them queued, never claimed.
	var others []any
	for _, kind := range []string{"invoice", "slow"} {
		body := fmt.Sprintf(`{"kind": %q, "queue": "py", "args": {}, "max_attempts": 1}`, kind)
		others = append(others, s.want(201, "POST", "/v1/jobs", body)["id"])
	}

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
	for _, id := range others {
		got := s.want(200, "GET", fmt.Sprintf("/v1/jobs/%v", id), "")
		j, attempts := got["job"].(map[string]any), got["attempts"].([]any)
		if j["state"] != "queued" || j["attempt"] != 0.0 || len(attempts) != 0 {
			t.Fatalf("job %v of kind %v = %v, attempts %v: want it queued, never claimed by the echo worker", id, j["kind"], j, attempts)
		}
	}

	// The stale path: w1 claims with a 200ms lease and stalls, recovery
	// takes the job back, w2 claims it with the next fence; w1's completion
	// is refused with 409 stale_fence naming both fences, and w2's stands.
	// The demo runs on a queue of its own: the jobs queued in py and in
	// default (where the README's walk-through leaves them) are untouched.
	waiting := s.want(201, "POST", "/v1/jobs", `{"kind": "echo", "args": {}}`)["id"]
	out = pyWorker(t, s, "--demo-stale")
	var demo struct {
		Queue        string         `json:"queue"`
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
	if !strings.HasPrefix(demo.Queue, "demo-stale-") {
		t.Fatalf("the demo ran on queue %q, want one of its own (demo-stale-…)", demo.Queue)
	}
	wantQueue(t, s, demo.Queue, "succeeded")
	for _, id := range append(others, waiting) {
		if j := s.want(200, "GET", fmt.Sprintf("/v1/jobs/%v", id), "")["job"].(map[string]any); j["state"] != "queued" || j["attempt"] != 0.0 {
			t.Fatalf("job %v in queue %v was touched by the demo: %v", id, j["queue"], j)
		}
	}
	if r := runPython(t, nil, workerScript(t), "--url", s.base, "--demo-stale", "--queue", "default"); r.code != 2 ||
		!strings.Contains(r.stderr, "queue of its own") {
		t.Fatalf("--demo-stale --queue: exit %d, stderr %s; want 2 saying the demo uses a queue of its own", r.code, r.stderr)
	}

	// A demo cut short (here: w2 gives up at once) cleans up: its job is
	// cancelled, not left queued or held under w1's 200ms lease.
	r := runPython(t, nil, "-c", `import sys; sys.path.insert(0, sys.argv[1]); import worker, fenced_client
try:
    worker.demo_stale(fenced_client.Client(sys.argv[2]), queue="demo-stale-cut", deadline_s=0)
except RuntimeError as e:
    print("cut short:", e)
`, filepath.Dir(workerScript(t)), s.base)
	if r.code != 0 || !strings.Contains(r.stdout, "cut short: w2 never got the job back") {
		t.Fatalf("demo cut short: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	wantQueue(t, s, "demo-stale-cut", "cancelled")
	s.stop()
}

// wantQueue checks that queue holds jobs, all in state.
func wantQueue(t *testing.T, s *served, queue, state string) {
	t.Helper()
	jobs := s.want(200, "GET", "/v1/jobs?queue="+queue, "")["jobs"].([]any)
	if len(jobs) == 0 {
		t.Fatalf("queue %s holds no jobs", queue)
	}
	for _, j := range jobs {
		if j := j.(map[string]any); j["state"] != state {
			t.Fatalf("job %v in queue %s is %v, want %s: %v", j["id"], queue, j["state"], state, j)
		}
	}
}

// Against a server that wants a token, the worker without one (or with a
// wrong one) exits 1 at once, saying what to do, instead of retrying the
// 401 for ever; with the right one it works.
func TestPythonWorkerToken(t *testing.T) {
	t.Parallel()
	python3(t)
	c := newCLI(t, testdb.SQLite(t))
	c.env = append(c.env, envTokens+"="+serveToken)
	s := c.serve()
	s.token = serveToken
	id := s.want(201, "POST", "/v1/jobs", `{"kind": "echo", "args": {"n": 1}}`)["id"]
	args := []string{workerScript(t), "--url", s.base, "--max-jobs", "1", "--wait-ms", "0"}
	for _, tc := range []struct{ token, says string }{
		{"", "set FENCED_TOKEN to one of the server's tokens"},
		{"wrong-token-0123456789", "FENCED_TOKEN is not one of the server's tokens"},
	} {
		r := runPython(t, []string{"FENCED_TOKEN=" + tc.token}, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "401 unauthorized") || !strings.Contains(r.stderr, tc.says) ||
			strings.Contains(r.stderr, "Traceback") || strings.Contains(r.stderr, "retrying") {
			t.Fatalf("token %q: exit %d\nstdout: %s\nstderr: %s\nwant exit 1 saying 401 unauthorized and %q", tc.token, r.code, r.stdout, r.stderr, tc.says)
		}
		if strings.Contains(r.stderr, serveToken) {
			t.Fatalf("the token is in the worker's message: %s", r.stderr)
		}
	}
	if j := s.want(200, "GET", fmt.Sprintf("/v1/jobs/%v", id), "")["job"].(map[string]any); j["state"] != "queued" {
		t.Fatalf("job = %v, want it untouched by the refused workers", j)
	}
	r := runPython(t, []string{"FENCED_TOKEN=" + serveToken}, args...)
	if r.code != 0 {
		t.Fatalf("with the token: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if j := s.want(200, "GET", fmt.Sprintf("/v1/jobs/%v", id), "")["job"].(map[string]any); j["state"] != "succeeded" {
		t.Fatalf("job = %v, want it worked with the token", j)
	}
	s.stop()
}
