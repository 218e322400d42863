package server

import (
	"context"
	"sync"
	"time"

	"github.com/fenced/fenced/driver"
)

// waker wakes claims waiting on a queue when jobs may have arrived: on
// every enqueue through this server, and, on a backend that notifies
// (PostgreSQL LISTEN/NOTIFY), on every enqueue anywhere, through one
// shared listener.
type waker struct {
	mu     sync.Mutex
	queues map[string]*wakeQueue
}

// wakeQueue is one queue's waiters: ch is closed (and replaced) to wake
// them all.
type wakeQueue struct {
	ch      chan struct{}
	waiters int
}

func newWaker() *waker { return &waker{queues: map[string]*wakeQueue{}} }

// wait registers a waiter on queue; the channel is closed at the next wake.
// Call done when no longer waiting. Register before the claim that found
// nothing, so a wake between that claim and the wait is not missed.
func (w *waker) wait(queue string) (woken <-chan struct{}, done func()) {
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
func (w *waker) wake(queue string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if q := w.queues[queue]; q != nil {
		close(q.ch)
		q.ch = make(chan struct{})
	}
}

// wakeAll wakes every waiter (after the listener reconnects, when
// notifications may have been missed).
func (w *waker) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, q := range w.queues {
		close(q.ch)
		q.ch = make(chan struct{})
	}
}

// listen starts the shared job listener if the backend notifies, and
// reports whether it does. The listener reconnects with backoff until ctx
// ends; waiting claims also poll, so a broken listener only slows them.
func (s *Server) listen(ctx context.Context) bool {
	n, ok := s.c.Driver().(driver.JobListener)
	if !ok {
		return false
	}
	s.bg.Go(func() {
		backoff := 100 * time.Millisecond
		for ctx.Err() == nil {
			start := time.Now()
			s.wake.wakeAll()
			err := n.ListenJobs(ctx, s.wake.wake)
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("job listener stopped; reconnecting", "err", s.cfg.Redact(err.Error()), "in", backoff)
			if time.Since(start) > time.Minute {
				backoff = 100 * time.Millisecond
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
		}
	})
	return true
}
