package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/testdb"
)

// The Worker of the Python client package (clients/python) against a real
// "fenced serve", driven by testdata/driven_worker.py: it outlives a
// restart of its server, a stop with a deadline gives back the attempts
// still running past it, and a handler's result that is not JSON fails its
// attempt at once.

// drivenWorker starts testdata/driven_worker.py on queue of the server at
// base, with attempts leased leaseMs, and returns it and its control
// directory.
func drivenWorker(t *testing.T, base, queue string, leaseMs int) (*pyProc, string) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "driven_worker.py"))
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := filepath.Abs(filepath.Join("..", "..", "clients", "python"))
	if err != nil {
		t.Fatal(err)
	}
	control := t.TempDir()
	return startPython(t, []string{"PYTHONPATH=" + pkg}, script, base, queue, control, fmt.Sprint(leaseMs)), control
}

// touch writes name in dir with text.
func touch(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stopDriven stops the driven worker with the stop file's timeout (""
// for none) and returns its counts, once it exited 0.
func stopDriven(t *testing.T, p *pyProc, control, timeout string) map[string]any {
	t.Helper()
	touch(t, control, "stop", timeout)
	if code := p.wait(t); code != 0 {
		t.Fatalf("driven worker: exit %d\nstdout: %s\nstderr: %s", code, p.stdout, p.stderr)
	}
	var counts map[string]any
	lastJSON(t, p.stdout.String(), &counts)
	return counts
}

// enqueueJob enqueues body on s and returns the job's id.
func enqueueJob(s *served, body string) int64 {
	s.t.Helper()
	return int64(s.want(201, "POST", "/v1/jobs", body)["id"].(float64))
}

// waitJob polls job id on s until cond holds of the job and its attempts,
// and returns them; it fails after a minute, with the worker's log.
func waitJob(t *testing.T, s *served, p *pyProc, id int64, what string, cond func(job map[string]any, attempts []any) bool) (map[string]any, []any) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := s.want(200, "GET", fmt.Sprintf("/v1/jobs/%d", id), "")
		job, attempts := got["job"].(map[string]any), got["attempts"].([]any)
		if cond(job, attempts) {
			return job, attempts
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d: not %s within a minute: %v %v\nworker stdout: %s\nworker stderr: %s", id, what, job, attempts, p.stdout, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLog waits until the worker's log says want.
func waitLog(t *testing.T, p *pyProc, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(p.stderr.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker's log never said %q:\n%s", want, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// claimsWaiting is how many long-polling claims s is holding now, by its
// metrics.
func claimsWaiting(t *testing.T, s *served) float64 {
	t.Helper()
	res, err := http.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "fenced_job_claims_waiting") {
			var v float64
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			n += v
		}
	}
	return n
}

func TestPythonWorkerSurvivesAServerRestart(t *testing.T) {
	t.Parallel()
	python3(t)
	c := newCLI(t, testdb.SQLite(t))
	s := c.serve()
	addr := strings.TrimPrefix(s.base, "http://")
	p, control := drivenWorker(t, s.base, "py", 20000)

	first := enqueueJob(s, `{"kind": "echo", "queue": "py", "args": {"n": 1}}`)
	waitJob(t, s, p, first, "succeeded", func(j map[string]any, _ []any) bool { return j["state"] == "succeeded" })
	gate := enqueueJob(s, `{"kind": "gate", "queue": "py", "args": {"gate": "a"}}`)
	waitJob(t, s, p, gate, "running", func(j map[string]any, _ []any) bool { return j["state"] == "running" })

	// The server is killed under the worker's long-polling claim; while it
	// is down, the gate's handler returns, so its completion finds no
	// server either.
	waitFor(t, "the worker's claim to long-poll", func() bool { return claimsWaiting(t, s) >= 1 })
	s.signal(syscall.SIGKILL)
	<-s.done
	touch(t, control, "open-a", "")
	waitLog(t, p, "claim from py failed, retrying")
	waitLog(t, p, fmt.Sprintf("job %d: writing its completion failed, retrying", gate))

	s = c.serve("--addr", addr)
	j, attempts := waitJob(t, s, p, gate, "succeeded", func(j map[string]any, _ []any) bool { return j["state"] == "succeeded" })
	if j["attempt"] != 1.0 || len(attempts) != 1 || !reflect.DeepEqual(j["output"], map[string]any{"gate": "a"}) {
		t.Fatalf("the gate job = %v %v, want succeeded by its first attempt, its completion sent again after the restart", j, attempts)
	}
	// And the worker goes on claiming.
	after := enqueueJob(s, `{"kind": "echo", "queue": "py", "args": {"n": 2}}`)
	waitJob(t, s, p, after, "succeeded", func(j map[string]any, _ []any) bool { return j["state"] == "succeeded" })
	counts := stopDriven(t, p, control, "")
	for k, want := range map[string]float64{"claimed": 3, "completed": 3, "errors": 0, "stale": 0} {
		if counts[k] != want {
			t.Fatalf("worker counts = %v, want %s %v\nstderr: %s", counts, k, want, p.stderr)
		}
	}
	s.stop()
}

func TestPythonWorkerStopCancelsHandlersPastItsDeadline(t *testing.T) {
	t.Parallel()
	python3(t)
	s := newCLI(t, testdb.SQLite(t)).serve()
	p, control := drivenWorker(t, s.base, "py", 30000)
	id := enqueueJob(s, `{"kind": "forever", "queue": "py", "args": {}, "max_attempts": 1}`)
	waitJob(t, s, p, id, "running", func(j map[string]any, _ []any) bool { return j["state"] == "running" })

	// Its handler never returns: a second after stop, the worker cancels
	// it (the handler sees stopped, reason stopping), gives the attempt
	// back and returns. The claim in flight at the stop may take the job
	// again once it was given back: it gives that attempt back too.
	counts := stopDriven(t, p, control, "1")
	if counts["released"] == 0.0 || counts["released"] != counts["claimed"] || counts["run_returned"] != true ||
		counts["errors"] != 0.0 || counts["completed"] != 0.0 || counts["failed"] != 0.0 {
		t.Fatalf("worker counts = %v, want every attempt released and run() returned\nstderr: %s", counts, p.stderr)
	}
	if !strings.Contains(p.stdout.String(), "stopped stopping\n") {
		t.Fatalf("the handler never saw its attempt stopped for the stop: %s", p.stdout)
	}
	j, attempts := waitJob(t, s, p, id, "given back", func(j map[string]any, _ []any) bool { return j["state"] == "queued" })
	for _, a := range attempts {
		if a.(map[string]any)["outcome"] != "snoozed" {
			t.Fatalf("the job after the stop = %v %v, want queued, each attempt snoozed", j, attempts)
		}
	}
	if n := float64(len(attempts)); n != counts["claimed"] || j["max_attempts"] != n+1 {
		t.Fatalf("the job after the stop = %v %v, want %v attempts, none counted", j, attempts, counts["claimed"])
	}
	claimed := s.want(200, "POST", "/v1/queues/py/claim", `{"owner": "next", "lease_ms": 30000}`)["jobs"].([]any)
	if len(claimed) != 1 || claimed[0].(map[string]any)["id"] != float64(id) || claimed[0].(map[string]any)["fence"] != float64(len(attempts)+1) {
		t.Fatalf("claim after the stop = %v, want job %d with the next fence", claimed, id)
	}
	s.stop()
}

func TestPythonWorkerFailsAResultThatIsNotJSONAtOnce(t *testing.T) {
	t.Parallel()
	python3(t)
	s := newCLI(t, testdb.SQLite(t)).serve()
	// A lease of 10 minutes: the attempt could only end by the worker's
	// own failure within the test's minute.
	p, control := drivenWorker(t, s.base, "py", 600000)
	for what, says := range map[string]string{
		"set": "TypeError: Object of type set is not JSON serializable",
		"nan": "ValueError: Out of range float values are not JSON compliant",
	} {
		id := enqueueJob(s, fmt.Sprintf(`{"kind": "notjson", "queue": "py", "args": {"what": %q}, "max_attempts": 3}`, what))
		j, attempts := waitJob(t, s, p, id, "failed", func(j map[string]any, _ []any) bool { return j["state"] == "failed" })
		a := attempts[0].(map[string]any)
		if j["attempt"] != 1.0 || len(attempts) != 1 || a["outcome"] != "failed" ||
			!strings.Contains(a["error"].(string), "the handler's return value is not JSON: "+says) {
			t.Fatalf("%s: the job = %v %v, want its first attempt failed for good, saying %q", what, j, attempts, says)
		}
	}
	counts := stopDriven(t, p, control, "")
	if counts["failed"] != 2.0 || counts["errors"] != 0.0 {
		t.Fatalf("worker counts = %v, want 2 failed, no errors", counts)
	}
	s.stop()
}
