package main

import (
	"context"
	"io"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
	"github.com/spf13/cobra"
)

// callCmd is the skeleton of a command that makes one library call: it
// checks the input, opens the database, makes the call and prints what the
// call returned, as JSON with --json, else as text.
type callCmd[T any] struct {
	// read opens the database only to read it (openRead): the command
	// never creates or migrates it. Otherwise it is opened with open.
	read bool
	// check refuses bad input before the database is opened, so that a
	// refused input creates, migrates or changes nothing: the command's
	// own checks, then the library's check of the call's input
	// (fenced.ValidateAcquireLease for AcquireLease…). Nil checks nothing.
	check func(cmd *cobra.Command, args []string) error
	// call is the library call; an error it returns is the command's.
	call func(ctx context.Context, c *fenced.Client, args []string) (T, error)
	// json is what --json prints of the result; nil prints the result.
	json func(T) any
	// text prints the result without --json.
	text func(w io.Writer, v T) error
}

// build makes cmd, which has its use, help and Args, run the skeleton, and
// adds its --json flag.
func (s callCmd[T]) build(a *app, cmd *cobra.Command) *cobra.Command {
	var asJSON bool
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if s.check != nil {
			if err := s.check(cmd, args); err != nil {
				return err
			}
		}
		open := a.open
		if s.read {
			open = a.openRead
		}
		c, err := open(cmd.Context())
		if err != nil {
			return err
		}
		defer c.Close()
		v, err := s.call(cmd.Context(), c, args)
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		switch {
		case !asJSON:
			return s.text(w, v)
		case s.json != nil:
			return writeJSON(w, s.json(v))
		}
		return writeJSON(w, v)
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

// listJSON is the --json form of a list: [] when it is empty.
func listJSON[E any](s []E) any { return wire.List(s) }
