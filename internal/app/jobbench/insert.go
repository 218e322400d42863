package jobbench

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"

	"github.com/fenced/fenced"
)

// inserter enqueues no-op jobs in batches of InsertBatch (EnqueueBulk, as
// a producer that needs no job back would), each job's args
// numbering it ({"num": n}, as River's benchmark does). With keys, job n
// carries the concurrency key k<n mod keys>; with sequences, the sequence
// key s<n mod sequences>.
type inserter struct {
	c               *fenced.Client
	queue           string
	keys, sequences int
	fanOut, chain   int     // a workflow burn-down's (workflow.go)
	workflows       []int64 // the workflows it inserted
	batch           []fenced.EnqueueParams
	next            int
	done            atomic.Int64 // jobs inserted so far
}

func (b *bench) newInserter() *inserter {
	return &inserter{c: b.db.c, queue: b.o.Queue, keys: b.o.Keys, sequences: b.o.Sequences,
		fanOut: b.o.FanOut, chain: b.o.Chain, batch: make([]fenced.EnqueueParams, InsertBatch)}
}

// insert enqueues n jobs, a batch per statement, or as workflows.
func (in *inserter) insert(ctx context.Context, n int) error {
	if in.fanOut > 0 || in.chain > 0 {
		return in.insertWorkflows(ctx, n)
	}
	for n > 0 {
		k := min(n, InsertBatch)
		if err := in.insertBatch(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func (in *inserter) insertBatch(ctx context.Context, k int) error {
	ps := in.batch[:k]
	for i := range ps {
		in.next++
		args := strconv.AppendInt([]byte(`{"num":`), int64(in.next), 10)
		ps[i] = fenced.EnqueueParams{Kind: Kind, Queue: in.queue, Args: json.RawMessage(append(args, '}'))}
		if in.keys > 0 {
			ps[i].ConcurrencyKey = "k" + strconv.Itoa(in.next%in.keys)
		}
		if in.sequences > 0 {
			ps[i].SequenceKey = "s" + strconv.Itoa(in.next%in.sequences)
		}
	}
	if _, err := in.c.EnqueueBulk(ctx, nil, ps); err != nil {
		return err
	}
	in.done.Add(int64(k))
	return nil
}
