package fenced

import (
	"context"

	"github.com/fenced/fenced/fencedtype"
)

// DefaultAdvance is the step AdvanceFences uses when given 0: room for a
// billion grants made after the backup that was restored.
const DefaultAdvance int64 = 1_000_000_000

// ValidateAdvanceFences returns the *InvalidError AdvanceFences returns for
// this step before it reaches the database, or nil.
func ValidateAdvanceFences(by int64) error {
	if by < 0 {
		return fencedtype.Invalid("advance", "%d is negative", by)
	}
	return nil
}

// AdvanceFences makes every fence granted from now on greater than every fence
// granted before, after the database was restored from a backup or an
// asynchronous replica was promoted (either can be behind fences that
// protected resources have already seen).
//
// Every lease's fence is raised to a new floor, max(stored fences) + by, and
// every lease ends (holders get a stale error and must acquire again); names
// not yet in the database start above the floor. by must exceed the number of
// grants the restored copy may have missed; 0 means DefaultAdvance. Run it once
// after a restore or failover, before workers start again. It returns the new
// floor.
func (c *Client) AdvanceFences(ctx context.Context, by int64) (int64, error) {
	if err := ValidateAdvanceFences(by); err != nil {
		return 0, err
	}
	if by == 0 {
		by = DefaultAdvance
	}
	return c.d.AdvanceFences(ctx, by)
}
