package main

import (
	"errors"
	"os"

	"github.com/fenced/fenced/internal/app/demo"
	"github.com/spf13/cobra"
)

func newDemoCmd(a *app) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo [SCENARIO...]",
		Short: "Replay the failures fenced prevents, against a real database",
		Long: `Replay, against a real database, the failures fenced prevents (a paused
worker waking up after a takeover, and others), printing each timeline as a
table of expected and observed outcomes. With no SCENARIO, all run, the
headline stale-writer first; the last line sums up.

The database is --db or FENCED_DATABASE_URL; with neither, a fresh SQLite
file in a temporary directory, removed afterwards. In a database of yours,
the demo removes at the end what it created there: its leases and the
resources written under them, its demo-* queues with their jobs, and its
two tables (the fenced tables it may have migrated stay). --keep keeps
them, and says what they are, to look at after the run; with the
temporary database, --keep keeps the file. Exits 1 if any observed outcome
differs from the expected one.`,
		Example: `  fenced demo
  fenced --db postgres://postgres@127.0.0.1:5432/test demo
  fenced --db mysql://root@127.0.0.1:3306/test demo claim-race --keep`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ok, err := demo.Run(cmd.Context(), demo.Options{URL: a.databaseURL(), Out: a.stdout, Keep: keep}, args...)
			if err != nil {
				return err
			}
			if !ok {
				return errors.New("demo: an observed outcome differed from the expected one")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep what the demo created in the database (default: remove it at the end)")
	return cmd
}

// newDemoWorkerCmd is the hidden worker process the demo re-executes.
func newDemoWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "demo-worker",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			os.Exit(demo.Worker(cmd.Context(), args))
			return nil
		},
	}
}
