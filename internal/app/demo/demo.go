// Package demo replays, against a real database and real processes, the
// failures fenced prevents, printing each timeline as a table of expected
// and observed outcomes.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/internal/lib/display"
)

// Options configure a demo run.
type Options struct {
	// URL of the database; empty means a fresh SQLite file in a temporary
	// directory, removed afterwards (unless Keep).
	URL string
	// Keep leaves what the run created in the database: its leases and the
	// resources written under them, its demo-* queues with their jobs, and
	// its own tables. By default they are removed at the end (the fenced
	// schema the run migrated stays). With no URL, Keep keeps the
	// temporary database file and says where it is.
	Keep bool
	// Out receives the tables.
	Out io.Writer
	// Exe is the binary re-executed for worker processes
	// ("Exe demo-worker …"). Default os.Executable().
	Exe string
}

// scenario is one replayed timeline.
type scenario struct {
	name  string
	title string
	run   func(ctx context.Context, e *env) []Step
}

// scenarios in the order they run when none are named: the headline first.
var scenarios = []scenario{
	{"stale-writer", "A paused past its lease writes after B took over", staleWriter},
	{"claim-race", "two workers claim one job at the same moment", claimRace},
	{"check-then-act", "a naive SELECT-then-UPDATE claim gives one job two owners", checkThenAct},
	{"skip-locked", "two workers pull ten jobs concurrently and never share one", skipLocked},
	{"transitions", "each state change of a job is allowed once", transitions},
	{"stale-completion", "a worker whose job was taken over cannot complete it", staleCompletion},
}

// Width is the widest line the demo prints: its tables wrap their text
// columns to fit.
const Width = 100

// Names lists the scenarios in the order they run.
func Names() []string { return scenarioNames(scenarios) }

func scenarioNames(table []scenario) []string {
	out := make([]string, len(table))
	for i, s := range table {
		out[i] = s.name
	}
	return out
}

// env is what a scenario runs against.
type env struct {
	url     string
	c       *fenced.Client
	d       driver.Driver // c's, for the demo's own statements (raw.go)
	exe     string
	dialect fenced.Dialect // DialectPostgres, DialectMySQL or DialectSQLite
	made    created        // what the run created, removed at the end unless Keep
}

// Run runs the named scenarios (all when none are named, the headline
// stale-writer first) and reports whether every observed outcome matched
// the expected one. It ends with a one-line summary.
func Run(ctx context.Context, opts Options, names ...string) (bool, error) {
	return run(ctx, opts, scenarios, names)
}

// run runs names from table (all of it, in its order, when none are named).
func run(ctx context.Context, opts Options, table []scenario, names []string) (bool, error) {
	have := scenarioNames(table)
	if len(names) == 0 {
		names = have
	}
	var chosen []scenario
	for _, n := range names {
		i := slices.IndexFunc(table, func(s scenario) bool { return s.name == n })
		if i < 0 {
			return false, fmt.Errorf("unknown demo %q (have %s): %w", n, strings.Join(have, ", "), fenced.ErrInvalid)
		}
		chosen = append(chosen, table[i])
	}
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return false, err
		}
		opts.Exe = exe
	}
	url, temporary := opts.URL, opts.URL == ""
	if temporary {
		dir, err := os.MkdirTemp("", "fenced-demo-")
		if err != nil {
			return false, err
		}
		url = "sqlite:" + filepath.Join(dir, "demo.db")
		if !opts.Keep {
			defer os.RemoveAll(dir)
		}
	}
	c, d, err := open(ctx, url)
	if err != nil {
		return false, err
	}
	defer d.Close()
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		return false, err
	}
	kind := d.Dialect()
	e := &env{url: url, c: c, d: d, exe: opts.Exe, dialect: kind}
	var differed []string
	ran := 0
	for _, s := range chosen {
		if ctx.Err() != nil {
			break // interrupted: clean up what was made so far
		}
		ran++
		fmt.Fprintf(opts.Out, "== %s: %s (%s)\n", s.name, s.title, kind)
		steps := s.run(ctx, e)
		if printSteps(opts.Out, steps) {
			fmt.Fprintf(opts.Out, "%s: every step as expected\n\n", s.name)
		} else {
			differed = append(differed, s.name)
			fmt.Fprintf(opts.Out, "%s: MISMATCH — an observed outcome differs from the expected one\n\n", s.name)
		}
	}
	var cleanupErr error
	switch {
	case temporary && opts.Keep:
		fmt.Fprintf(opts.Out, "kept (--keep): the demo's database %s\n", url)
	case temporary: // removed with its directory
	case opts.Keep:
		for _, l := range e.kept() {
			fmt.Fprintln(opts.Out, l)
		}
	default:
		var msg string
		if msg, cleanupErr = e.cleanup(ctx); cleanupErr != nil {
			msg = cleanupErr.Error()
		}
		for _, l := range display.Wrap(msg, Width) {
			fmt.Fprintln(opts.Out, l)
		}
	}
	fmt.Fprintln(opts.Out, summary(ran, kind, differed))
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return len(differed) == 0, cleanupErr
}

// summary is the demo's last line: how many scenarios ran, on which
// backend, and whether all went as expected or which differed.
func summary(n int, dialect fenced.Dialect, differed []string) string {
	scenarios := "scenarios"
	if n == 1 {
		scenarios = "scenario"
	}
	if len(differed) == 0 {
		return fmt.Sprintf("%d %s on %s: all as expected", n, scenarios, dialect)
	}
	return fmt.Sprintf("%d %s on %s: %d as expected; differed: %s", n, scenarios, dialect, n-len(differed), strings.Join(differed, ", "))
}
