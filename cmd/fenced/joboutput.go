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
	"github.com/fenced/fenced/internal/wire"
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
// fields are left out.
func writeJob(w io.Writer, j *fenced.Job) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	line := func(field, value string) { fmt.Fprintf(tw, "%s:\t%s\n", field, value) }
	optional := func(field, value string) {
		if value != "" {
			line(field, value)
		}
	}
	line("id", fmt.Sprint(j.ID))
	line("kind", j.Kind)
	line("queue", j.Queue)
	line("state", jobStateText(j))
	line("priority", fmt.Sprint(j.Priority))
	line("attempt", fmt.Sprintf("%d of %d", j.Attempt, j.MaxAttempts))
	line("fence", fmt.Sprint(j.Fence))
	optional("owner", j.Owner)
	line("run_at", fencedtype.FormatTime(j.RunAt))
	optional("lease_expires_at", timeText(j.LeaseExpiresAt))
	line("created_at", fencedtype.FormatTime(j.CreatedAt))
	optional("attempted_at", timeText(j.AttemptedAt))
	optional("finished_at", timeText(j.FinishedAt))
	optional("idempotency_key", j.IdempotencyKey)
	line("args", jsonText(j.Args))
	optional("progress", jsonText(j.Progress))
	optional("output", jsonText(j.Output))
	optional("error", oneLine(j.LastError))
	return tw.Flush()
}

// writeAttempts prints a job's attempt history as a table.
func writeAttempts(w io.Writer, attempts []fenced.JobAttempt) error {
	if len(attempts) == 0 {
		_, err := fmt.Fprintln(w, "no attempts yet")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ATTEMPT\tFENCE\tOWNER\tSTARTED\tENDED\tOUTCOME\tERROR")
	for _, a := range attempts {
		ended := timeText(a.EndedAt)
		if ended == "" {
			ended = "-"
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\n", a.Attempt, a.Fence, a.Owner,
			fencedtype.FormatTime(a.StartedAt), ended, a.Outcome, oneLine(a.Error))
	}
	return tw.Flush()
}

// writeJobTable prints jobs as a table with a header.
func writeJobTable(w io.Writer, jobs []*fenced.Job) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tQUEUE\tSTATE\tPRIORITY\tATTEMPT\tRUN_AT")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d/%d\t%s\n", j.ID, j.Kind, j.Queue,
			jobStateText(j), j.Priority, j.Attempt, j.MaxAttempts, fencedtype.FormatTime(j.RunAt))
	}
	return tw.Flush()
}

// writeCountsTable prints job counts as one line per queue.
func writeCountsTable(w io.Writer, counts []wire.QueueCounts) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tQUEUED\tRUNNING\tSUCCEEDED\tFAILED\tCANCELLED\tTOTAL")
	for _, q := range counts {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", q.Queue, q.Queued, q.Running, q.Succeeded, q.Failed, q.Cancelled, q.Total)
	}
	return tw.Flush()
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
