package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// workflowOut is a workflow reply.
type workflowOut struct {
	ID          int64                   `json:"id"`
	Name        string                  `json:"name"`
	State       fenced.WorkflowState    `json:"state"`
	Counts      map[fenced.JobState]int `json:"counts"`
	CreatedAt   time.Time               `json:"created_at"`
	CancelledAt *time.Time              `json:"cancelled_at"`
	Tasks       []fenced.WorkflowTask   `json:"tasks"`
}

// task is the workflow's task of that name.
func (w workflowOut) task(t *testing.T, name string) fenced.WorkflowTask {
	t.Helper()
	for _, x := range w.Tasks {
		if x.Name == name {
			return x
		}
	}
	t.Fatalf("workflow %d has no task %q: %+v", w.ID, name, w.Tasks)
	return fenced.WorkflowTask{}
}

// workflowsOut is a page of workflows.
type workflowsOut struct {
	Workflows  []workflowOut `json:"workflows"`
	NextAfter  *int64        `json:"next_after"`
	NextBefore *int64        `json:"next_before"`
}

// dependenciesOut is a task's dependencies.
type dependenciesOut struct {
	ID           int64                   `json:"id"`
	Dependencies []fenced.TaskDependency `json:"dependencies"`
}

// workflowDB is the backends the workflow tests run on: PostgreSQL, the
// one that implements workflows today (testdb.Postgres skips when it is
// unreachable, unless CI=true).
func workflowDB(t *testing.T, test func(t *testing.T, db newDB)) {
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		test(t, testdb.Postgres)
	})
}

func workflowPath(id int64, op string) string {
	if op == "" {
		return fmt.Sprintf("/v1/workflows/%d", id)
	}
	return fmt.Sprintf("/v1/workflows/%d/%s", id, op)
}

// etl is a workflow of three tasks in queue: extract, then transform and
// report (report runs anyway).
func etl(queue string) map[string]any {
	return map[string]any{"name": "etl", "tasks": []any{
		map[string]any{"name": "extract", "kind": "extract", "queue": queue, "args": map[string]any{"day": 1}},
		map[string]any{"name": "transform", "kind": "transform", "queue": queue, "depends_on": []string{"extract"},
			"priority": 3, "max_attempts": 2, "tags": []string{"etl"}, "timeout_ms": 60000, "metadata": map[string]any{"m": 1}},
		map[string]any{"name": "report", "kind": "report", "queue": queue, "depends_on": []string{"transform"}, "run_anyway": true},
	}}
}

func TestWorkflows(t *testing.T) {
	t.Parallel()
	workflowDB(t, func(t *testing.T, db newDB) {
		t.Run("EnqueueReadListAndRun", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			r := e.do("POST", "/v1/workflows", etl("etl"))
			if r.status != http.StatusCreated {
				t.Fatalf("enqueue = %d %s", r.status, r.raw)
			}
			var w workflowOut
			e.decode(r, &w)
			if r.header.Get("Location") != workflowPath(w.ID, "") {
				t.Errorf("Location = %q", r.header.Get("Location"))
			}
			if w.Name != "etl" || w.State != fenced.WorkflowRunning || len(w.Tasks) != 3 ||
				w.Counts[fenced.JobQueued] != 1 || w.Counts[fenced.JobPending] != 2 || w.CancelledAt != nil {
				t.Fatalf("enqueued = %s", r.raw)
			}
			ex, tr, rp := w.task(t, "extract"), w.task(t, "transform"), w.task(t, "report")
			if ex.State != fenced.JobQueued || tr.State != fenced.JobPending || strings.Join(tr.DependsOn, ",") != "extract" ||
				!rp.RunAnyway || ex.DependsOn == nil || ex.Queue != "etl" || ex.Kind != "extract" {
				t.Fatalf("tasks = %+v", w.Tasks)
			}
			var h historyOut
			e.decode(e.do("GET", fmt.Sprintf("/v1/jobs/%d", tr.JobID), nil), &h)
			if h.Job.WorkflowID != w.ID || h.Job.TaskName != "transform" || h.Job.State != fenced.JobPending ||
				h.Job.Priority != 3 || h.Job.MaxAttempts != 2 || len(h.Job.Tags) != 1 {
				t.Fatalf("the transform job = %+v", h.Job)
			}
			var pending struct{ Jobs []fenced.Job }
			e.decode(e.do("GET", "/v1/jobs?state=pending&queue=etl", nil), &pending)
			if len(pending.Jobs) != 2 {
				t.Fatalf("pending jobs = %+v", pending.Jobs)
			}

			var got workflowOut
			e.decode(e.do("GET", workflowPath(w.ID, ""), nil), &got)
			if got.ID != w.ID || len(got.Tasks) != 3 {
				t.Fatalf("get = %+v", got)
			}
			e.do("POST", "/v1/workflows", map[string]any{"name": "other", "tasks": []any{map[string]any{"name": "a", "kind": "a", "queue": "other"}}})
			var page workflowsOut
			e.decode(e.do("GET", "/v1/workflows?name=etl", nil), &page)
			if len(page.Workflows) != 1 || page.Workflows[0].ID != w.ID || page.Workflows[0].Tasks != nil || page.NextAfter != nil {
				t.Fatalf("list by name = %+v", page)
			}
			e.decode(e.do("GET", "/v1/workflows?limit=1", nil), &page)
			if len(page.Workflows) != 1 || page.NextAfter == nil || *page.NextAfter != w.ID {
				t.Fatalf("first page = %+v", page)
			}
			e.decode(e.do("GET", fmt.Sprintf("/v1/workflows?limit=1&after=%d", *page.NextAfter), nil), &page)
			if len(page.Workflows) != 1 || page.Workflows[0].Name != "other" {
				t.Fatalf("second page = %+v", page)
			}
			e.decode(e.do("GET", "/v1/workflows?order=desc&limit=1", nil), &page)
			if len(page.Workflows) != 1 || page.Workflows[0].Name != "other" || page.NextBefore == nil {
				t.Fatalf("newest first = %+v", page)
			}

			// extract runs and succeeds: transform is queued, and reads
			// extract's output as its dependency.
			var claimed claimOut
			e.decode(e.do("POST", "/v1/queues/etl/claim", map[string]any{"owner": "w"}), &claimed)
			if len(claimed.Jobs) != 1 || claimed.Jobs[0].ID != ex.JobID {
				t.Fatalf("claim = %+v", claimed.Jobs)
			}
			e.do("POST", jobPath(ex.JobID, "complete"), map[string]any{"fence": claimed.Jobs[0].Fence, "output": map[string]any{"rows": 7}})
			var deps dependenciesOut
			e.decode(e.do("GET", jobPath(tr.JobID, "dependencies"), nil), &deps)
			if deps.ID != tr.JobID || len(deps.Dependencies) != 1 {
				t.Fatalf("dependencies = %+v", deps)
			}
			if d := deps.Dependencies[0]; d.Name != "extract" || d.JobID != ex.JobID || d.State != fenced.JobSucceeded || string(d.Output) != `{"rows": 7}` && string(d.Output) != `{"rows":7}` {
				t.Fatalf("extract as a dependency = %+v (%s)", d, d.Output)
			}
			e.decode(e.do("GET", jobPath(ex.JobID, "dependencies"), nil), &deps)
			if deps.Dependencies == nil || len(deps.Dependencies) != 0 {
				t.Fatalf("a task without dependencies: %+v", deps)
			}
			e.decode(e.do("GET", workflowPath(w.ID, ""), nil), &got)
			if got.task(t, "transform").State != fenced.JobQueued {
				t.Fatalf("after extract: %+v", got.Tasks)
			}
		})

		t.Run("CancelRetryDelete", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			var w workflowOut
			e.decode(e.do("POST", "/v1/workflows", etl("cr")), &w)
			var c workflowOut
			e.decode(e.do("POST", workflowPath(w.ID, "cancel"), nil), &c)
			if c.State != fenced.WorkflowCancelled || c.CancelledAt == nil || c.Counts[fenced.JobCancelled] != 3 {
				t.Fatalf("cancelled = %+v", c)
			}
			e.decode(e.do("POST", workflowPath(w.ID, "retry"), map[string]any{}), &c)
			if c.State != fenced.WorkflowRunning || c.CancelledAt != nil || c.task(t, "extract").State != fenced.JobQueued {
				t.Fatalf("retried = %+v", c)
			}
			r := e.do("DELETE", workflowPath(w.ID, ""), nil)
			if r.status != http.StatusOK || r.body["deleted"] != true || num(r, "id") != w.ID {
				t.Fatalf("delete = %d %s", r.status, r.raw)
			}
			for _, p := range []string{workflowPath(w.ID, ""), fmt.Sprintf("/v1/jobs/%d", w.Tasks[0].JobID)} {
				if r := e.do("GET", p, nil); r.status != http.StatusNotFound {
					t.Fatalf("GET %s after the delete = %d %s", p, r.status, r.raw)
				}
			}
		})

		t.Run("NotFound", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			for _, c := range []struct{ method, path string }{
				{"GET", workflowPath(999999, "")},
				{"POST", workflowPath(999999, "cancel")},
				{"POST", workflowPath(999999, "retry")},
				{"DELETE", workflowPath(999999, "")},
				{"GET", jobPath(999999, "dependencies")},
			} {
				r := e.do(c.method, c.path, nil)
				if r.status != http.StatusNotFound || r.body["error"] != codeNotFound || r.body["db_time"] == nil {
					t.Errorf("%s %s = %d %s", c.method, c.path, r.status, r.raw)
				}
			}
			if r := e.do("POST", jobPath(999999, "tasks"), map[string]any{"fence": 1, "tasks": []any{map[string]any{"name": "a", "kind": "a"}}}); r.status != http.StatusNotFound {
				t.Errorf("tasks of no job = %d %s", r.status, r.raw)
			}
			if r := e.do("GET", "/v1/workflows/999999", nil); !strings.Contains(r.body["message"].(string), "workflow 999999") {
				t.Errorf("not found names %s", r.raw)
			}
		})

		t.Run("BadInput", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			task := func(kv ...any) map[string]any {
				m := map[string]any{"name": "a", "kind": "k"}
				for i := 0; i+1 < len(kv); i += 2 {
					m[kv[i].(string)] = kv[i+1]
				}
				return m
			}
			wf := func(tasks ...any) map[string]any { return map[string]any{"name": "w", "tasks": tasks} }
			for what, c := range map[string]struct {
				body  any
				field string
			}{
				"no name":                 {map[string]any{"tasks": []any{task()}}, "name"},
				"a name too long":         {map[string]any{"name": strings.Repeat("n", 201), "tasks": []any{task()}}, "name"},
				"no tasks":                {map[string]any{"name": "w"}, "tasks"},
				"empty tasks":             {wf(), "tasks"},
				"tasks not a list":        {map[string]any{"name": "w", "tasks": "a"}, "tasks"},
				"a task not an object":    {wf("a"), "tasks[0]"},
				"an unknown field":        {map[string]any{"name": "w", "tasks": []any{task()}, "color": 1}, "color"},
				"a task's unknown field":  {wf(task("color", 1)), "tasks[0].color"},
				"a task's field in caps":  {wf(task("KIND", "x")), "tasks[0].KIND"},
				"an idempotency key":      {wf(task("idempotency_key", "x")), "tasks[0].idempotency_key"},
				"a sequence key":          {wf(task("sequence_key", "x")), "tasks[0].sequence_key"},
				"unique options":          {wf(task("unique", map[string]any{})), "tasks[0].unique"},
				"a bad run_at":            {wf(task("run_at", "tomorrow")), "tasks[0].run_at"},
				"run_at and delay_ms":     {wf(task("run_at", "2030-01-01T00:00:00Z", "delay_ms", 5)), "tasks[0].run_at"},
				"a negative timeout":      {wf(task("timeout_ms", -1)), "tasks[0].timeout_ms"},
				"a bad retry jitter":      {wf(task("retry", map[string]any{"jitter": 2})), "tasks[0].retry.jitter"},
				"a priority not a number": {wf(task("priority", "high")), "tasks[0].priority"},
				"a key given twice":       {`{"name":"w","tasks":[{"name":"a","kind":"k","kind":"j"}]}`, "tasks"},
				"no task name":            {wf(map[string]any{"kind": "k"}), "tasks"},
				"no kind":                 {wf(map[string]any{"name": "a"}), "tasks"},
				"a task name twice":       {wf(task(), task()), "tasks"},
				"a dependency on nothing": {wf(task("depends_on", []string{"b"})), "tasks"},
				"a dependency twice":      {wf(task(), task("name", "b", "depends_on", []string{"a", "a"})), "tasks"},
				"a self-dependency":       {wf(task("depends_on", []string{"a"})), "tasks"},
				"a cycle": {wf(task("depends_on", []string{"c"}), task("name", "b", "depends_on", []string{"a"}),
					task("name", "c", "depends_on", []string{"b"})), "tasks"},
				"a bad queue": {wf(task("queue", "-q")), "tasks"},
			} {
				r := e.do("POST", "/v1/workflows", c.body)
				if r.status != http.StatusBadRequest || r.body["error"] != codeInvalid || r.body["field"] != c.field {
					t.Errorf("%s: %d %s, want 400 on field %s", what, r.status, r.raw, c.field)
				}
			}
			many := make([]any, fenced.MaxWorkflowTasks+1)
			for i := range many {
				many[i] = map[string]any{}
			}
			if r := e.do("POST", "/v1/workflows", map[string]any{"name": "w", "tasks": many}); r.status != http.StatusBadRequest || r.body["field"] != "tasks" {
				t.Errorf("too many tasks: %d %s", r.status, r.raw)
			}
			var page workflowsOut
			e.decode(e.do("GET", "/v1/workflows", nil), &page)
			if len(page.Workflows) != 0 {
				t.Fatalf("a refused enqueue wrote %+v", page.Workflows)
			}
			for q, field := range map[string]string{
				"color=red": "color", "name=": "name", "limit=0": "limit", "limit=1001": "limit", "limit=x": "limit",
				"after=-1": "after/before", "order=up": "order", "name=a&name=b": "name", "a=%zz": "query",
			} {
				r := e.do("GET", "/v1/workflows?"+q, nil)
				if r.status != http.StatusBadRequest || r.body["field"] != field {
					t.Errorf("GET /v1/workflows?%s = %d %s, want 400 on %s", q, r.status, r.raw, field)
				}
			}
			for _, p := range []string{"/v1/workflows/x", "/v1/workflows/0", "/v1/workflows/x/cancel", "/v1/jobs/x/dependencies"} {
				method := "GET"
				if strings.HasSuffix(p, "/cancel") {
					method = "POST"
				}
				if r := e.do(method, p, nil); r.status != http.StatusBadRequest || r.body["field"] != "id" {
					t.Errorf("%s %s = %d %s", method, p, r.status, r.raw)
				}
			}
			if r := e.do("GET", "/v1/workflows/1?x=1", nil); r.status != http.StatusBadRequest {
				t.Errorf("a query on GET /v1/workflows/1 = %d %s", r.status, r.raw)
			}
			if r := e.do("POST", "/v1/workflows/1/cancel", map[string]any{"force": true}); r.status != http.StatusBadRequest || r.body["field"] != "force" {
				t.Errorf("a cancel with a field = %d %s", r.status, r.raw)
			}
			// A fan-out: without a fence, with a job that is no task.
			j := num(e.do("POST", "/v1/jobs", map[string]any{"kind": "k", "queue": "plain"}), "id")
			var claimed claimOut
			e.decode(e.do("POST", "/v1/queues/plain/claim", map[string]any{"owner": "w"}), &claimed)
			if r := e.do("POST", jobPath(j, "tasks"), map[string]any{"tasks": []any{task()}}); r.status != http.StatusBadRequest || r.body["field"] != "fence" {
				t.Errorf("tasks without a fence = %d %s", r.status, r.raw)
			}
			if r := e.do("POST", jobPath(j, "tasks"), map[string]any{"fence": claimed.Jobs[0].Fence}); r.status != http.StatusBadRequest || r.body["field"] != "tasks" {
				t.Errorf("a fan-out of no tasks = %d %s", r.status, r.raw)
			}
			if r := e.do("POST", jobPath(j, "tasks"), map[string]any{"fence": claimed.Jobs[0].Fence, "tasks": []any{task()}}); r.status != http.StatusBadRequest || r.body["field"] != "id" {
				t.Errorf("a fan-out of a job that is no task = %d %s", r.status, r.raw)
			}
		})

		t.Run("FanOutAndStaleFanOut", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			var w workflowOut
			e.decode(e.do("POST", "/v1/workflows", map[string]any{"name": "fan", "tasks": []any{
				map[string]any{"name": "split", "kind": "split", "queue": "fan"},
			}}), &w)
			split := w.task(t, "split").JobID
			var claimed claimOut
			e.decode(e.do("POST", "/v1/queues/fan/claim", map[string]any{"owner": "A", "lease_ms": 30}), &claimed)
			af := claimed.Jobs[0].Fence
			add := func(fence int64, names ...string) response {
				var tasks []any
				for _, n := range names {
					tasks = append(tasks, map[string]any{"name": n, "kind": "part", "queue": "parts", "depends_on": []string{"split"}})
				}
				return e.do("POST", jobPath(split, "tasks"), map[string]any{"fence": fence, "tasks": tasks})
			}
			// A's lease runs out and recovery takes the job back; B claims it.
			waitFor(t, "A's attempt to be recovered", func() bool {
				n, err := e.c.RecoverJobs(context.Background(), nil, 10, fenced.Backoff{Base: time.Millisecond, Max: time.Millisecond, Jitter: -1})
				return err == nil && n == 1
			})
			r := add(af, "part-1")
			if r.status != http.StatusConflict || r.body["error"] != codeStaleFence || r.body["reason"] == nil || num(r, "your_fence") != af {
				t.Fatalf("A's fan-out after the recovery = %d %s", r.status, r.raw)
			}
			var bf int64
			waitFor(t, "B's claim", func() bool {
				e.decode(e.do("POST", "/v1/queues/fan/claim", map[string]any{"owner": "B", "lease_ms": 60000}), &claimed)
				if len(claimed.Jobs) == 1 {
					bf = claimed.Jobs[0].Fence
				}
				return len(claimed.Jobs) == 1
			})
			if r := add(af, "part-1"); r.status != http.StatusConflict || r.body["reason"] != string(fenced.ReasonSuperseded) {
				t.Fatalf("A's fan-out after B's claim = %d %s", r.status, r.raw)
			}
			var got workflowOut
			e.decode(e.do("GET", workflowPath(w.ID, ""), nil), &got)
			if len(got.Tasks) != 1 {
				t.Fatalf("a stale fan-out added tasks: %+v", got.Tasks)
			}
			r = add(bf, "part-1", "part-2")
			if r.status != http.StatusOK {
				t.Fatalf("B's fan-out = %d %s", r.status, r.raw)
			}
			e.decode(r, &got)
			if len(got.Tasks) != 3 || got.task(t, "part-1").State != fenced.JobPending {
				t.Fatalf("after B's fan-out: %+v", got.Tasks)
			}
			if r := add(bf, "part-1"); r.status != http.StatusBadRequest || r.body["field"] != "tasks" {
				t.Fatalf("a task name the workflow has = %d %s", r.status, r.raw)
			}
			e.do("POST", jobPath(split, "complete"), map[string]any{"fence": bf})
			if r := add(bf, "part-3"); r.status != http.StatusConflict || r.body["error"] != codeStaleFence {
				t.Fatalf("a fan-out after the completion = %d %s", r.status, r.raw)
			}
			e.decode(e.do("GET", workflowPath(w.ID, ""), nil), &got)
			if len(got.Tasks) != 3 || got.task(t, "part-2").State != fenced.JobQueued {
				t.Fatalf("after split completed: %+v", got.Tasks)
			}
		})
	})
}

// TestWorkflowRoutesNotSupported: on a backend without workflows every
// workflow route answers 501 not_supported, whatever the request.
func TestWorkflowRoutesNotSupported(t *testing.T) {
	t.Parallel()
	e := setup(t, testdb.SQLite(t), Config{})
	if e.c.Unsupported(fenced.CapWorkflows) == nil {
		t.Skip("SQLite implements workflows")
	}
	for _, rt := range apiRoutes {
		if rt.needs != fenced.CapWorkflows {
			continue
		}
		method, path, _ := strings.Cut(rt.pattern, " ")
		path = strings.ReplaceAll(path, "{id}", "1")
		r, err := e.send(method, path, nil)
		if err != nil || r.status != http.StatusNotImplemented || r.body["error"] != codeNotSupported {
			t.Errorf("%s = %v %d %s", rt.pattern, err, r.status, r.raw)
		}
	}
}

// workflowSession is the workflow part of TestOpenAPISession: every
// workflow route's answers, validated against the document; on a backend
// without workflows, their 501s.
func workflowSession(t *testing.T, e *env, c *checker, obj func(kv ...any) map[string]any) {
	if e.c.Unsupported(fenced.CapWorkflows) != nil {
		for _, rt := range apiRoutes {
			if rt.needs == fenced.CapWorkflows {
				method, path, _ := strings.Cut(rt.pattern, " ")
				c.call(501, method, strings.ReplaceAll(path, "{id}", "1"), nil)
			}
		}
		return
	}
	task := func(name, queue string, deps ...string) map[string]any {
		return obj("name", name, "kind", name, "queue", queue, "depends_on", deps)
	}
	r := c.call(201, "POST", "/v1/workflows", obj("name", "session", "tasks", []any{task("a", "wfs"), task("b", "wfs", "a")}))
	var w workflowOut
	e.decode(r, &w)
	c.call(400, "POST", "/v1/workflows", obj("name", "cycle", "tasks", []any{task("a", "wfs", "b"), task("b", "wfs", "a")}))
	c.call(400, "POST", "/v1/workflows", obj("name", "bad", "tasks", []any{obj("name", "a", "kind", "k", "Kind", "j")}))
	c.call(200, "GET", "/v1/workflows", nil)
	c.call(200, "GET", "/v1/workflows?name=session&limit=1&order=desc", nil)
	c.call(400, "GET", "/v1/workflows?state=running", nil)
	c.call(200, "GET", workflowPath(w.ID, ""), nil)
	c.call(404, "GET", workflowPath(999999, ""), nil)
	a, b := w.task(t, "a").JobID, w.task(t, "b").JobID
	var claimed claimOut
	e.decode(c.call(200, "POST", "/v1/queues/wfs/claim", obj("owner", "w")), &claimed)
	if len(claimed.Jobs) != 1 || claimed.Jobs[0].ID != a {
		t.Fatalf("the workflow's claim = %+v", claimed.Jobs)
	}
	fence := claimed.Jobs[0].Fence
	c.call(200, "POST", jobPath(a, "tasks"), obj("fence", fence, "tasks", []any{task("c", "wfs", "a", "b")}))
	c.call(400, "POST", jobPath(a, "tasks"), obj("fence", fence, "tasks", []any{}))
	c.call(404, "POST", jobPath(999999, "tasks"), obj("fence", 1, "tasks", []any{task("x", "wfs")}))
	c.call(200, "GET", jobPath(b, "dependencies"), nil)
	c.call(200, "POST", jobPath(a, "complete"), obj("fence", fence, "output", obj("n", 1)))
	c.call(409, "POST", jobPath(a, "tasks"), obj("fence", fence, "tasks", []any{task("d", "wfs", "a")}))
	c.call(200, "GET", jobPath(b, "dependencies"), nil)
	c.call(404, "GET", jobPath(999999, "dependencies"), nil)
	c.call(200, "POST", workflowPath(w.ID, "cancel"), nil)
	c.call(200, "POST", workflowPath(w.ID, "retry"), obj())
	c.call(404, "POST", workflowPath(999999, "cancel"), nil)
	c.call(404, "POST", workflowPath(999999, "retry"), nil)
	c.call(200, "DELETE", workflowPath(w.ID, ""), nil)
	c.call(404, "DELETE", workflowPath(w.ID, ""), nil)
}
