package main

import (
	"context"
	"fmt"
	"io"

	"github.com/fenced/fenced"
	"github.com/spf13/cobra"
)

func newFenceCmd(a *app) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "fence",
		Short: "Operate on fences (after a restore or failover)",
	})
	cmd.AddCommand(newFenceAdvanceCmd(a))
	return cmd
}

// fenceFloor is the outcome of "fence advance".
type fenceFloor struct {
	Floor int64 `json:"floor"`
	step  int64 // by how much fences and job ids moved up
}

func newFenceAdvanceCmd(a *app) *cobra.Command {
	var by int64
	var yes bool
	cmd := callCmd[fenceFloor]{
		check: func(*cobra.Command, []string) error {
			if err := fenced.ValidateAdvanceFences(by); err != nil {
				return err
			}
			step := by
			if step == 0 {
				step = fenced.DefaultAdvance
			}
			return a.confirm(yes, "fence advance", fmt.Sprintf("fence advance ends every lease, makes running job attempts stale "+
				"and moves fences and job ids up by %d. Run it only after a restore or a failover.", step))
		},
		call: func(ctx context.Context, c *fenced.Client, _ []string) (fenceFloor, error) {
			floor, err := c.AdvanceFences(ctx, by)
			step := by
			if step == 0 {
				step = fenced.DefaultAdvance
			}
			return fenceFloor{floor, step}, err
		},
		text: func(w io.Writer, f fenceFloor) error {
			_, err := fmt.Fprintf(w, "fences advanced: new floor %d; every lease has ended; job fences moved up and job ids skip ahead by %d\n", f.Floor, f.step)
			return err
		},
	}.build(a, &cobra.Command{
		Use:   "advance",
		Short: "Make every fence granted from now on greater than any granted before",
		Long: fmt.Sprintf(`Raise every lease's fence to a new floor, max(fences stored) + --by, so every
fence granted from now on is greater than any granted before. Every lease
ends: holders get a stale error and must acquire again; "lease ls" shows
each as advanced, with the floor as its fence and no owner, until it is
granted again. Prints the new floor.

Jobs jump too: every job's fence moves up by --by, so running attempts end
(their workers' writes are refused as stale, and recovery takes the jobs
back), and job ids skip --by ahead, so a job lost with the newer data never
shares an id with a new one.

When to run it: once, right after restoring the database from a backup, or
after promoting an asynchronous replica, and before workers start again.
Either can be behind fences that protected resources have already seen;
without an advance, a new holder could be granted a fence a stale one
already used.

--by must exceed the number of grants the restored copy may have missed;
0 means %d.

It cannot be undone, so it asks first: on a terminal it prints what it
will do and runs only on the answer "y"; with stdin not a terminal (a
script, a pipe) it refuses with exit code 2 unless --yes is given. A
declined prompt exits 1 and changes nothing.`, fenced.DefaultAdvance),
		Example: `  # After restoring last night's backup, before starting the workers:
  fenced --db postgres://fenced@db/fenced fence advance

  # The same from a script, without the question:
  fenced --db postgres://fenced@db/fenced fence advance --yes`,
		Args: exactArgs(),
	})
	cmd.Flags().Int64Var(&by, "by", 0, fmt.Sprintf("how far to advance (0 means %d)", fenced.DefaultAdvance))
	cmd.Flags().BoolVar(&yes, "yes", false, "advance without asking (required when stdin is not a terminal)")
	return cmd
}
