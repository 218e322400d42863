package sqldb

import (
	"context"
	"errors"
	"fmt"
	"github.com/fenced/fenced/driver/internal/reads"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// The semaphore reads below are the same in both backends but for the
// statements and how a row is scanned, which the caller passes.

// SlotQueries are a backend's statements and row scans for the semaphore
// reads: LastFence reads a name's last granted fence (parameter: name),
// SlotByFence the slot row carrying a fence (parameters: name, fence),
// scanned by ScanSlot; Get and List read semaphore rows (Get's parameter:
// name), scanned by ScanRow.
type SlotQueries struct {
	LastFence, SlotByFence string
	ScanSlot               func(Scanner) (*fencedtype.Slot, error)
	Get, List              string
	ScanRow                func(Scanner) (reads.SemaphoreRow, error)
}

// DiagnoseSlot reads, through q, why a write on ref changed nothing: the
// typed error of driver.DiagnoseSlot, or (second) the reads' own error.
func (sq SlotQueries) DiagnoseSlot(ctx context.Context, q Querier, ref driver.SlotRef) (refused, err error) {
	byFence := func(fence int64) (*fencedtype.Slot, error) {
		s, err := One(ctx, q, sq.ScanSlot, sq.SlotByFence, ref.Name, fence)
		if errors.Is(err, fencedtype.ErrNotFound) {
			return nil, nil
		}
		return s, err
	}
	last, err := One(ctx, q, Value[int64], sq.LastFence, ref.Name)
	if errors.Is(err, fencedtype.ErrNotFound) {
		return driver.DiagnoseSlot(ref, false, 0, nil, nil), nil
	}
	if err != nil {
		return nil, err
	}
	grant, err := byFence(ref.Fence)
	var newest *fencedtype.Slot
	if err == nil && grant == nil {
		newest, err = byFence(last)
	}
	if err != nil {
		return nil, err
	}
	return driver.DiagnoseSlot(ref, true, last, grant, newest), nil
}

// GetSemaphore reads the semaphore name through q: fencedtype.ErrNotFound,
// unwrapped, when there is none.
func (sq SlotQueries) GetSemaphore(ctx context.Context, q Querier, name string) (*fencedtype.Semaphore, error) {
	rs, err := All(ctx, q, sq.ScanRow, sq.Get, name)
	if err != nil {
		return nil, fmt.Errorf("get semaphore %q: %w", name, err)
	}
	if len(rs) == 0 {
		return nil, fencedtype.ErrNotFound
	}
	return reads.GroupSemaphores(rs)[0], nil
}

// ListSemaphores reads every semaphore through q.
func (sq SlotQueries) ListSemaphores(ctx context.Context, q Querier) ([]*fencedtype.Semaphore, error) {
	rs, err := All(ctx, q, sq.ScanRow, sq.List)
	if err != nil {
		return nil, fmt.Errorf("list semaphores: %w", err)
	}
	return reads.GroupSemaphores(rs), nil
}
