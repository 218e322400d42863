package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fenced/fenced"
	"github.com/spf13/cobra"
)

// app is what every command shares: the --db flag, the environment and the
// standard streams.
type app struct {
	db     string // --db; empty when not given
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func newApp() *app {
	return &app{getenv: os.Getenv, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
}

// run executes the command line args and returns the process exit code. It
// prints errors to stderr as one line, "fenced: <message>", followed by a
// usage hint for usage errors only.
func run(ctx context.Context, args []string, a *app) int {
	root := newRootCmd(a)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	err = flagNamed(cmd, err)
	a.report(cmd, err)
	return exitCode(err)
}

func newRootCmd(a *app) *cobra.Command {
	root := group(&cobra.Command{
		Use:   "fenced",
		Short: "Fenced leases: locks a stale owner can never complete a write under",
		Long: `fenced manages fenced leases. A lease names a singleton (a task, a
resource); each grant of it carries a fence, a number the database increases
on every new owner and never reuses. Pass the fence to your protected writes
("fenced resource write", or your own tables through the library): once a newer
owner exists, a write carrying an older fence is refused, so a worker that
paused past its lease cannot overwrite its successor's work. "fenced job"
manages the job queue, whose attempts are fenced the same way.

The database is chosen by --db or FENCED_DATABASE_URL:
  postgres://user:pass@host:5432/db     PostgreSQL
  mysql://user:pass@host:3306/db        MariaDB 10.6+ (tested: 10.11) or MySQL 8
                                        (untested; also mariadb://)
  sqlite:///absolute/path/fenced.db     embedded SQLite
  sqlite:relative/path/fenced.db
When neither is set, fenced uses the SQLite file fenced.db in the working
directory. A command that writes migrates the schema first (creating the
SQLite file); a command that only reads (ls, show, counts, slots) creates
nothing, and fails on a database not migrated: run "fenced migrate".

Exit codes: 0 ok, 1 other error (including a job cancel or retry its state
forbids), 2 usage or invalid input, 3 lease held by another owner, 4 stale
fence, 5 not found.`,
		Example: `  # Run a nightly job on at most one host at a time.
  fenced lease run nightly-report --ttl 1m -- ./report.sh

  # Take a lease by hand, then write under its fence.
  fenced lease acquire billing --owner worker-1 --ttl 30s
  fenced resource write invoice-42 --fence 7 --value paid

  # Enqueue a job, then follow it.
  fenced job enqueue send-email --args '{"to": "ann@example.com"}'
  fenced job show 1

  # Use PostgreSQL.
  export FENCED_DATABASE_URL=postgres://fenced@db:5432/fenced`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	})
	root.SetVersionTemplate(versionTemplate())
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if err := negativeID(cmd, err); errors.Is(err, fenced.ErrInvalid) {
			return err
		}
		return &usageError{err}
	})
	root.PersistentFlags().StringVar(&a.db, "db", "",
		"database URL (default $FENCED_DATABASE_URL, else "+defaultURLHelp+")")
	root.AddCommand(
		newLeaseCmd(a),
		newSemaphoreCmd(a),
		newResourceCmd(a),
		newJobCmd(a),
		newWorkflowCmd(a),
		newQueueCmd(a),
		newFenceCmd(a),
		newMigrateCmd(a),
		newServeCmd(a),
		newBenchCmd(a),
		newDemoCmd(a),
		newDemoWorkerCmd(),
		newChaosCmd(a),
		newChaosWorkerCmd(),
		newVersionCmd(),
	)
	return root
}

// group makes cmd a command that only holds subcommands. Run bare it prints
// its help to stderr and exits 2; with an unknown subcommand it says so (a
// group without RunE would print help and exit 0 instead).
func group(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			cmd.SetOut(cmd.ErrOrStderr())
			if err := cmd.Help(); err != nil {
				return err
			}
			return &exitStatus{code: exitUsage}
		}
		return usage("unknown command %q for %q%s", args[0], cmd.CommandPath(), suggest(cmd, args[0]))
	}
	return cmd
}

// suggest names the subcommands of cmd close to typed, if any.
func suggest(cmd *cobra.Command, typed string) string {
	s := cmd.SuggestionsFor(typed)
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
}

// exactArgs checks that the command has n positional arguments, described
// by names (for example "NAME"); anything else is a usage error.
func exactArgs(names ...string) cobra.PositionalArgs {
	check := cobra.ExactArgs(len(names))
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			if len(names) == 0 {
				return usage("want no arguments: %v", err)
			}
			return usage("want %s: %v", strings.Join(names, " "), err)
		}
		return nil
	}
}

// requireFlags is a usage error naming the flags that were not given.
// (cobra's MarkFlagRequired reports an error that cannot be told from a
// runtime one, so the check is made here.)
func requireFlags(cmd *cobra.Command, names ...string) error {
	var missing []string
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return usage("required flag %s not set", strings.Join(missing, ", "))
	}
	return nil
}
