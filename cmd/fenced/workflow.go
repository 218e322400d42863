package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/app/server"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/fenced/fenced/internal/lib/wire"
	"github.com/spf13/cobra"
)

func newWorkflowCmd(a *app) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "workflow",
		Short: "Enqueue, inspect, cancel, retry and delete workflows of jobs",
		Long: `A workflow is a set of named tasks, each a job, and for each the names of the
tasks it depends on: a task is pending until its dependencies finish, then
queued, and from there a job like any other (fenced job show ID). A task
whose dependency failed or was cancelled is cancelled with it, unless it
runs anyway. A running task may add tasks to its workflow, under its
attempt's fence (the HTTP service's POST /v1/jobs/{id}/tasks, or the
library's AddWorkflowTasks).

A workflow's state is derived from its tasks': running while any task is
not finished, then succeeded when every task succeeded, cancelled when it
was cancelled, else failed. A workflow that does not exist exits 5; on a
backend without workflows the commands exit 1.`,
	})
	cmd.AddCommand(
		newWorkflowEnqueueCmd(a),
		newWorkflowListCmd(a),
		newWorkflowShowCmd(a),
		newWorkflowCancelCmd(a),
		newWorkflowRetryCmd(a),
		newWorkflowDeleteCmd(a),
	)
	return cmd
}

func newWorkflowEnqueueCmd(a *app) *cobra.Command {
	var file string
	var p fenced.WorkflowParams
	cmd := callCmd[wire.Workflow]{
		check: func(cmd *cobra.Command, _ []string) (err error) {
			if !cmd.Flags().Changed("file") || file == "" {
				return usage("--file is required: the workflow as JSON, or - for stdin")
			}
			b, err := readJSONFile(cmd, "--file", file, server.DefaultMaxBody)
			if err != nil {
				return err
			}
			if len(b) > server.DefaultMaxBody {
				return invalid("file", "is over the limit of %d bytes", server.DefaultMaxBody)
			}
			p, err = server.DecodeWorkflow(b)
			return err
		},
		call: func(ctx context.Context, c *fenced.Client, _ []string) (wire.Workflow, error) {
			w, err := c.EnqueueWorkflow(ctx, nil, p)
			if err != nil {
				return wire.Workflow{}, err
			}
			return wire.WorkflowFrom(w, true), nil
		},
		text: func(w io.Writer, wf wire.Workflow) error {
			if _, err := fmt.Fprintf(w, "enqueued workflow %d: %s, %d tasks (%s)\n",
				wf.ID, display.Quote(wf.Name), len(wf.Tasks), countsText(wf.Counts)); err != nil {
				return err
			}
			return writeTaskTable(w, wf.Tasks)
		},
	}.build(a, &cobra.Command{
		Use:   "enqueue --file F.json",
		Short: "Add a workflow and its tasks, in one transaction",
		Long: `Add a workflow read from --file (- for stdin), the JSON the HTTP service's
POST /v1/workflows takes:

  {"name": "etl", "tasks": [
    {"name": "extract", "kind": "extract", "args": {"day": "2030-01-02"}},
    {"name": "load", "kind": "load", "depends_on": ["extract"]},
    {"name": "report", "kind": "report", "depends_on": ["load"], "run_anyway": true}]}

Each task has a name (distinct within the workflow), a kind, and as a job
may: args, queue, priority, run_at or delay_ms, max_attempts,
concurrency_key, metadata, tags, timeout_ms and retry ({base_ms, max_ms,
jitter}); depends_on names the tasks it runs after, and run_anyway lets it
run once they finished even if some failed. A task cannot have an
idempotency key, a sequence key or unique options.

The tasks must form a graph without cycles; anything invalid exits 2 and
nothing is written. It prints the workflow and its tasks.`,
		Example: `  fenced workflow enqueue --file etl.json
  jq -n '{name: "one", tasks: [{name: "a", kind: "a"}, {name: "b", kind: "b", depends_on: ["a"]}]}' | fenced workflow enqueue --file -
  fenced workflow enqueue --file etl.json --json | jq .id`,
		Args: exactArgs(),
	})
	cmd.Flags().StringVar(&file, "file", "", "read the workflow, as JSON, from this file (- for stdin)")
	return cmd
}

func newWorkflowListCmd(a *app) *cobra.Command {
	var f fenced.WorkflowFilter
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List workflows by id, a page at a time",
		Long: `List workflows in id order with their state and their tasks' counts by
state, at most --limit of them, after the id --after; with --newest, newest
first, before the id --before. --name keeps the workflows of that name. When
a page is full, the command to get the next one is printed to stderr.`,
		Example: `  fenced workflow ls
  fenced workflow ls --name nightly-etl --newest --limit 10
  fenced workflow ls --json | jq -r '.[] | select(.state == "failed") | .id'`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.Limit == 0 {
				return invalid("limit", "%d is outside 1 to %d", f.Limit, fenced.MaxListLimit)
			}
			if cmd.Flags().Changed("name") && f.Name == "" {
				return invalid("name", "must not be empty")
			}
			switch {
			case f.Desc && f.AfterID != 0:
				return usage("--after pages oldest first: with --newest, give --before")
			case !f.Desc && f.BeforeID != 0:
				return usage("--before pages newest first: give it with --newest")
			}
			c, err := a.openRead(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			ws, err := c.ListWorkflows(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), wire.Workflows(ws))
			}
			if err := writeWorkflowTable(cmd.OutOrStdout(), wire.Workflows(ws)); err != nil {
				return err
			}
			if len(ws) == f.Limit {
				next := "--after"
				if f.Desc {
					next = "--before"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "(more may follow: add %s %d)\n", next, ws[len(ws)-1].ID)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Name, "name", "", "only workflows of this name")
	fl.IntVar(&f.Limit, "limit", defaultListLimit, fmt.Sprintf("at most this many workflows (1 to %d)", fenced.MaxListLimit))
	fl.Int64Var(&f.AfterID, "after", 0, "only workflows with a greater id: the last id of the previous page")
	fl.BoolVar(&f.Desc, "newest", false, "newest first (id descending)")
	fl.Int64Var(&f.BeforeID, "before", 0, "with --newest: only workflows with a smaller id, the last id of the previous page")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newWorkflowShowCmd(a *app) *cobra.Command {
	var id int64
	return callCmd[wire.Workflow]{
		read: true,
		check: func(_ *cobra.Command, args []string) (err error) {
			id, err = parseWorkflowID(args[0])
			return err
		},
		call: func(ctx context.Context, c *fenced.Client, _ []string) (wire.Workflow, error) {
			w, err := c.GetWorkflow(ctx, id)
			if err != nil {
				return wire.Workflow{}, workflowNotFound(id, err)
			}
			return wire.WorkflowFrom(w, true), nil
		},
		text: writeWorkflow,
	}.build(a, &cobra.Command{
		Use:   "show ID",
		Short: "Show a workflow and its tasks",
		Long: `Show a workflow: its state, its tasks' counts by state, and each task with
its job id, state, kind, queue and the tasks it depends on ("anyway": it
runs even if some of them failed; "by workflow": it was cancelled because a
dependency failed or was cancelled). "fenced job show JOB" shows a task's
job and its attempts.`,
		Example: `  fenced workflow show 7
  fenced workflow show 7 --json | jq -r '.tasks[] | select(.state == "failed") | .job_id'`,
		Args: exactArgs("ID"),
	})
}

func newWorkflowCancelCmd(a *app) *cobra.Command {
	return workflowAdminCmd(a, (*fenced.Client).CancelWorkflow, "cancelled", &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a workflow: its waiting tasks at once, its running ones asked to stop",
		Long: `Cancel a workflow: its pending and queued tasks are cancelled at once, and
its running ones are asked to stop (their workers stop at their next
heartbeat and record them cancelled). Finished tasks are left as they are.
"fenced workflow retry" resumes it.`,
		Example: `  fenced workflow cancel 7`,
		Args:    exactArgs("ID"),
	})
}

func newWorkflowRetryCmd(a *app) *cobra.Command {
	return workflowAdminCmd(a, (*fenced.Client).RetryWorkflow, "retried", &cobra.Command{
		Use:   "retry ID",
		Short: "Queue a workflow's failed and cancelled tasks again",
		Long: `Resume a workflow: every failed task, and every cancelled one its workflow
did not cancel, is queued again, and the tasks the workflow cancelled after
them go back to pending, waiting for them again.`,
		Example: `  fenced workflow retry 7
  fenced workflow ls --json | jq -r '.[] | select(.state == "failed") | .id' | xargs -n1 fenced workflow retry`,
		Args: exactArgs("ID"),
	})
}

// workflowAdminCmd is cancel or retry: op on the workflow ID, printing
// what it did (done) and the workflow after it.
func workflowAdminCmd(a *app, op func(*fenced.Client, context.Context, int64) (*fenced.Workflow, error), done string, cmd *cobra.Command) *cobra.Command {
	var id int64
	return callCmd[wire.Workflow]{
		check: func(_ *cobra.Command, args []string) (err error) {
			id, err = parseWorkflowID(args[0])
			return err
		},
		call: func(ctx context.Context, c *fenced.Client, _ []string) (wire.Workflow, error) {
			w, err := op(c, ctx, id)
			if err != nil {
				return wire.Workflow{}, workflowNotFound(id, err)
			}
			return wire.WorkflowFrom(w, true), nil
		},
		text: func(w io.Writer, wf wire.Workflow) error {
			_, err := fmt.Fprintf(w, "%s workflow %d: %s (%s)\n", done, wf.ID, wf.State, countsText(wf.Counts))
			return err
		},
	}.build(a, cmd)
}

func newWorkflowDeleteCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a workflow whole: every task, in any state, with its history",
		Long: `Delete a workflow and every one of its tasks, in any state, with their
attempt histories (a single task is never deleted alone). A running task's
worker is not told: its next heartbeat, progress or end finds no job, so it
can write nothing more. To stop a workflow and keep its record, cancel it
instead.

A workflow that does not exist: exit 5.`,
		Example: `  fenced workflow delete 7`,
		Args:    exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseWorkflowID(args[0])
			if err != nil {
				return err
			}
			c, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			if err := c.DeleteWorkflow(cmd.Context(), id); err != nil {
				return workflowNotFound(id, err)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), struct {
					ID      int64 `json:"id"`
					Deleted bool  `json:"deleted"`
				}{id, true})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "deleted workflow %d\n", id)
			return err
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

// parseWorkflowID parses a workflow id argument.
func parseWorkflowID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, invalid("workflow id", "%q is not a positive integer", s)
	}
	return id, nil
}

// workflowNotFound names the workflow that was not found.
func workflowNotFound(id int64, err error) error {
	if errors.Is(err, fenced.ErrNotFound) {
		return fmt.Errorf("workflow %d %w", id, fenced.ErrNotFound)
	}
	return err
}

// jobStates are the job states in their order of a life: the order counts
// are printed in.
var jobStates = []fenced.JobState{fenced.JobPending, fenced.JobQueued, fenced.JobRunning,
	fenced.JobSucceeded, fenced.JobFailed, fenced.JobCancelled}

// countsText is a workflow's counts on one line: "1 pending, 2 queued".
func countsText(counts map[fenced.JobState]int) string {
	var parts []string
	for _, s := range jobStates {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	for s, n := range counts { // a state this build does not know, last
		if !slices.Contains(jobStates, s) && n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, display.Name(string(s))))
		}
	}
	if len(parts) == 0 {
		return "no tasks"
	}
	return strings.Join(parts, ", ")
}

// writeWorkflowTable prints workflows as a table with a header.
func writeWorkflowTable(w io.Writer, ws []wire.Workflow) error {
	rows := [][]string{{"ID", "NAME", "STATE", "TASKS", "CREATED_AT", "CANCELLED_AT"}}
	for _, wf := range ws {
		rows = append(rows, []string{fmt.Sprint(wf.ID), display.Name(wf.Name), string(wf.State), countsText(wf.Counts),
			fencedtype.FormatTime(timeOf(wf.CreatedAt)), dashIfEmpty(timeText(timePtr(wf.CancelledAt)))})
	}
	return display.Table{Rows: rows}.Write(w)
}

// writeWorkflow prints a workflow as "field: value" lines, a blank line,
// and its tasks.
func writeWorkflow(w io.Writer, wf wire.Workflow) error {
	fmt.Fprintf(w, "id:           %d\n", wf.ID)
	fmt.Fprintf(w, "name:         %s\n", display.Name(wf.Name))
	fmt.Fprintf(w, "state:        %s\n", wf.State)
	fmt.Fprintf(w, "tasks:        %s\n", countsText(wf.Counts))
	fmt.Fprintf(w, "created_at:   %s\n", fencedtype.FormatTime(timeOf(wf.CreatedAt)))
	if wf.CancelledAt != nil {
		fmt.Fprintf(w, "cancelled_at: %s\n", fencedtype.FormatTime(timeOf(*wf.CancelledAt)))
	}
	fmt.Fprintln(w)
	return writeTaskTable(w, wf.Tasks)
}

// writeTaskTable prints a workflow's tasks as a table.
func writeTaskTable(w io.Writer, tasks []fenced.WorkflowTask) error {
	rows := [][]string{{"TASK", "JOB", "STATE", "KIND", "QUEUE", "DEPENDS_ON"}}
	for _, t := range tasks {
		deps := make([]string, len(t.DependsOn))
		for i, d := range t.DependsOn {
			deps[i] = display.Name(d)
		}
		after := dashIfEmpty(strings.Join(deps, ","))
		if t.RunAnyway {
			after += " (anyway)"
		}
		state := string(t.State)
		if t.CancelledByWorkflow {
			state += " (by workflow)"
		}
		rows = append(rows, []string{display.Name(t.Name), fmt.Sprint(t.JobID), state, display.Name(t.Kind),
			display.Name(t.Queue), after})
	}
	return display.Table{Rows: rows}.Write(w)
}

// timeOf is the time of a wire time.
func timeOf(t wire.Time) time.Time { return time.Time(t) }

// timePtr is the time of an optional wire time, or nil.
func timePtr(t *wire.Time) *time.Time { return (*time.Time)(t) }
