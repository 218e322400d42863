package main

import (
	"errors"
	"os"

	"github.com/fenced/fenced/internal/demo"
	"github.com/spf13/cobra"
)

func newDemoCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "demo [SCENARIO...]",
		Short: "Replay the failures fenced prevents, against a real database",
		Long: `Replay, against a real database, the failures fenced prevents (a paused
worker waking up after a takeover, and others), printing each timeline as a
table of expected and observed outcomes. With no SCENARIO, all run.

The database is --db or FENCED_DATABASE_URL; with neither, a fresh SQLite
file in a temporary directory, removed afterwards. Exits 1 if any observed
outcome differs from the expected one.`,
		Example: `  fenced demo
  fenced --db postgres://postgres@127.0.0.1:5432/test demo
  fenced --db mysql://root@127.0.0.1:3306/test demo claim-race`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ok, err := demo.Run(cmd.Context(), demo.Options{URL: a.databaseURL(), Out: a.stdout}, args...)
			if err != nil {
				return err
			}
			if !ok {
				return errors.New("demo: an observed outcome differed from the expected one")
			}
			return nil
		},
	}
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
