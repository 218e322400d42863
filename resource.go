package fenced

import (
	"context"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// Resource is a value in the fenced resource store.
type Resource = fencedtype.Resource

// ResourceWrite is the outcome of an accepted write.
type ResourceWrite = fencedtype.ResourceWrite

// WriteOptions are optional inputs of WriteResource.
type WriteOptions struct {
	// OperationID names one logical operation. A repeat with the same id (for
	// the same key), fence and value returns the first outcome — accepted or
	// stale — and applies nothing; the same id with another fence or value is
	// an invalid-input error (*InvalidError), and applies nothing either.
	// Empty means no deduplication.
	OperationID string
}

// ValidateWriteResource returns the *InvalidError WriteResource returns for
// this input before it reaches the database, or nil.
func ValidateWriteResource(key string, value []byte, fence int64, opts WriteOptions) error {
	if err := validName("resource key", key); err != nil {
		return err
	}
	if err := validFence(fence); err != nil {
		return err
	}
	if len(value) > MaxValueBytes {
		return fencedtype.Invalid("value", "is %d bytes, the limit is %d", len(value), MaxValueBytes)
	}
	if opts.OperationID != "" {
		return validName("operation id", opts.OperationID)
	}
	return nil
}

// WriteResource stores value under key iff fence is at least the fence stored
// there, in one statement, and stores fence with it. A lower fence gets a
// *StaleError carrying the stored fence; nothing changes.
//
// This is the protected-storage side of the fencing rule for resources that
// do not live in the caller's own tables: a holder writes with its lease's
// fence, and once a newer holder has written, the old one can no longer.
func (c *Client) WriteResource(ctx context.Context, key string, value []byte, fence int64, opts WriteOptions) (*ResourceWrite, error) {
	if err := ValidateWriteResource(key, value, fence, opts); err != nil {
		return nil, err
	}
	if value == nil {
		value = []byte{} // stored as empty, never NULL
	}
	return c.d.WriteResource(ctx, driver.WriteResourceParams{Key: key, Value: value, Fence: fence, OperationID: opts.OperationID})
}

// ValidateReadResource returns the *InvalidError ReadResource returns for
// this key before it reaches the database, or nil.
func ValidateReadResource(key string) error { return validName("resource key", key) }

// ReadResource reads the value, fence and version stored under key, or
// ErrNotFound.
func (c *Client) ReadResource(ctx context.Context, key string) (*Resource, error) {
	if err := ValidateReadResource(key); err != nil {
		return nil, err
	}
	return c.d.ReadResource(ctx, key)
}
