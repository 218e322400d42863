package jobbench

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/fenced/fenced"
)

// The concurrency keys and sequences of a run (Options.Keys, KeyLimit,
// Sequences) make every job take the limited claim of docs/design.md
// §6.10; the run measures what that costs. Its handler also watches what
// it runs: the most jobs of one key and of one sequence running at once
// in it, and any sequence job that started before an earlier one (by id)
// of its sequence. A handler runs inside its attempt, so these bound the
// queue's guarantee from below: a correct queue shows at most KeyLimit and
// 1, and no job out of order.

// limitScope is the run's queue-wide limit: every key's default PerKey.
type limitScope struct {
	c     *fenced.Client
	queue string
	prior *fenced.JobLimit // the queue's own limit before the run, if any
}

// declareKeyLimit gives the run's queue a per-key limit of limit, and
// returns what puts back the queue's own limit as it was.
func (b *bench) declareKeyLimit(ctx context.Context) (*limitScope, error) {
	s := &limitScope{c: b.db.c, queue: b.o.Queue}
	ls, err := s.c.ListJobLimits(ctx, s.queue)
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		if l.Kind == "" && l.ConcurrencyKey == "" {
			s.prior = &l
		}
	}
	l := fenced.JobLimit{Queue: s.queue, PerKey: b.o.KeyLimit}
	if s.prior != nil {
		l.Global = s.prior.Global
	}
	if _, err := s.c.SetJobLimit(ctx, l); err != nil {
		return nil, fmt.Errorf("declare the per-key limit: %w", err)
	}
	return s, nil
}

// restore puts back the queue's own limit as it was before the run.
func (s *limitScope) restore(ctx context.Context) error {
	var err error
	if s.prior != nil {
		_, err = s.c.SetJobLimit(ctx, *s.prior)
	} else if err = s.c.DeleteJobLimit(ctx, s.queue, "", ""); errors.Is(err, fenced.ErrNotFound) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("remove the per-key limit: %w", err)
	}
	return nil
}

// keyWatch counts the jobs of each key and sequence the handlers run.
type keyWatch struct {
	mu         sync.Mutex
	byKey      map[string]int   // running handlers by concurrency key
	bySeq      map[string]int   // by sequence key
	lastSeq    map[string]int64 // the highest job id started of each sequence
	maxKey     int
	maxSeq     int
	outOfOrder int64
}

func newKeyWatch() *keyWatch {
	return &keyWatch{byKey: map[string]int{}, bySeq: map[string]int{}, lastSeq: map[string]int64{}}
}

// wrap runs h between the watch's counts.
func (w *keyWatch) wrap(h fenced.Handler) fenced.Handler {
	return func(ctx context.Context, r *fenced.JobRun) error {
		w.enter(r.ID, r.ConcurrencyKey, r.SequenceKey)
		defer w.leave(r.ConcurrencyKey, r.SequenceKey)
		return h(ctx, r)
	}
}

func (w *keyWatch) enter(id int64, key, seq string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if key != "" {
		w.byKey[key]++
		w.maxKey = max(w.maxKey, w.byKey[key])
	}
	if seq != "" {
		w.bySeq[seq]++
		w.maxSeq = max(w.maxSeq, w.bySeq[seq])
		if id < w.lastSeq[seq] {
			w.outOfOrder++
		}
		w.lastSeq[seq] = max(w.lastSeq[seq], id)
	}
}

func (w *keyWatch) leave(key, seq string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if key != "" {
		w.byKey[key]--
	}
	if seq != "" {
		w.bySeq[seq]--
	}
}

// fill adds the watch's figures to res.
func (w *keyWatch) fill(res *Result) {
	w.mu.Lock()
	defer w.mu.Unlock()
	res.MaxRunningPerKey, res.MaxRunningPerSequence, res.SequenceOutOfOrder = w.maxKey, w.maxSeq, w.outOfOrder
}
