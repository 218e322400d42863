// Package demo replays, against a real database, the failures fenced
// prevents, printing each timeline as a table of expected and observed
// outcomes.
package demo

import (
	"context"
	"io"
)

// Options configure a demo run.
type Options struct {
	// URL of the database; empty means a fresh SQLite file in a temporary
	// directory, removed afterwards.
	URL string
	// Out receives the tables.
	Out io.Writer
	// Exe is the fenced binary re-executed for worker processes
	// ("Exe demo-worker …"). Default os.Executable().
	Exe string
}

// Run runs the named scenarios (all when none are named) and reports whether
// every observed outcome matched the expected one.
func Run(ctx context.Context, opts Options, names ...string) (bool, error) {
	return false, nil
}

// Worker is the body of the hidden "fenced demo-worker" command: a worker
// process the demo drives and pauses. args are the command's arguments; the
// result is the process exit code.
func Worker(ctx context.Context, args []string) int { return 0 }
