package pgdriver

import (
	"context"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
)

var _ driver.JobListener = (*Driver)(nil)

// ListenJobs implements driver.JobListener: it holds one pooled connection
// LISTENing on the channel the enqueue trigger notifies, and calls wake with
// each notified queue name until ctx ends or the connection fails.
//
// A pool of one connection cannot spare it: the listener would hold it for
// good and every other call would wait for ever. Then it listens to
// nothing until ctx ends, and waiters poll.
func (d *Driver) ListenJobs(ctx context.Context, listening func(), wake func(queue string)) error {
	if d.pool.Config().MaxConns < 2 {
		<-ctx.Done()
		return ctx.Err()
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("listen for jobs: %w", err)
	}
	// The connection never goes back to the pool: it still LISTENs (a wait
	// ended by the context leaves it open), and as a pooled connection it
	// would buffer every later notification in memory.
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn.Hijack().Close(cctx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN fenced_jobs`); err != nil {
		return fmt.Errorf("listen for jobs: %w", err)
	}
	listening()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("listen for jobs: %w", err)
		}
		wake(n.Payload)
	}
}
