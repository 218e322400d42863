package main

import (
	"context"
	"fmt"
	"io"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/spf13/cobra"
)

func newJobLimitCmd(a *app) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "limit",
		Short: "Declare how many jobs of a queue, a kind or a concurrency key run at once",
		Long: `A limit bounds the running jobs of a queue: --per-key is the most attempts
of one concurrency key (a job's --concurrency-key) that run at once, --global
the most jobs of the queue, or of the queue and --kind, that run at once.
A queue's limit is the default of its keys; a --kind's overrides it for jobs
of that kind; a --key's own limit overrides both. A key with no limit
declared anywhere is unlimited; 0 declares no limit. A job's attempt that
lost its lease keeps its key's slot until the job is recovered.`,
	})
	cmd.AddCommand(newJobLimitSetCmd(a), newJobLimitListCmd(a), newJobLimitDeleteCmd(a))
	return cmd
}

// limitScopeFlags are the --queue, --kind and --key of a limit command.
type limitScopeFlags struct{ queue, kind, key string }

func (f *limitScopeFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.queue, "queue", fenced.DefaultQueue, "the queue whose limit it is")
	cmd.Flags().StringVar(&f.kind, "kind", "", "the limit of this kind of the queue's jobs")
	cmd.Flags().StringVar(&f.key, "key", "", "the limit of this concurrency key of the queue")
}

// queueFlagArgs refuses arguments, pointing a queue given as one, the
// way of earlier versions, at --queue.
func queueFlagArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usage("the queue is given as --queue, as in every job command: fenced job limit %s --queue %s", cmd.Name(), args[0])
	}
	return nil
}

// check refuses an explicitly empty --queue, --kind or --key, which the
// library would read as "not given".
func (f *limitScopeFlags) check(cmd *cobra.Command) error {
	for name, field := range map[string]string{"queue": "queue", "kind": "kind", "key": "concurrency key"} {
		if fl := cmd.Flags().Lookup(name); fl.Changed && fl.Value.String() == "" {
			return invalid(field, "must not be empty")
		}
	}
	return nil
}

func newJobLimitSetCmd(a *app) *cobra.Command {
	var f limitScopeFlags
	var l fenced.JobLimit
	cmd := callCmd[*fenced.JobLimit]{
		check: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			if !cmd.Flags().Changed("per-key") && !cmd.Flags().Changed("global") {
				// Both would be 0: the call would replace the limit with none.
				return usage("give --per-key, --global or both (0 declares no limit; fenced job limit rm deletes one)")
			}
			l.Queue, l.Kind, l.ConcurrencyKey = f.queue, f.kind, f.key
			return fenced.ValidateSetJobLimit(l)
		},
		call: func(ctx context.Context, c *fenced.Client, _ []string) (*fenced.JobLimit, error) {
			return c.SetJobLimit(ctx, l)
		},
		text: func(w io.Writer, got *fenced.JobLimit) error {
			_, err := fmt.Fprintf(w, "limit of %s: per key %s, global %s\n",
				limitScopeText(*got), limitText(got.PerKey), limitText(got.Global))
			return err
		},
	}.build(a, &cobra.Command{
		Use:   "set [--queue QUEUE] [--kind KIND | --key KEY] [--per-key N] [--global N]",
		Short: "Declare the limit of a queue, a kind or a concurrency key, replacing its last one",
		Long: `Declare the limit of one scope — the queue's own without --kind or --key —
replacing the one it had: a flag not given is no limit. Give --per-key,
--global or both.`,
		Example: `  fenced job limit set --queue mail --per-key 2 --global 50
  fenced job limit set --queue mail --kind newsletter --per-key 1
  fenced job limit set --queue mail --key customer-42 --per-key 5`,
		Args: queueFlagArgs,
	})
	f.add(cmd)
	cmd.Flags().IntVar(&l.PerKey, "per-key", 0, "most running attempts of one concurrency key (0: none)")
	cmd.Flags().IntVar(&l.Global, "global", 0, "most running jobs of the queue or kind (0: none)")
	return cmd
}

func newJobLimitListCmd(a *app) *cobra.Command {
	queue := ""
	cmd := callCmd[[]fenced.JobLimit]{
		read: true,
		check: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("queue") && queue == "" {
				return invalid("queue", "must not be empty")
			}
			return fenced.ValidateListJobLimits(queue)
		},
		call: func(ctx context.Context, c *fenced.Client, _ []string) ([]fenced.JobLimit, error) {
			return c.ListJobLimits(ctx, queue)
		},
		json: listJSON[fenced.JobLimit],
		text: writeLimitTable,
	}.build(a, &cobra.Command{
		Use:     "ls [--queue QUEUE]",
		Aliases: []string{"list"},
		Short:   "List the declared limits, of one queue or of all",
		Example: `  fenced job limit ls
  fenced job limit ls --queue mail --json`,
		Args: queueFlagArgs,
	})
	cmd.Flags().StringVar(&queue, "queue", "", "only the limits of this queue")
	return cmd
}

func newJobLimitDeleteCmd(a *app) *cobra.Command {
	var f limitScopeFlags
	cmd := &cobra.Command{
		Use:     "rm [--queue QUEUE] [--kind KIND | --key KEY]",
		Aliases: []string{"delete"},
		Short:   "Delete the limit of a queue, a kind or a concurrency key",
		Long: `Delete the limit of one scope: the queue's own without --kind or --key. A
limit that is not declared exits 5.`,
		Example: `  fenced job limit rm --queue mail --key customer-42`,
		Args:    queueFlagArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			if err := fenced.ValidateDeleteJobLimit(f.queue, f.kind, f.key); err != nil {
				return err
			}
			c, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			if err := c.DeleteJobLimit(cmd.Context(), f.queue, f.kind, f.key); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "deleted the limit of %s\n",
				limitScopeText(fenced.JobLimit{Queue: f.queue, Kind: f.kind, ConcurrencyKey: f.key}))
			return err
		},
	}
	f.add(cmd)
	return cmd
}

// limitScopeText names a limit's scope: "queue q", "queue q kind k" or
// "queue q key c".
func limitScopeText(l fenced.JobLimit) string {
	s := "queue " + display.Quote(l.Queue)
	if l.Kind != "" {
		s += " kind " + display.Quote(l.Kind)
	}
	if l.ConcurrencyKey != "" {
		s += " key " + display.Quote(l.ConcurrencyKey)
	}
	return s
}

// limitText is a limit's number, "none" for 0.
func limitText(n int) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprint(n)
}

// writeLimitTable prints limits as a table with a header.
func writeLimitTable(w io.Writer, ls []fenced.JobLimit) error {
	rows := [][]string{{"QUEUE", "KIND", "KEY", "PER_KEY", "GLOBAL"}}
	for _, l := range ls {
		rows = append(rows, []string{display.Name(l.Queue), dashIfEmpty(l.Kind), dashIfEmpty(l.ConcurrencyKey),
			limitText(l.PerKey), limitText(l.Global)})
	}
	return display.Table{Rows: rows}.Write(w)
}

// dashIfEmpty is display.Name(s), or "-" when s is empty.
func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return display.Name(s)
}
