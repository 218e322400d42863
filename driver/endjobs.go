package driver

import (
	"context"
	"fmt"

	"github.com/fenced/fenced/fencedtype"
)

// EndJobsIn is JobDriver.EndJobs for a backend that ends a batch with a
// function of its own transaction type T (a *sql.Tx for the database/sql
// backends): inside the caller's transaction when tx is non-nil, or else
// inside one transaction of the backend's own.
//
// unwrap turns the caller's Tx into a T, or refuses a transaction of
// another backend with an *InvalidError (returned as it is). own runs a
// function in a new transaction and commits it when the function returns
// nil; it may run it again (a retried deadlock), and end's results are
// then those of the last run. end ends the batch inside a T, returning
// each end's error (nil, or its diagnosed *StaleError or ErrNotFound) and
// how each end that held was recorded (see EndJobs).
func EndJobsIn[T any](ctx context.Context, tx Tx, ends []fencedtype.JobEnd,
	unwrap func(Tx) (T, error),
	own func(context.Context, func(T) error) error,
	end func(context.Context, T, []fencedtype.JobEnd) ([]error, []fencedtype.JobEnded, error),
) ([]error, []fencedtype.JobEnded, error) {
	var out []error
	var ended []fencedtype.JobEnded
	run := func(t T) (err error) {
		out, ended, err = end(ctx, t, ends)
		return err
	}
	var err error
	if tx == nil {
		err = own(ctx, run)
	} else {
		t, uerr := unwrap(tx)
		if uerr != nil {
			return nil, nil, uerr
		}
		err = run(t)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("end jobs: %w", err)
	}
	return out, ended, nil
}
