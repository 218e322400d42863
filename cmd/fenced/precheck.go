package main

import (
	"context"
	"errors"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// errChecked is what every statement of checkDriver returns: the input got
// past the library's checks.
var errChecked = errors.New("input checked")

// checkDriver is a driver that runs no statement. The library checks every
// input before it calls its driver, so an operation on a client over
// checkDriver fails with fenced.ErrInvalid on bad input and with errChecked
// otherwise. Calling a method not defined here panics (the embedded
// interface is nil). It has the job queue and the semaphores, so that the
// Client reaches its methods.
type checkDriver struct{ checkedDriver }

// checkedDriver is the capabilities checkDriver stands in for.
type checkedDriver interface {
	driver.Driver
	driver.JobDriver
	driver.SemaphoreDriver
}

func (checkDriver) AcquireLease(context.Context, driver.AcquireLeaseParams) (*fencedtype.Lease, error) {
	return nil, errChecked
}
func (checkDriver) RenewLease(context.Context, driver.LeaseRef, time.Duration) (*fencedtype.Lease, error) {
	return nil, errChecked
}
func (checkDriver) ReleaseLease(context.Context, driver.LeaseRef) (*fencedtype.Lease, error) {
	return nil, errChecked
}
func (checkDriver) GetLease(context.Context, string) (*fencedtype.Lease, error) {
	return nil, errChecked
}
func (checkDriver) WriteResource(context.Context, driver.WriteResourceParams) (*fencedtype.ResourceWrite, error) {
	return nil, errChecked
}
func (checkDriver) ReadResource(context.Context, string) (*fencedtype.Resource, error) {
	return nil, errChecked
}
func (checkDriver) AdvanceFences(context.Context, int64) (int64, error) { return 0, errChecked }
func (checkDriver) Enqueue(context.Context, driver.Tx, []driver.EnqueueParams) ([]fencedtype.EnqueueResult, error) {
	return nil, errChecked
}
func (checkDriver) ListJobs(context.Context, fencedtype.JobFilter) ([]*fencedtype.Job, error) {
	return nil, errChecked
}

// checkInput runs op on a client that reaches no database and returns the
// library's verdict on its input: an error matching fenced.ErrInvalid, or
// nil. Commands call it before opening the database, so that bad input
// is refused before any database is created, migrated or changed.
func checkInput(ctx context.Context, op func(context.Context, *fenced.Client) error) error {
	err := op(ctx, fenced.New(checkDriver{}, fenced.Config{}))
	if errors.Is(err, fenced.ErrInvalid) {
		return err
	}
	return nil
}
