package main

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

type config struct {
	jobs, batch, window int
	heartbeat           bool // heartbeat every claimed batch once before it completes
	workers             int  // claimers racing (more than 1: throughput only, no windows)
}

// window is what the claims of one window of jobs cost.
type window struct {
	start      int     // jobs claimed since the pin when it began
	claims     int64   // claim statements (pg_stat_statements calls)
	buffers    float64 // shared buffers hit or read per claim
	serverMs   float64 // server execution time per claim
	clientP50  float64 // claim round trip, median, ms
	clientP99  float64
	endBuffers float64 // shared buffers per completion statement
}

// tableStats is what one table's statistics say the claims and ends wrote.
type tableStats struct {
	name                        string
	ins, upd, hot, dead, sizeKB int64
}

type result struct {
	layout      string
	pinned      bool
	jobs        int
	windows     []window
	enqueueWAL  float64 // WAL bytes per job enqueued (commit records included)
	claimWAL    float64 // WAL bytes per job of the claim statements
	endWAL      float64 // WAL bytes per job of the completion statements
	beatWAL     float64 // WAL bytes per job of the heartbeats (-1: none run)
	beatBuffers float64 // shared buffers per heartbeat statement
	tables      []tableStats
	reclaim     string
	concurrent  *concurrent // with more than one worker
	totalClient time.Duration
}

// stmt is pg_stat_statements' cumulative reading of one marked statement.
type stmt struct {
	calls        int64
	buffers, wal int64
	execMs       float64
}

func readStmt(ctx context.Context, c *pgx.Conn, marker string) (stmt, error) {
	var s stmt
	err := c.QueryRow(ctx, `SELECT COALESCE(sum(calls), 0)::bigint, COALESCE(sum(shared_blks_hit + shared_blks_read), 0)::bigint,
		COALESCE(sum(wal_bytes), 0)::bigint, COALESCE(sum(total_exec_time), 0)::float8
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND query LIKE $1`, "/*proto:"+marker+"*/%").Scan(&s.calls, &s.buffers, &s.wal, &s.execMs)
	return s, err
}

func run(ctx context.Context, base string, l layout, pinned bool, cfg config) (*result, error) {
	mode := map[bool]string{true: "pinned", false: "unpinned"}[pinned]
	db := "proto_" + strings.NewReplacer("-", "_", "+", "_").Replace(l.name) + "_" + mode
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return nil, err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
		return nil, err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		return nil, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	u.Path = "/" + db
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return nil, err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		return nil, err
	}
	if _, err := c.Exec(ctx, l.schema); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	r := &result{layout: l.name, pinned: pinned, jobs: cfg.jobs}

	// The backlog, 1,000 jobs a transaction.
	lsn0, err := walLSN(ctx, c)
	if err != nil {
		return nil, err
	}
	for n := 0; n < cfg.jobs; n += 1000 {
		err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if l.lock != "" {
				if _, err := tx.Exec(ctx, l.lock); err != nil {
					return err
				}
			}
			_, err := tx.Exec(ctx, l.enqueue, min(1000, cfg.jobs-n))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("enqueue: %w", err)
		}
	}
	lsn1, err := walLSN(ctx, c)
	if err != nil {
		return nil, err
	}
	r.enqueueWAL = float64(lsn1-lsn0) / float64(cfg.jobs)
	for _, q := range []string{"VACUUM ANALYZE", "CHECKPOINT", "SELECT pg_stat_statements_reset()"} {
		if _, err := c.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	before, err := readTables(ctx, c, l.tables)
	if err != nil {
		return nil, err
	}

	var pin pgx.Tx
	if pinned {
		pc, err := pgx.Connect(ctx, u.String())
		if err != nil {
			return nil, err
		}
		defer pc.Close(ctx)
		pin, err = pc.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err != nil {
			return nil, err
		}
		if _, err := pin.Exec(ctx, "SELECT count(*) FROM pg_class"); err != nil {
			return nil, err
		}
	}

	if cfg.workers > 1 {
		cc, err := claimConcurrently(ctx, u.String(), l, cfg)
		if err != nil {
			return nil, err
		}
		r.concurrent = cc
		fmt.Printf("--- %s, %s: %d jobs, %d a claim, %d claimers: %.0f jobs/s, %d claims (%d empty), %.1f buffers and %.3f ms a claim\n",
			l.name, mode, cfg.jobs, cfg.batch, cc.workers, cc.jobsPerS, cc.claims, cc.emptyTake, cc.buffers, cc.serverMs)
		if pin != nil {
			if err := pin.Rollback(ctx); err != nil {
				return nil, err
			}
		}
		return r, nil
	}
	fmt.Printf("--- %s, %s: %d jobs, %d a claim\n", l.name, mode, cfg.jobs, cfg.batch)
	fmt.Printf("%8s %8s %10s %10s %10s %10s %10s\n", "claimed", "claims", "buf/claim", "srv ms", "p50 ms", "p99 ms", "buf/end")
	const ttlUS = int64(5 * time.Minute / time.Microsecond)
	var (
		claimed  int
		lat      []float64
		last     stmt
		lastEnd  stmt
		ids      = make([]int64, 0, cfg.batch)
		fences   = make([]int64, 0, cfg.batch)
		outputs  = make([][]byte, 0, cfg.batch)
		started  = time.Now()
		winStart = 0
	)
	for claimed < cfg.jobs {
		ids, fences, outputs = ids[:0], fences[:0], outputs[:0]
		t0 := time.Now()
		rows, err := c.Query(ctx, l.claim, "default", "proto", cfg.batch, ttlUS)
		if err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				return nil, err
			}
			ids = append(ids, v[0].(int64))
			fences = append(fences, v[l.fenceCol].(int64))
			outputs = append(outputs, nil)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
		if len(ids) == 0 {
			return nil, fmt.Errorf("claim found nothing after %d jobs", claimed)
		}
		if cfg.heartbeat && l.heartbeat != "" {
			tag, err := c.Exec(ctx, l.heartbeat, ids, fences, ttlUS)
			if err != nil {
				return nil, fmt.Errorf("heartbeat: %w", err)
			}
			if int(tag.RowsAffected()) != len(ids) {
				return nil, fmt.Errorf("heartbeat extended %d of %d", tag.RowsAffected(), len(ids))
			}
		}
		tag, err := c.Exec(ctx, l.complete, ids, fences, outputs)
		if err != nil {
			return nil, fmt.Errorf("complete: %w", err)
		}
		if int(tag.RowsAffected()) != len(ids) {
			return nil, fmt.Errorf("completed %d of %d", tag.RowsAffected(), len(ids))
		}
		claimed += len(ids)
		if claimed-winStart >= cfg.window || claimed >= cfg.jobs {
			s, err := readStmt(ctx, c, "claim")
			if err != nil {
				return nil, err
			}
			e, err := readStmt(ctx, c, "complete")
			if err != nil {
				return nil, err
			}
			sort.Float64s(lat)
			w := window{start: winStart, claims: s.calls - last.calls,
				clientP50: lat[len(lat)/2], clientP99: lat[len(lat)*99/100]}
			w.buffers = float64(s.buffers-last.buffers) / float64(w.claims)
			w.serverMs = (s.execMs - last.execMs) / float64(w.claims)
			w.endBuffers = float64(e.buffers-lastEnd.buffers) / float64(e.calls-lastEnd.calls)
			r.windows = append(r.windows, w)
			fmt.Printf("%8d %8d %10.1f %10.3f %10.3f %10.3f %10.1f\n", w.start, w.claims, w.buffers, w.serverMs, w.clientP50, w.clientP99, w.endBuffers)
			last, lastEnd, lat, winStart = s, e, lat[:0], claimed
		}
	}
	r.totalClient = time.Since(started)
	r.claimWAL = float64(last.wal) / float64(claimed)
	r.endWAL = float64(lastEnd.wal) / float64(claimed)
	r.beatWAL = -1
	if cfg.heartbeat && l.heartbeat != "" {
		b, err := readStmt(ctx, c, "heartbeat")
		if err != nil {
			return nil, err
		}
		r.beatWAL = float64(b.wal) / float64(claimed)
		r.beatBuffers = float64(b.buffers) / float64(b.calls)
	}
	after, err := readTables(ctx, c, l.tables)
	if err != nil {
		return nil, err
	}
	r.tables = diffTables(before, after)
	if l.schema != todaySchema {
		r.reclaim, err = reclaimSlot(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("reclaim: %w", err)
		}
	}
	if pin != nil {
		if err := pin.Rollback(ctx); err != nil {
			return nil, err
		}
	}
	printTables(r)
	return r, nil
}

func walLSN(ctx context.Context, c *pgx.Conn) (int64, error) {
	var n int64
	err := c.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint").Scan(&n)
	return n, err
}
