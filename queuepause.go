package fenced

import (
	"context"

	"github.com/fenced/fenced/fencedtype"
)

// QueuePause is a paused queue and when it was paused. See
// fencedtype.QueuePause and docs/design.md, "Pausing a queue".
type QueuePause = fencedtype.QueuePause

// ValidatePauseQueue returns the *InvalidError PauseQueue returns for this
// queue name before it reaches the database, or nil.
func ValidatePauseQueue(queue string) error { return validQueue(queue) }

// PauseQueue pauses queue: no claim that starts after it returns takes a
// job of the queue (the claim statement itself checks for the pause), so
// workers and long-polling claims get nothing from it and wait as on an
// empty queue. Jobs already running keep running, heartbeating and ending
// with their fences; jobs can still be enqueued into the queue. It returns
// the pause as stored and whether this call paused the queue: pausing a
// paused queue changes nothing and returns the first pause, with false.
func (c *Client) PauseQueue(ctx context.Context, queue string) (*QueuePause, bool, error) {
	if err := ValidatePauseQueue(queue); err != nil {
		return nil, false, err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return nil, false, err
	}
	return jd.PauseQueue(ctx, queue)
}

// ValidateResumeQueue returns the *InvalidError ResumeQueue returns for
// this queue name before it reaches the database, or nil.
func ValidateResumeQueue(queue string) error { return validQueue(queue) }

// ResumeQueue resumes a paused queue: claims take its jobs again. It
// reports whether the queue was paused; resuming a queue that is not
// paused changes nothing and returns false. It wakes this Client's idle
// workers and long polls on the queue; on PostgreSQL it also notifies the
// listeners of every Client, as an enqueue does.
func (c *Client) ResumeQueue(ctx context.Context, queue string) (bool, error) {
	if err := ValidateResumeQueue(queue); err != nil {
		return false, err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return false, err
	}
	resumed, err := jd.ResumeQueue(ctx, queue)
	if err == nil && resumed {
		c.waker.wake(queue)
	}
	return resumed, err
}

// ListQueuePauses lists the paused queues by name.
func (c *Client) ListQueuePauses(ctx context.Context) ([]QueuePause, error) {
	jd, err := c.jobQueue()
	if err != nil {
		return nil, err
	}
	return jd.ListQueuePauses(ctx)
}
