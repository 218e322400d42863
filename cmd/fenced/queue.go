package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/fenced/fenced/internal/lib/wire"
	"github.com/spf13/cobra"
)

func newQueueCmd(a *app) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "queue",
		Short: "Pause and resume job queues",
		Long: `A paused queue is not claimed from: no claim that starts after "queue pause"
returns takes a job of it (the claim statement checks the pause), so workers
and the HTTP service's claims get nothing and wait as on an empty queue.
Jobs already running keep running and finish with their fences; jobs can
still be enqueued. "queue resume" makes the jobs claimable again.`,
		Example: `  fenced queue pause mail
  fenced queue ls
  fenced queue resume mail`,
	})
	cmd.AddCommand(newQueuePauseCmd(a), newQueueResumeCmd(a), newQueueListCmd(a))
	return cmd
}

// queueState is the state of one queue after a pause or a resume, as
// --json prints it (the HTTP service's reply without db_time).
type queueState struct {
	Queue    string    `json:"queue"`
	Paused   bool      `json:"paused"`
	PausedAt wire.Time `json:"paused_at,omitzero"`
	Changed  bool      `json:"changed"`
}

func newQueuePauseCmd(a *app) *cobra.Command {
	return callCmd[queueState]{
		check: func(_ *cobra.Command, args []string) error { return fenced.ValidatePauseQueue(args[0]) },
		call: func(ctx context.Context, c *fenced.Client, args []string) (queueState, error) {
			p, changed, err := c.PauseQueue(ctx, args[0])
			if err != nil {
				return queueState{}, err
			}
			return queueState{p.Queue, true, wire.Time(p.PausedAt), changed}, nil
		},
		text: func(w io.Writer, q queueState) error {
			what := "paused"
			if !q.Changed {
				what = "already paused"
			}
			_, err := fmt.Fprintf(w, "queue %s %s since %s\n", display.Quote(q.Queue), what, fencedtype.FormatTime(time.Time(q.PausedAt)))
			return err
		},
	}.build(a, &cobra.Command{
		Use:   "pause QUEUE",
		Short: "Pause a queue: claims take none of its jobs until it is resumed",
		Long: `Pause a queue. Pausing a paused queue changes nothing and keeps the time of
its first pause ("already paused"; --json: "changed": false).`,
		Example: `  fenced queue pause mail
  fenced queue pause mail --json`,
		Args: exactArgs("QUEUE"),
	})
}

func newQueueResumeCmd(a *app) *cobra.Command {
	return callCmd[queueState]{
		check: func(_ *cobra.Command, args []string) error { return fenced.ValidateResumeQueue(args[0]) },
		call: func(ctx context.Context, c *fenced.Client, args []string) (queueState, error) {
			resumed, err := c.ResumeQueue(ctx, args[0])
			return queueState{Queue: args[0], Changed: resumed}, err
		},
		text: func(w io.Writer, q queueState) error {
			what := "resumed"
			if !q.Changed {
				what = "was not paused"
			}
			_, err := fmt.Fprintf(w, "queue %s %s\n", display.Quote(q.Queue), what)
			return err
		},
	}.build(a, &cobra.Command{
		Use:   "resume QUEUE",
		Short: "Resume a paused queue: claims take its jobs again",
		Long: `Resume a paused queue. Resuming a queue that is not paused changes nothing
("was not paused"; --json: "changed": false). On PostgreSQL the idle workers
of every process are woken; elsewhere they find the jobs at their next poll.`,
		Example: `  fenced queue resume mail
  fenced queue resume mail --json`,
		Args: exactArgs("QUEUE"),
	})
}

func newQueueListCmd(a *app) *cobra.Command {
	return callCmd[[]fenced.QueuePause]{
		read: true,
		call: func(ctx context.Context, c *fenced.Client, _ []string) ([]fenced.QueuePause, error) {
			return c.ListQueuePauses(ctx)
		},
		json: listJSON[fenced.QueuePause],
		text: writePauseTable,
	}.build(a, &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the paused queues",
		Example: `  fenced queue ls
  fenced queue ls --json`,
		Args: exactArgs(),
	})
}

// writePauseTable prints the paused queues, one a line.
func writePauseTable(w io.Writer, ps []fenced.QueuePause) error {
	rows := [][]string{{"QUEUE", "PAUSED_AT"}}
	for _, p := range ps {
		rows = append(rows, []string{display.Name(p.Queue), fencedtype.FormatTime(p.PausedAt)})
	}
	return display.Table{Rows: rows}.Write(w)
}
