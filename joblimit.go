package fenced

import (
	"context"
	"fmt"

	"github.com/fenced/fenced/fencedtype"
)

// JobLimit is a declared limit on how many jobs of a queue run at once: a
// queue's or a kind's default per concurrency key and global bound, or one
// key's own limit. See fencedtype.JobLimit for the scopes and
// docs/design.md, "Concurrency limits and sequences", for the guarantee.
type JobLimit = fencedtype.JobLimit

// MaxJobLimit bounds PerKey and Global.
const MaxJobLimit = 1_000_000

// validScope checks the scope of a limit: a queue, optionally a kind or a
// concurrency key, not both.
func validScope(queue, kind, key string) error {
	if err := validQueue(queue); err != nil {
		return err
	}
	if kind != "" {
		if err := validName("kind", kind); err != nil {
			return err
		}
	}
	if key != "" {
		if err := validName("concurrency key", key); err != nil {
			return err
		}
		if kind != "" {
			return fencedtype.Invalid("kind", "a concurrency key's limit applies to every kind of its queue: give the key or the kind, not both")
		}
	}
	return nil
}

// ValidateSetJobLimit returns the *InvalidError SetJobLimit returns for this
// limit before it reaches the database, or nil.
func ValidateSetJobLimit(l JobLimit) error {
	if err := validScope(l.Queue, l.Kind, l.ConcurrencyKey); err != nil {
		return err
	}
	if l.PerKey < 0 || l.PerKey > MaxJobLimit {
		return fencedtype.Invalid("per_key", "%d is outside 0 to %d", l.PerKey, MaxJobLimit)
	}
	if l.Global < 0 || l.Global > MaxJobLimit {
		return fencedtype.Invalid("global", "%d is outside 0 to %d", l.Global, MaxJobLimit)
	}
	if l.ConcurrencyKey != "" {
		if l.Global != 0 {
			return fencedtype.Invalid("global", "a concurrency key's limit has no global bound: set it on the queue or a kind")
		}
		if l.PerKey == 0 {
			return fencedtype.Invalid("per_key", "a concurrency key's own limit must be above zero (delete it to fall back to the defaults)")
		}
	}
	return nil
}

// SetJobLimit declares l, replacing the limit of the same scope (queue,
// kind, concurrency key), and returns it as stored. Zero declares no limit
// in a field; a key's own limit must have PerKey above zero and Global zero.
// It applies to every claim that starts after it returns; jobs already
// running are not stopped when it lowers a limit. This Client's waiting
// claims on the queue are woken (a raised limit may admit jobs now).
func (c *Client) SetJobLimit(ctx context.Context, l JobLimit) (*JobLimit, error) {
	if err := ValidateSetJobLimit(l); err != nil {
		return nil, err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return nil, err
	}
	out, err := jd.SetJobLimit(ctx, l)
	if err == nil {
		c.waker.wake(l.Queue)
	}
	return out, err
}

// ValidateDeleteJobLimit returns the *InvalidError DeleteJobLimit returns for
// this scope before it reaches the database, or nil.
func ValidateDeleteJobLimit(queue, kind, concurrencyKey string) error {
	return validScope(queue, kind, concurrencyKey)
}

// DeleteJobLimit deletes the limit of one scope (kind and key empty for the
// queue's own); ErrNotFound when none is declared. This Client's waiting
// claims on the queue are woken.
func (c *Client) DeleteJobLimit(ctx context.Context, queue, kind, concurrencyKey string) error {
	if err := ValidateDeleteJobLimit(queue, kind, concurrencyKey); err != nil {
		return err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return err
	}
	if err := jd.DeleteJobLimit(ctx, queue, kind, concurrencyKey); err != nil {
		if err == fencedtype.ErrNotFound {
			return fmt.Errorf("job limit of queue %q kind %q key %q: %w", queue, kind, concurrencyKey, err)
		}
		return err
	}
	c.waker.wake(queue)
	return nil
}

// ValidateListJobLimits returns the *InvalidError ListJobLimits returns for
// this queue name before it reaches the database, or nil (empty: every
// queue).
func ValidateListJobLimits(queue string) error {
	if queue == "" {
		return nil
	}
	return validQueue(queue)
}

// ListJobLimits lists the declared limits of queue, or of every queue when
// it is empty, by queue, kind and key.
func (c *Client) ListJobLimits(ctx context.Context, queue string) ([]JobLimit, error) {
	if err := ValidateListJobLimits(queue); err != nil {
		return nil, err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return nil, err
	}
	return jd.ListJobLimits(ctx, queue)
}
