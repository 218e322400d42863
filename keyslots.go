package fenced

import (
	"context"

	"github.com/fenced/fenced/fencedtype"
)

// KeySlots is the load of one concurrency key of a queue: its limit, the
// slots in use and the due jobs waiting. See fencedtype.KeySlots.
type KeySlots = fencedtype.KeySlots

// ValidateListKeySlots returns the *InvalidError ListKeySlots returns for
// this queue name before it reaches the database, or nil (empty: every
// queue).
func ValidateListKeySlots(queue string) error {
	if queue == "" {
		return nil
	}
	return validQueue(queue)
}

// ListKeySlots reads the load of every concurrency key of queue (every
// queue when it is empty) that has running or due queued jobs, by queue and
// key, in one read: for each key, the running attempts (slots in use,
// expired attempts not yet recovered included), the queued jobs that are
// due, and the per-key limit the claim applies (0 none; see
// fencedtype.KeySlots for a key whose jobs are of several kinds). A key
// whose Running has reached a limit above zero holds back its waiting jobs
// (KeySlots.HeldBack). Keys with neither running nor due jobs are not
// listed; jobs without a concurrency key are not read.
func (c *Client) ListKeySlots(ctx context.Context, queue string) ([]KeySlots, error) {
	if err := ValidateListKeySlots(queue); err != nil {
		return nil, err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return nil, err
	}
	return jd.ListKeySlots(ctx, queue)
}
