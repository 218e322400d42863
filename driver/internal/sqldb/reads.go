package sqldb

import (
	"context"
	"errors"
	"fmt"
	"github.com/fenced/fenced/driver/internal/reads"

	"github.com/fenced/fenced/fencedtype"
)

// The reads below are the same in both backends but for the statement and
// how a row is scanned (each stores times its own way), which the caller
// passes.

// GetLease reads the lease name with query (its one parameter is the name)
// through q: fencedtype.ErrNotFound, unwrapped, when there is none.
func GetLease(ctx context.Context, q Querier, scan func(Scanner) (*fencedtype.Lease, error), query, name string) (*fencedtype.Lease, error) {
	l, err := One(ctx, q, scan, query, name)
	if err != nil && !errors.Is(err, fencedtype.ErrNotFound) {
		return nil, fmt.Errorf("get lease %q: %w", name, err)
	}
	return l, err
}

// ListLeases reads every lease with query, in its order.
func ListLeases(ctx context.Context, q Querier, scan func(Scanner) (*fencedtype.Lease, error), query string) ([]*fencedtype.Lease, error) {
	ls, err := All(ctx, q, scan, query)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	return ls, nil
}

// CountJobs counts jobs by queue and state with query, whose rows are
// queue, state, count.
func CountJobs(ctx context.Context, q Querier, query string) ([]fencedtype.JobCount, error) {
	counts, err := All(ctx, q, reads.ScanJobCount, query)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	return counts, nil
}
