package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1 // any other error, and a job whose state forbids a cancel or retry
	exitUsage    = 2 // usage error or invalid input (fenced.ErrInvalid)
	exitHeld     = 3 // lease held by another owner (fenced.ErrHeld)
	exitStale    = 4 // stale fence (fenced.ErrStale)
	exitNotFound = 5 // lease, job or resource not found (fenced.ErrNotFound)
)

// usageError is a command line that cannot be run as given: an unknown
// command or flag, a missing argument or flag.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usage builds a *usageError.
func usage(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitStatus ends fenced with code, printing msg if it is not empty. It
// carries a status decided elsewhere, such as the exit status of the
// command "lease run" ran.
type exitStatus struct {
	code int
	msg  string
}

func (e *exitStatus) Error() string { return e.msg }

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	var st *exitStatus
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &st):
		return st.code
	case errors.As(err, &ue), errors.Is(err, fenced.ErrInvalid):
		return exitUsage
	case errors.Is(err, fenced.ErrHeld):
		return exitHeld
	case errors.Is(err, fenced.ErrStale):
		return exitStale
	case errors.Is(err, fenced.ErrNotFound):
		return exitNotFound
	case errors.Is(err, fenced.ErrJobFinished), errors.Is(err, fenced.ErrJobNotFinished):
		// A cancel of a finished job or a retry of an unfinished one is
		// well formed (not 2) and nothing is stale (not 4): the job's
		// state forbids it. Named here so that stays a decision.
		return exitError
	default:
		return exitError
	}
}

// report prints err to stderr as one line with any database password
// scrubbed, and a usage hint after a usage error of cmd.
func (a *app) report(cmd *cobra.Command, err error) {
	msg := a.scrub(oneLine(err.Error()))
	if msg != "" {
		fmt.Fprintf(a.stderr, "fenced: %s\n", msg)
	}
	var ue *usageError
	if errors.As(err, &ue) && cmd != nil {
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
}

// oneLine joins the lines of a multi-line message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// notFound names what was not found: `lease "x" not found`.
func notFound(kind, name string, err error) error {
	if errors.Is(err, fenced.ErrNotFound) {
		return fmt.Errorf("%s %s %w", kind, display.Quote(name), err)
	}
	return err
}
