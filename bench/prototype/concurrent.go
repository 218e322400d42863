package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// concurrent is what claimers racing for one queue achieved.
type concurrent struct {
	workers   int
	jobsPerS  float64
	claims    int64
	buffers   float64 // per claim statement
	serverMs  float64 // per claim statement
	emptyTake int64   // claims that returned nothing while jobs were left
}

// claimConcurrently runs workers claimers, each on its own connection,
// claiming and completing until the backlog is done: the lane lock of the
// append-only layout serializes them, today's SKIP LOCKED does not.
func claimConcurrently(ctx context.Context, dbURL string, l layout, cfg config) (*concurrent, error) {
	const ttlUS = int64(5 * time.Minute / time.Microsecond)
	conns := make([]*pgx.Conn, cfg.workers)
	for i := range conns {
		c, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return nil, err
		}
		defer c.Close(ctx)
		conns[i] = c
	}
	var (
		done, empty atomic.Int64
		wg          sync.WaitGroup
		errs        = make([]error, cfg.workers)
	)
	start := time.Now()
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < int64(cfg.jobs) {
				rows, err := c.Query(ctx, l.claim, "default", fmt.Sprint("w", i), cfg.batch, ttlUS)
				if err != nil {
					errs[i] = err
					return
				}
				var ids, fences []int64
				var outputs [][]byte
				for rows.Next() {
					v, err := rows.Values()
					if err != nil {
						errs[i] = err
						return
					}
					ids = append(ids, v[0].(int64))
					fences = append(fences, v[l.fenceCol].(int64))
					outputs = append(outputs, nil)
				}
				if err := rows.Err(); err != nil {
					errs[i] = err
					return
				}
				if len(ids) == 0 {
					// Nothing free (every shard held, or the rest of the
					// backlog in flight): wait a little, as a worker polls.
					empty.Add(1)
					time.Sleep(time.Millisecond)
					continue
				}
				tag, err := c.Exec(ctx, l.complete, ids, fences, outputs)
				if err != nil {
					errs[i] = err
					return
				}
				if int(tag.RowsAffected()) != len(ids) {
					errs[i] = fmt.Errorf("completed %d of %d", tag.RowsAffected(), len(ids))
					return
				}
				done.Add(int64(len(ids)))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	s, err := readStmt(ctx, conns[0], "claim")
	if err != nil {
		return nil, err
	}
	return &concurrent{workers: cfg.workers, jobsPerS: float64(done.Load()) / elapsed.Seconds(), claims: s.calls,
		buffers: float64(s.buffers) / float64(s.calls), serverMs: s.execMs / float64(s.calls), emptyTake: empty.Load()}, nil
}
