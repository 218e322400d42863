package fenced

import (
	"context"
	"time"

	"github.com/fenced/fenced/driver"
)

// Resource is a value in the fenced resource store.
type Resource struct {
	Key       string
	Value     []byte
	Fence     int64 // fence of the write that stored Value
	Version   int64 // 1 on the first write, +1 on every accepted write
	UpdatedAt time.Time
}

// ResourceWrite is the outcome of an accepted write.
type ResourceWrite struct {
	Key     string
	Fence   int64 // the fence the write stored
	Version int64 // the version the write created
	// Replayed is true when the operation id had been seen before: this is
	// the first outcome returned again, and nothing was applied this time.
	Replayed bool
}

// WriteOptions are optional inputs of WriteResource.
type WriteOptions struct {
	// OperationID names one logical operation. A repeat with the same id (for
	// the same key), fence and value returns the first outcome — accepted or
	// stale — and applies nothing; the same id with another fence or value is
	// an invalid-input error (*InvalidError), and applies nothing either.
	// Empty means no deduplication.
	OperationID string
}

// WriteResource stores value under key iff fence is at least the fence stored
// there, in one statement, and stores fence with it. A lower fence gets a
// *StaleError carrying the stored fence; nothing changes.
//
// This is the protected-storage side of the fencing rule for resources that
// do not live in the caller's own tables: a holder writes with its lease's
// fence, and once a newer holder has written, the old one can no longer.
func (c *Client) WriteResource(ctx context.Context, key string, value []byte, fence int64, opts WriteOptions) (*ResourceWrite, error) {
	if err := validName("resource key", key); err != nil {
		return nil, err
	}
	if err := validFence(fence); err != nil {
		return nil, err
	}
	if len(value) > MaxValueBytes {
		return nil, driver.Invalid("value", "is %d bytes, the limit is %d", len(value), MaxValueBytes)
	}
	if value == nil {
		value = []byte{} // stored as empty, never NULL
	}
	if opts.OperationID != "" {
		if err := validName("operation id", opts.OperationID); err != nil {
			return nil, err
		}
	}
	r, err := c.d.ResourceWrite(ctx, driver.ResourceWriteParams{Key: key, Value: value, Fence: fence, OperationID: opts.OperationID})
	if err != nil {
		return nil, err
	}
	return &ResourceWrite{Key: r.Key, Fence: r.Fence, Version: r.Version, Replayed: r.Replayed}, nil
}

// ReadResource reads the value, fence and version stored under key, or
// ErrNotFound.
func (c *Client) ReadResource(ctx context.Context, key string) (*Resource, error) {
	if err := validName("resource key", key); err != nil {
		return nil, err
	}
	r, err := c.d.ResourceGet(ctx, key)
	if err != nil {
		return nil, err
	}
	return &Resource{Key: r.Key, Value: r.Value, Fence: r.Fence, Version: r.Version, UpdatedAt: r.UpdatedAt}, nil
}
