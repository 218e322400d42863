package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// Guard checks a guarded condition inside tx: check is a query that
// returns a row iff the condition holds (and, where the backend locks,
// locks that row until tx ends). When it returns none, diagnose, a read in
// the same transaction, says why: *fencedtype.StaleError or
// fencedtype.ErrNotFound. what names the guarded thing ("lease \"x\"",
// "job 7") in an error of the check itself.
func Guard(ctx context.Context, tx *sql.Tx, what string, diagnose func() error, check string, args ...any) error {
	var one int
	err := tx.QueryRowContext(ctx, check, args...).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return diagnose()
	case err != nil:
		return fmt.Errorf("guard %s: %w", what, err)
	}
	return nil
}

// DiagnoseLease explains why a write on ref changed nothing, from the lease
// row read through q with query (its one parameter is the name): the
// typed error of driver.DiagnoseLease, or the read's own error.
func DiagnoseLease(ctx context.Context, q Querier, scan func(Scanner) (*fencedtype.Lease, error), query string, ref driver.LeaseRef) error {
	l, err := One(ctx, q, scan, query, ref.Name)
	switch {
	case errors.Is(err, fencedtype.ErrNotFound):
		return driver.DiagnoseLease(ref, nil)
	case err != nil:
		return fmt.Errorf("read lease %q: %w", ref.Name, err)
	}
	return driver.DiagnoseLease(ref, l)
}

// DiagnoseJob explains why a guarded write on ref changed nothing, from
// the job row read through q with query (its one parameter is the id): the
// typed error of driver.DiagnoseJob, or the read's own error.
func DiagnoseJob(ctx context.Context, q Querier, scan func(Scanner) (*fencedtype.Job, error), query string, ref fencedtype.JobRef) error {
	j, err := One(ctx, q, scan, query, ref.ID)
	switch {
	case errors.Is(err, fencedtype.ErrNotFound):
		return driver.DiagnoseJob(ref, nil)
	case err != nil:
		return fmt.Errorf("read job %d: %w", ref.ID, err)
	}
	return driver.DiagnoseJob(ref, j)
}
