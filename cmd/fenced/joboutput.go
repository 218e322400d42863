package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/fenced/fenced/internal/lib/wire"
)

// jobStateText is a job's state as a human reads it: a running job asked to
// stop says so.
func jobStateText(j *fenced.Job) string {
	if j.State == fenced.JobRunning && j.CancelRequested {
		return "running (cancel requested)"
	}
	return string(j.State)
}

// writeJob prints a job as aligned "field: value" lines; absent optional
// fields are left out. As on the dashboard's job page, the owner of a job
// that is not running is labelled last_owner (it is the last attempt's,
// not a holder's), and a finished job has no run_at: its run time was a
// schedule no attempt follows (a dead letter's is the retry it did not
// get, after finished_at), so it shows when its last attempt started and
// when it finished.
func writeJob(w io.Writer, j *fenced.Job) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	line := func(field, value string) { fmt.Fprintf(tw, "%s:\t%s\n", field, value) }
	optional := func(field, value string) {
		if value != "" {
			line(field, value)
		}
	}
	line("id", fmt.Sprint(j.ID))
	line("kind", display.Name(j.Kind))
	line("queue", display.Name(j.Queue))
	line("state", jobStateText(j))
	if j.WorkflowID != 0 {
		line("workflow", fmt.Sprint(j.WorkflowID))
		line("task", display.Name(j.TaskName))
	}
	line("priority", fmt.Sprint(j.Priority))
	line("attempt", fmt.Sprintf("%d of %d", j.Attempt, j.MaxAttempts))
	line("fence", fmt.Sprint(j.Fence))
	if j.State == fenced.JobRunning {
		optional("owner", nameOrEmpty(j.Owner))
	} else {
		optional("last_owner", nameOrEmpty(j.Owner))
	}
	if j.FinishedAt == nil {
		line("run_at", fencedtype.FormatTime(j.RunAt))
	}
	optional("lease_expires_at", timeText(j.LeaseExpiresAt))
	line("created_at", fencedtype.FormatTime(j.CreatedAt))
	optional("attempted_at", timeText(j.AttemptedAt))
	optional("finished_at", timeText(j.FinishedAt))
	optional("idempotency_key", nameOrEmpty(j.IdempotencyKey))
	optional("concurrency_key", nameOrEmpty(j.ConcurrencyKey))
	optional("sequence_key", nameOrEmpty(j.SequenceKey))
	if j.SequenceContinueOnFailed {
		line("sequence_continue_on_failed", "true")
	}
	line("args", jsonText(j.Args))
	optional("metadata", jsonText(j.Metadata))
	if j.Timeout > 0 {
		line("timeout", j.Timeout.String())
	}
	if r := j.Retry; r != nil {
		line("retry", fmt.Sprintf("base %s, max %s, jitter %g", r.Base, r.Max, r.Jitter))
	}
	optional("progress", jsonText(j.Progress))
	optional("output", jsonText(j.Output))
	optional("error", errorText(j.LastError))
	return tw.Flush()
}

// writeAttempts prints a job's attempt history as a table.
func writeAttempts(w io.Writer, attempts []fenced.JobAttempt) error {
	if len(attempts) == 0 {
		_, err := fmt.Fprintln(w, "no attempts yet")
		return err
	}
	rows := [][]string{{"ATTEMPT", "FENCE", "OWNER", "STARTED", "ENDED", "OUTCOME", "ERROR"}}
	for _, a := range attempts {
		ended := timeText(a.EndedAt)
		if ended == "" {
			ended = "-"
		}
		rows = append(rows, []string{fmt.Sprint(a.Attempt), fmt.Sprint(a.Fence), display.Name(a.Owner),
			fencedtype.FormatTime(a.StartedAt), ended, a.Outcome, errorText(a.Error)})
	}
	return display.Table{Rows: rows}.Write(w)
}

// writeJobTable prints jobs as a table with a header.
func writeJobTable(w io.Writer, jobs []*fenced.Job) error {
	rows := [][]string{{"ID", "KIND", "QUEUE", "STATE", "PRIORITY", "ATTEMPT", "RUN_AT", "CONCURRENCY_KEY", "SEQUENCE_KEY"}}
	for _, j := range jobs {
		rows = append(rows, []string{fmt.Sprint(j.ID), display.Name(j.Kind), display.Name(j.Queue),
			jobStateText(j), fmt.Sprint(j.Priority), fmt.Sprintf("%d/%d", j.Attempt, j.MaxAttempts), fencedtype.FormatTime(j.RunAt),
			dashIfEmpty(j.ConcurrencyKey), dashIfEmpty(j.SequenceKey)})
	}
	return display.Table{Rows: rows}.Write(w)
}

// writeCountsTable prints job counts as one line per queue.
func writeCountsTable(w io.Writer, counts []wire.QueueCounts) error {
	rows := [][]string{{"QUEUE", "PENDING", "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "TOTAL"}}
	for _, q := range counts {
		rows = append(rows, []string{display.Name(q.Queue), fmt.Sprint(q.Pending), fmt.Sprint(q.Queued), fmt.Sprint(q.Running),
			fmt.Sprint(q.Succeeded), fmt.Sprint(q.Failed), fmt.Sprint(q.Cancelled), fmt.Sprint(q.Total)})
	}
	return display.Table{Rows: rows}.Write(w)
}

// nameOrEmpty is display.Name(s), or "" (a field left out) when s is empty.
func nameOrEmpty(s string) string {
	if s == "" {
		return ""
	}
	return display.Name(s)
}

// errorText is a stored error on one line: its lines joined, then shown as
// display.Text shows free text; "" when there is none.
func errorText(s string) string {
	if s = oneLine(s); s == "" {
		return ""
	}
	return display.Text(s)
}

// timeText is *t for humans, or "" when nil.
func timeText(t *time.Time) string {
	if t == nil {
		return ""
	}
	return fencedtype.FormatTime(*t)
}

// jsonText is stored JSON on one line ("" when there is none). PostgreSQL
// returns jsonb with spaces after separators; compacting removes them.
func jsonText(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return displayValue(b)
	}
	return buf.String()
}
