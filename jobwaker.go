package fenced

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/fenced/fenced/driver"
)

// jobWaker wakes the claims of a Client waiting on a queue when jobs may
// have arrived: on every enqueue through this Client (and every retry,
// resume, limit change and recovery that may make jobs claimable now) and, on a backend that
// notifies (PostgreSQL LISTEN/NOTIFY), on every enqueue anywhere, through
// one listener shared by the Client's workers and the HTTP service's long
// polls. The listener runs while someone holds it (ListenForJobs); it
// reconnects with backoff, and each time it is listening again it wakes
// every waiter, since notifications sent while it was not were lost.
type jobWaker struct {
	listener driver.JobListener // nil: the backend does not notify
	log      *slog.Logger

	mu      sync.Mutex
	queues  map[string]*wakeQueue
	holds   int
	stop    context.CancelFunc // of the running listener
	stopped chan struct{}      // closed when it has returned
}

// wakeQueue is one queue's waiters: ch is closed, and replaced, to wake
// them all.
type wakeQueue struct {
	ch      chan struct{}
	waiters int
}

// newJobWaker returns the waker of a Client whose backend notifies through
// listener (nil: it does not).
func newJobWaker(listener driver.JobListener, log *slog.Logger) *jobWaker {
	return &jobWaker{listener: listener, log: log, queues: map[string]*wakeQueue{}}
}

// wait registers a waiter on queue; woken is closed at the next wake. Call
// done when no longer waiting.
func (w *jobWaker) wait(queue string) (woken <-chan struct{}, done func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queues[queue]
	if q == nil {
		q = &wakeQueue{ch: make(chan struct{})}
		w.queues[queue] = q
	}
	q.waiters++
	return q.ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if q.waiters--; q.waiters == 0 && w.queues[queue] == q {
			delete(w.queues, queue)
		}
	}
}

// wake wakes the waiters of queue.
func (w *jobWaker) wake(queue string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if q := w.queues[queue]; q != nil {
		close(q.ch)
		q.ch = make(chan struct{})
	}
}

// wakeAll wakes every waiter.
func (w *jobWaker) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, q := range w.queues {
		close(q.ch)
		q.ch = make(chan struct{})
	}
}

// hold keeps the listener running until release is called, starting it
// if this is the first hold.
func (w *jobWaker) hold() (release func()) {
	if w.listener == nil {
		return func() {}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.holds++; w.holds == 1 {
		ctx, stop := context.WithCancel(context.Background())
		w.stop, w.stopped = stop, make(chan struct{})
		go w.listen(ctx, w.stopped)
	}
	var once sync.Once
	return func() { once.Do(w.release) }
}

// release drops a hold; the last one stops the listener and waits for it,
// so that its connection is back before the caller closes the pool.
func (w *jobWaker) release() {
	w.mu.Lock()
	w.holds--
	if w.holds > 0 {
		w.mu.Unlock()
		return
	}
	stop, stopped := w.stop, w.stopped
	w.mu.Unlock()
	stop()
	<-stopped
}

// listen keeps one listener connected until ctx ends.
func (w *jobWaker) listen(ctx context.Context, stopped chan struct{}) {
	defer close(stopped)
	const first, most = 100 * time.Millisecond, 30 * time.Second
	backoff := first
	for ctx.Err() == nil {
		start := time.Now()
		err := w.listener.ListenJobs(ctx, w.wakeAll, w.wake)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			backoff = first
		}
		w.log.Warn("fenced: job notifications interrupted; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, most)
	}
}

// WaitForJobs registers a wait for jobs on queue: woken is closed when jobs
// may have been enqueued there — by this Client, or, when
// NotifiesEnqueues and the listener is held (ListenForJobs), by anyone —
// and done must be called once the caller
// no longer waits. Register before the claim that found nothing, so that
// an enqueue between that claim and the wait is not missed; without
// notifications, jobs enqueued elsewhere or falling due (run_at) wake no
// one, so a waiter also polls. Workers use it; so does the HTTP service's
// long-polling claim.
func (c *Client) WaitForJobs(queue string) (woken <-chan struct{}, done func()) {
	return c.waker.wait(queue)
}

// ListenForJobs keeps the Client's enqueue listener running, on a backend
// that notifies, until release is called (by every caller that asked for
// it): WaitForJobs waiters are woken by enqueues anywhere meanwhile. It
// holds one connection. A Worker holds it while it runs; the HTTP service
// while it serves. Release it before closing the driver's pool.
func (c *Client) ListenForJobs() (release func()) { return c.waker.hold() }

// NotifiesEnqueues reports whether the backend wakes waiters on enqueues
// made by any client (PostgreSQL's LISTEN/NOTIFY), while ListenForJobs is
// held; otherwise only this Client's own enqueues do, and waiters must poll
// for the rest.
func (c *Client) NotifiesEnqueues() bool { return c.waker.listener != nil }
