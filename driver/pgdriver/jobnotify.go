package pgdriver

import (
	"context"
	"fmt"

	"github.com/fenced/fenced/driver"
)

var _ driver.JobNotifier = (*Driver)(nil)

// JobListen implements driver.JobNotifier: it holds one pooled connection
// LISTENing on the channel the enqueue trigger notifies, and calls wake with
// each notified queue name until ctx ends or the connection fails.
func (d *Driver) JobListen(ctx context.Context, wake func(queue string)) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("listen for jobs: %w", err)
	}
	// A connection interrupted mid-wait is not reusable: pgx closes it and
	// the pool drops it on release.
	defer conn.Release()
	if _, err := conn.Exec(ctx, `LISTEN fenced_jobs`); err != nil {
		return fmt.Errorf("listen for jobs: %w", err)
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() == nil {
				conn.Exec(context.Background(), `UNLISTEN *`)
			}
			return fmt.Errorf("listen for jobs: %w", err)
		}
		wake(n.Payload)
	}
}
