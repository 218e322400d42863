// Package demo replays, against a real database and real processes, the
// failures fenced prevents, printing each timeline as a table of expected
// and observed outcomes.
package demo

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
)

// Options configure a demo run.
type Options struct {
	// URL of the database; empty means a fresh SQLite file in a temporary
	// directory, removed afterwards.
	URL string
	// Out receives the tables.
	Out io.Writer
	// Exe is the binary re-executed for worker processes
	// ("Exe demo-worker …"). Default os.Executable().
	Exe string
}

// scenario is one replayed timeline.
type scenario struct {
	title string
	run   func(ctx context.Context, e *env) []Step
}

// scenarios by name, run in name order when none are named.
var scenarios = map[string]scenario{
	"check-then-act":   {"a naive SELECT-then-UPDATE claim gives one job two owners", checkThenAct},
	"claim-race":       {"two workers claim one job at the same moment", claimRace},
	"skip-locked":      {"two workers pull ten jobs concurrently and never share one", skipLocked},
	"stale-completion": {"a worker whose job was taken over cannot complete it", staleCompletion},
	"stale-writer":     {"A paused past its lease writes after B took over", staleWriter},
	"transitions":      {"each state change of a job is allowed once", transitions},
}

// Names lists the scenarios.
func Names() []string { return slices.Sorted(maps.Keys(scenarios)) }

// env is what a scenario runs against.
type env struct {
	url     string
	c       *fenced.Client
	d       driver.Driver // c's, for the demo's own statements (raw.go)
	exe     string
	dialect string // "postgres", "mysql" or "sqlite"
}

// Run runs the named scenarios (all when none are named) and reports whether
// every observed outcome matched the expected one.
func Run(ctx context.Context, opts Options, names ...string) (bool, error) {
	return run(ctx, opts, scenarios, names)
}

// run runs names from table (all of it, in name order, when none are named).
func run(ctx context.Context, opts Options, table map[string]scenario, names []string) (bool, error) {
	have := slices.Sorted(maps.Keys(table))
	if len(names) == 0 {
		names = have
	}
	for _, n := range names {
		if _, ok := table[n]; !ok {
			return false, fmt.Errorf("unknown demo %q (have %s): %w", n, strings.Join(have, ", "), fenced.ErrInvalid)
		}
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
	url := opts.URL
	if url == "" {
		dir, err := os.MkdirTemp("", "fenced-demo-")
		if err != nil {
			return false, err
		}
		defer os.RemoveAll(dir)
		url = "sqlite:" + filepath.Join(dir, "demo.db")
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
	allOK := true
	for _, n := range names {
		s := table[n]
		fmt.Fprintf(opts.Out, "== %s: %s (%s)\n", n, s.title, kind)
		steps := s.run(ctx, e)
		ok := printSteps(opts.Out, steps)
		allOK = allOK && ok
		if ok {
			fmt.Fprintf(opts.Out, "%s: every step as expected\n\n", n)
		} else {
			fmt.Fprintf(opts.Out, "%s: MISMATCH — an observed outcome differs from the expected one\n\n", n)
		}
	}
	return allOK, nil
}
