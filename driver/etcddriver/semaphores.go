package etcddriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// ErrSemaphoresNotSupported is what every semaphore method returns on etcd:
// the etcd backend keeps leases (a semaphore of one slot), fences and
// resources only. It matches errors.ErrUnsupported.
var ErrSemaphoresNotSupported = fmt.Errorf("semaphores are not offered on etcd, which keeps leases, fences and resources only: use a lease, or a PostgreSQL, MySQL or SQLite database: %w", errors.ErrUnsupported)

// AcquireSlot implements driver.SemaphoreDriver: ErrSemaphoresNotSupported.
func (d *Driver) AcquireSlot(context.Context, driver.AcquireSlotParams) (*fencedtype.Slot, error) {
	return nil, ErrSemaphoresNotSupported
}

// RenewSlot implements driver.SemaphoreDriver: ErrSemaphoresNotSupported.
func (d *Driver) RenewSlot(context.Context, driver.SlotRef, time.Duration) (*fencedtype.Slot, error) {
	return nil, ErrSemaphoresNotSupported
}

// ReleaseSlot implements driver.SemaphoreDriver: ErrSemaphoresNotSupported.
func (d *Driver) ReleaseSlot(context.Context, driver.SlotRef) (*fencedtype.Slot, error) {
	return nil, ErrSemaphoresNotSupported
}

// GetSemaphore implements driver.SemaphoreDriver: ErrSemaphoresNotSupported.
func (d *Driver) GetSemaphore(context.Context, string) (*fencedtype.Semaphore, error) {
	return nil, ErrSemaphoresNotSupported
}

// ListSemaphores implements driver.SemaphoreDriver: ErrSemaphoresNotSupported.
func (d *Driver) ListSemaphores(context.Context) ([]*fencedtype.Semaphore, error) {
	return nil, ErrSemaphoresNotSupported
}

// SlotTx implements driver.SemaphoreDriver: ErrSemaphoresNotSupported.
func (d *Driver) SlotTx(context.Context, driver.SlotRef, func(driver.Tx) error) error {
	return ErrSemaphoresNotSupported
}
