package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
	"github.com/fenced/fenced/internal/test/testdb"
)

// workflowJSON is the --json form of a workflow.
type workflowJSON struct {
	ID          int64                 `json:"id"`
	Name        string                `json:"name"`
	State       string                `json:"state"`
	Counts      map[string]int        `json:"counts"`
	CreatedAt   time.Time             `json:"created_at"`
	CancelledAt *time.Time            `json:"cancelled_at"`
	Tasks       []fenced.WorkflowTask `json:"tasks"`
}

// taskID is the job id of the workflow's task name.
func (w workflowJSON) taskID(t *testing.T, name string) int64 {
	t.Helper()
	for _, x := range w.Tasks {
		if x.Name == name {
			return x.JobID
		}
	}
	t.Fatalf("workflow %d has no task %q: %+v", w.ID, name, w.Tasks)
	return 0
}

// etlFile is a workflow of three tasks in queue wf: extract, then load,
// then report, which runs anyway.
const etlFile = `{"name": "etl", "tasks": [
  {"name": "extract", "kind": "extract", "queue": "wf", "args": {"day": 1}},
  {"name": "load", "kind": "load", "queue": "wf", "depends_on": ["extract"], "priority": 2},
  {"name": "report", "kind": "report", "queue": "wf", "depends_on": ["load"], "run_anyway": true}]}`

// workflowCLI is a CLI on a fresh PostgreSQL database, the backend with
// workflows today (testdb.Postgres skips when it is unreachable, unless
// CI=true).
func workflowCLI(t *testing.T) cli {
	return newCLI(t, testdb.Postgres(t))
}

func TestWorkflowCommands(t *testing.T) {
	t.Parallel()
	c := workflowCLI(t)
	file := filepath.Join(t.TempDir(), "etl.json")
	if err := os.WriteFile(file, []byte(etlFile), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("EnqueueShowAndList", func(t *testing.T) {
		out := c.ok("workflow", "enqueue", "--file", file)
		contains(t, "enqueue", out, `enqueued workflow 1: "etl", 3 tasks (2 pending, 1 queued)`)
		contains(t, "enqueue", out, "DEPENDS_ON")
		var w workflowJSON
		c.json(&w, "workflow", "show", "1", "--json")
		if w.ID != 1 || w.Name != "etl" || w.State != "running" || len(w.Tasks) != 3 || w.Counts["pending"] != 2 || w.Counts["queued"] != 1 {
			t.Fatalf("show --json = %+v", w)
		}
		show := c.ok("workflow", "show", "1")
		for _, want := range []string{"state:        running", "tasks:        2 pending, 1 queued", "extract", "load (anyway)", "pending"} {
			contains(t, "show", show, want)
		}

		// A second, from stdin.
		cmd := c.command(context.Background(), "workflow", "enqueue", "--file", "-", "--json")
		cmd.Stdin = strings.NewReader(`{"name": "one", "tasks": [{"name": "a", "kind": "a", "queue": "other"}]}`)
		if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), `"name":"one"`) && !strings.Contains(string(out), `"name": "one"`) {
			t.Fatalf("enqueue --file -: %v %s", err, out)
		}

		var ws []workflowJSON
		c.json(&ws, "workflow", "ls", "--json")
		if len(ws) != 2 || ws[0].Name != "etl" || ws[1].Name != "one" || ws[0].Tasks != nil {
			t.Fatalf("ls --json = %+v", ws)
		}
		c.json(&ws, "workflow", "ls", "--name", "one", "--json")
		if len(ws) != 1 || ws[0].Name != "one" {
			t.Fatalf("ls --name one = %+v", ws)
		}
		c.json(&ws, "workflow", "ls", "--newest", "--limit", "1", "--json")
		if len(ws) != 1 || ws[0].Name != "one" {
			t.Fatalf("ls --newest --limit 1 = %+v", ws)
		}
		r := c.run("workflow", "ls", "--limit", "1")
		if r.code != 0 || !strings.Contains(r.stdout, "etl") || !strings.Contains(r.stderr, "--after 1") {
			t.Fatalf("ls --limit 1: %+v", r)
		}
		contains(t, "ls", c.ok("workflow", "ls"), "2 pending, 1 queued")

		// The tasks are jobs: pending ones listed by state, a task's job
		// showing its workflow and task name.
		var pending []jobOutput
		c.json(&pending, "job", "ls", "--state", "pending", "--json")
		if len(pending) != 2 {
			t.Fatalf("job ls --state pending = %+v", pending)
		}
		job := c.ok("job", "show", strconv.FormatInt(w.taskID(t, "load"), 10))
		contains(t, "job show", job, "workflow:")
		contains(t, "job show", job, "task:")
		contains(t, "job show", job, "load")
		var h struct {
			Job struct {
				WorkflowID int64  `json:"workflow_id"`
				TaskName   string `json:"task_name"`
			} `json:"job"`
		}
		c.json(&h, "job", "show", strconv.FormatInt(w.taskID(t, "load"), 10), "--json")
		if h.Job.WorkflowID != 1 || h.Job.TaskName != "load" {
			t.Fatalf("job show --json = %+v", h)
		}
		if out := c.ok("job", "show", "--json", strconv.FormatInt(w.taskID(t, "extract"), 10)); !strings.Contains(out, `"task_name":"extract"`) && !strings.Contains(out, `"task_name": "extract"`) {
			t.Fatalf("job show --json of extract: %s", out)
		}
		var counts []wire.QueueCounts
		c.json(&counts, "job", "counts", "--json")
		for _, q := range counts {
			if q.Queue == "wf" && (q.Pending != 2 || q.Queued != 1 || q.Total != 3) {
				t.Fatalf("counts of wf = %+v", q)
			}
		}
		contains(t, "counts", c.ok("job", "counts"), "PENDING")
	})

	t.Run("CancelRetryDelete", func(t *testing.T) {
		var w workflowJSON
		c.json(&w, "workflow", "enqueue", "--file", file, "--json")
		id := strconv.FormatInt(w.ID, 10)
		contains(t, "cancel", c.ok("workflow", "cancel", id), "cancelled workflow "+id+": cancelled (3 cancelled)")
		c.json(&w, "workflow", "show", id, "--json")
		if w.State != "cancelled" || w.CancelledAt == nil {
			t.Fatalf("after cancel: %+v", w)
		}
		var retried workflowJSON
		c.json(&retried, "workflow", "retry", id, "--json")
		if retried.State != "running" || retried.CancelledAt != nil || retried.Counts["queued"] != 1 {
			t.Fatalf("retry --json = %+v", retried)
		}
		contains(t, "delete", c.ok("workflow", "delete", id), "deleted workflow "+id)
		c.fails(5, "workflow", "show", id)
		c.fails(5, "job", "show", strconv.FormatInt(w.Tasks[0].JobID, 10))
	})

	t.Run("Refusals", func(t *testing.T) {
		for _, op := range [][]string{{"show"}, {"cancel"}, {"retry"}, {"delete"}} {
			contains(t, op[0], c.fails(5, append([]string{"workflow"}, append(op, "999999")...)...).stderr, "workflow 999999 not found")
			c.fails(2, append([]string{"workflow"}, append(op, "x")...)...)
			c.fails(2, append([]string{"workflow"}, append(op, "0")...)...)
		}
		c.fails(2, "workflow", "enqueue")
		c.fails(2, "workflow", "enqueue", "--file", filepath.Join(t.TempDir(), "missing.json"))
		c.fails(2, "workflow", "ls", "--limit", "0")
		c.fails(2, "workflow", "ls", "--name", "")
		c.fails(2, "workflow", "ls", "--after", "3", "--newest")
		c.fails(2, "workflow", "show")
		for body, want := range map[string]string{
			`{"name": "c", "tasks": [{"name": "a", "kind": "a", "depends_on": ["b"]}, {"name": "b", "kind": "b", "depends_on": ["a"]}]}`: "cycle",
			`{"name": "c", "tasks": [{"name": "a", "kind": "a", "depends_on": ["z"]}]}`:                                                  "no task of the workflow",
			`{"name": "c", "tasks": [{"name": "a", "kind": "a", "idempotency_key": "k"}]}`:                                               "idempotency_key",
			`{"name": "c", "tasks": [{"name": "a", "Kind": "a"}]}`:                                                                       `unknown field "Kind"`,
			`{"name": "c", "tasks": []}`:                          "at least one task",
			`{"name": "", "tasks": [{"name": "a", "kind": "a"}]}`: "name",
			`[1]`:          "JSON object",
			`{"name": "c"`: "cut short",
		} {
			f := filepath.Join(t.TempDir(), "w.json")
			if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			contains(t, body, c.fails(2, "workflow", "enqueue", "--file", f).stderr, want)
		}
		var ws []workflowJSON
		c.json(&ws, "workflow", "ls", "--name", "c", "--json")
		if len(ws) != 0 {
			t.Fatalf("a refused enqueue wrote %+v", ws)
		}
	})
}

// TestWorkflowCommandsWithoutWorkflows: on a backend without workflows the
// commands exit 1 with the backend's refusal, and change nothing.
func TestWorkflowCommandsWithoutWorkflows(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	c.ok("migrate")
	lib := library(t, c)
	if lib.Unsupported(fenced.CapWorkflows) == nil {
		t.Skip("SQLite implements workflows")
	}
	file := filepath.Join(t.TempDir(), "etl.json")
	if err := os.WriteFile(file, []byte(etlFile), 0o600); err != nil {
		t.Fatal(err)
	}
	contains(t, "enqueue", c.fails(1, "workflow", "enqueue", "--file", file).stderr, "workflows")
	c.fails(1, "workflow", "ls")
	c.fails(1, "workflow", "show", "1")
}
