// Package driver is the narrow contract between fenced and a database backend.
//
// Each method is one conditional statement or one short transaction; the
// deciding condition (owner, fence, expiry by the database clock) is always
// inside the statement, never checked in Go first. A method that changes
// nothing because its condition failed diagnoses why by reading the row
// afterwards and returns *fencedtype.StaleError, *fencedtype.HeldError or fencedtype.ErrNotFound.
//
// Input reaching a driver has been validated by the root package.
//
// # Core and capabilities
//
// Driver is the core every backend implements: leases, fenced
// transactions on a lease, the resource store, fence advances and leader
// election. Everything else is a capability: an interface of its own that a
// backend implements, or not. JobDriver (the job queue), SemaphoreDriver
// and Clock are parts of the API that fail without them; BulkEnqueuer,
// JobListener, JobTidier and FenceFloorReader make a part cheaper or more
// exact, and the API does without them. A backend declares each one it
// implements with a compile-time assertion beside it
// (var _ driver.JobDriver = (*Driver)(nil)) and declares nothing for the
// others: no method that answers "not supported". fenced.New asserts each
// capability once and keeps what it found on the Client; a method of a
// capability the backend lacks returns that capability's error
// (fenced.ErrJobsNotSupported, …) without reaching the driver, and
// Client.Supports answers the question for those, such as the HTTP service,
// that decide once what they offer. A new capability follows the same
// pattern: its interface here, its assertion in New, its fenced.Capability
// and error, and its groups in the conformance suite, which skip on a
// backend without it.
package driver

import (
	"context"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// Driver is the core every backend package implements: the lease and
// resource methods below and leader election (CampaignDriver). The job
// queue (JobDriver), the semaphores (SemaphoreDriver) and the other
// capabilities are interfaces of their own (see the package doc).
type Driver interface {
	CampaignDriver

	// Dialect names the backend: fencedtype.DialectPostgres,
	// DialectSQLite, DialectMySQL or DialectEtcd.
	Dialect() fencedtype.Dialect
	// Migrate applies the embedded schema migrations that are not yet applied
	// and returns the versions it applied. Safe to run concurrently.
	Migrate(ctx context.Context) ([]int, error)
	// PendingMigrations returns the versions of the embedded migrations the
	// database has not had yet, in order (all of them on a database never
	// migrated). It only reads: no lock, no write.
	PendingMigrations(ctx context.Context) ([]int, error)
	// Close releases the driver's connections.
	Close() error

	// AcquireLease grants the lease when free (never held, released, or
	// expired by the database clock) with fence+1, or extends it keeping the
	// fence when the same owner holds it unexpired. Otherwise *fencedtype.HeldError.
	AcquireLease(ctx context.Context, p AcquireLeaseParams) (*fencedtype.Lease, error)
	// RenewLease extends an unexpired, unreleased lease whose name, owner and
	// fence match. Otherwise *fencedtype.StaleError or fencedtype.ErrNotFound.
	RenewLease(ctx context.Context, ref LeaseRef, ttl time.Duration) (*fencedtype.Lease, error)
	// ReleaseLease marks the generation released; the row and its fence stay.
	// Releasing an already released generation succeeds. Otherwise
	// *fencedtype.StaleError or fencedtype.ErrNotFound.
	ReleaseLease(ctx context.Context, ref LeaseRef) (*fencedtype.Lease, error)
	// GetLease reads one lease, with Held decided by the database clock.
	GetLease(ctx context.Context, name string) (*fencedtype.Lease, error)
	// ListLeases reads every lease ordered by name.
	ListLeases(ctx context.Context) ([]*fencedtype.Lease, error)
	// LeaseTx runs fn in a transaction that first locks the lease row in
	// share mode (a write transaction on SQLite) and checks owner, fence and
	// expiry. A failed check returns *fencedtype.StaleError without calling fn; an error
	// from fn rolls back. While the transaction is open a takeover blocks.
	LeaseTx(ctx context.Context, ref LeaseRef, fn func(Tx) error) error

	// WriteResource stores value under key iff fence >= the stored fence, in
	// one statement. With an operation id, the first outcome for (key, op) is
	// recorded and returned again on repeat without applying twice.
	WriteResource(ctx context.Context, p WriteResourceParams) (*fencedtype.ResourceWrite, error)
	// ReadResource reads one resource.
	ReadResource(ctx context.Context, key string) (*fencedtype.Resource, error)

	// AdvanceFences makes every fence granted afterwards greater than every
	// fence stored now plus by, and ends every current lease and semaphore
	// slot grant. It returns the new floor.
	AdvanceFences(ctx context.Context, by int64) (int64, error)
}

// AcquireLeaseParams are the inputs of AcquireLease.
type AcquireLeaseParams struct {
	Name  string
	Owner string
	TTL   time.Duration
}

// LeaseRef identifies one generation of a lease as its holder knows it.
type LeaseRef struct {
	Name  string
	Owner string
	Fence int64
}

// WriteResourceParams are the inputs of ResourceWrite.
type WriteResourceParams struct {
	Key         string
	Value       []byte
	Fence       int64
	OperationID string // optional
}

// Tx is the caller's handle inside a fenced transaction. SQL is the
// backend's own dialect, with the backend's placeholders.
type Tx interface {
	// Exec runs a statement and returns the number of rows it affected.
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	// Query runs a query; the caller closes the rows.
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	// QueryRow runs a query expected to return at most one row.
	QueryRow(ctx context.Context, sql string, args ...any) Row
}

// Row is one result row.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result set.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}
