package main

import (
	"context"
	"fmt"
	"io"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/spf13/cobra"
)

func newJobSlotsCmd(a *app) *cobra.Command {
	var queue string
	cmd := callCmd[[]fenced.KeySlots]{
		read: true,
		check: func(cmd *cobra.Command, _ []string) error {
			if fl := cmd.Flags().Lookup("queue"); fl.Changed && queue == "" {
				return invalid("queue", "must not be empty")
			}
			return fenced.ValidateListKeySlots(queue)
		},
		call: func(ctx context.Context, c *fenced.Client, _ []string) ([]fenced.KeySlots, error) {
			return c.ListKeySlots(ctx, queue)
		},
		json: listJSON[fenced.KeySlots],
		text: writeSlotsTable,
	}.build(a, &cobra.Command{
		Use:   "slots [--queue QUEUE] [--json]",
		Short: "Show each concurrency key in use: its limit, running attempts and due jobs waiting",
		Long: `List the concurrency keys that have running or due queued jobs, of one queue
or of all: LIMIT is the per-key limit the claim applies ("none" when none is
declared; for a key whose jobs are of several kinds, the key's own limit,
else the queue's), RUNNING the slots in use (an attempt that lost its lease
keeps its slot until the job is recovered), WAITING the queued jobs that are
due, HELD_BACK those the limit holds back (WAITING when the key is full).`,
		Example: `  fenced job slots
  fenced job slots --queue mail --json`,
		Args: cobra.NoArgs,
	})
	cmd.Flags().StringVar(&queue, "queue", "", "only the keys of this queue")
	return cmd
}

// writeSlotsTable prints key slots as a table with a header.
func writeSlotsTable(w io.Writer, ks []fenced.KeySlots) error {
	rows := [][]string{{"QUEUE", "KEY", "LIMIT", "RUNNING", "WAITING", "HELD_BACK"}}
	for _, k := range ks {
		rows = append(rows, []string{display.Name(k.Queue), display.Name(k.ConcurrencyKey), limitText(k.Limit),
			fmt.Sprint(k.Running), fmt.Sprint(k.Waiting), fmt.Sprint(k.HeldBack())})
	}
	return display.Table{Rows: rows}.Write(w)
}
