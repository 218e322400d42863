package main

import (
	"context"
	"fmt"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/fenced/fenced/internal/lib/wire"
	"github.com/spf13/cobra"
)

func newJobCancelCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a queued job, or ask a running one to stop",
		Long: `Cancel a job. A queued job is cancelled at once. A running job is asked to
stop: its worker learns it at its next heartbeat, stops the handler, and
records the job cancelled; until then the job stays running with
cancel_requested set. The output says which happened.

A job that already finished (succeeded, failed or cancelled) cannot be
cancelled: exit 1. A job that does not exist: exit 5.`,
		Example: `  fenced job cancel 42
  fenced job cancel 42 --json | jq '{state, cancel_requested}'`,
		Args:        exactArgs("ID"),
		Annotations: map[string]string{annotationJobID: "ID"},
		RunE: func(cmd *cobra.Command, args []string) error {
			j, err := a.jobAdmin(cmd.Context(), args[0], (*fenced.Client).CancelJob)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, *j)
			}
			if j.State == fenced.JobCancelled {
				_, err = fmt.Fprintf(w, "cancelled job %d (it was queued)\n", j.ID)
				return err
			}
			_, err = fmt.Fprintf(w, "cancel requested for job %d: running as attempt %d (owner %s, fence %d); its worker stops at its next heartbeat\n",
				j.ID, j.Attempt, display.Quote(j.Owner), j.Fence)
			return err
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newJobRetryCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "retry ID",
		Short: "Put a failed or cancelled job back in its queue, to run now",
		Long: `Put a failed or cancelled job back to queued, to run now, with as many
attempts again as it had (max_attempts grows by its original budget).

A job that is queued, running or succeeded cannot be retried: exit 1. A job
that does not exist: exit 5.`,
		Example: `  fenced job retry 42
  fenced job ls --state failed --json | jq -r '.[].id' | xargs -n1 fenced job retry`,
		Args:        exactArgs("ID"),
		Annotations: map[string]string{annotationJobID: "ID"},
		RunE: func(cmd *cobra.Command, args []string) error {
			j, err := a.jobAdmin(cmd.Context(), args[0], (*fenced.Client).RetryJob)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), *j)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "queued job %d again: %d attempts made, up to %d more\n",
				j.ID, j.Attempt, j.MaxAttempts-j.Attempt)
			return err
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newJobDeleteCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a job and its attempt history, in any state",
		Long: `Delete a job, in any state, with its attempt history. A running job's
worker is not told: its next heartbeat, progress or end finds no job, so it
can write nothing more (its handler runs on until then), and its attempt no
longer counts against a concurrency limit. Deleting a failed job unblocks
its sequence. To stop a running job and keep its record, cancel it instead.

A job that does not exist: exit 5.`,
		Example: `  fenced job delete 42
  fenced job ls --state cancelled --json | jq -r '.[].id' | xargs -n1 fenced job delete`,
		Args:        exactArgs("ID"),
		Annotations: map[string]string{annotationJobID: "ID"},
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := a.onJob(cmd.Context(), args[0], (*fenced.Client).DeleteJob)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), struct {
					ID      int64 `json:"id"`
					Deleted bool  `json:"deleted"`
				}{id, true})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "deleted job %d\n", id)
			return err
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

// jobAdmin parses the job id arg and applies op (cancel or retry) to it.
func (a *app) jobAdmin(ctx context.Context, arg string, op func(*fenced.Client, context.Context, int64) (*fenced.Job, error)) (*fenced.Job, error) {
	var j *fenced.Job
	_, err := a.onJob(ctx, arg, func(c *fenced.Client, ctx context.Context, id int64) (err error) {
		j, err = op(c, ctx, id)
		return err
	})
	return j, err
}

// onJob parses the job id arg, opens the database and applies op to the
// job; a missing job is a not-found naming it. It returns the id.
func (a *app) onJob(ctx context.Context, arg string, op func(*fenced.Client, context.Context, int64) error) (int64, error) {
	id, err := fenced.ParseJobID(arg)
	if err != nil {
		return 0, err
	}
	c, err := a.open(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if err := op(c, ctx, id); err != nil {
		return 0, jobNotFound(id, err)
	}
	return id, nil
}

func newJobCountsCmd(a *app) *cobra.Command {
	return callCmd[[]wire.QueueCounts]{
		read: true,
		call: func(ctx context.Context, c *fenced.Client, _ []string) ([]wire.QueueCounts, error) {
			counts, err := c.CountJobs(ctx)
			return wire.CountsByQueue(counts), err
		},
		text: writeCountsTable,
	}.build(a, &cobra.Command{
		Use:     "counts",
		Aliases: []string{"stats"},
		Short:   "Count jobs by queue and state",
		Long: `Count the jobs of every queue in each state. Pending is workflow tasks
waiting for their dependencies; queued includes jobs scheduled for later and
jobs waiting to retry.`,
		Example: `  fenced job counts
  fenced job stats --json | jq '.[] | select(.failed > 0) | .queue'`,
		Args: exactArgs(),
	})
}
