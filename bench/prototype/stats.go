package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// readTables reads the statistics of the tables matching pattern, once this
// backend's pending counts are flushed.
func readTables(ctx context.Context, c *pgx.Conn, pattern string) (map[string]tableStats, error) {
	if _, err := c.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		return nil, err
	}
	if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
		return nil, err
	}
	time.Sleep(100 * time.Millisecond)
	rows, err := c.Query(ctx, `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_dead_tup,
		pg_total_relation_size(relid) / 1024 FROM pg_stat_user_tables WHERE relname LIKE $1 ORDER BY relname`, pattern)
	if err != nil {
		return nil, err
	}
	m := map[string]tableStats{}
	for rows.Next() {
		var t tableStats
		if err := rows.Scan(&t.name, &t.ins, &t.upd, &t.hot, &t.dead, &t.sizeKB); err != nil {
			return nil, err
		}
		m[t.name] = t
	}
	return m, rows.Err()
}

// diffTables is what the claims and ends wrote: counts since before, dead
// tuples and size as they are after.
func diffTables(before, after map[string]tableStats) []tableStats {
	var out []tableStats
	for name, a := range after {
		b := before[name]
		if a.ins == b.ins && a.upd == b.upd {
			continue
		}
		out = append(out, tableStats{name: name, ins: a.ins - b.ins, upd: a.upd - b.upd, hot: a.hot - b.hot, dead: a.dead, sizeKB: a.sizeKB})
	}
	sortTables(out)
	return out
}

func sortTables(t []tableStats) {
	for i := 1; i < len(t); i++ {
		for j := i; j > 0 && t[j].name < t[j-1].name; j-- {
			t[j], t[j-1] = t[j-1], t[j]
		}
	}
}

func printTables(r *result) {
	fmt.Printf("WAL bytes a job: enqueue %.0f, claim %.0f, complete %.0f; %d jobs in %s\n",
		r.enqueueWAL, r.claimWAL, r.endWAL, r.jobs, r.totalClient.Round(time.Millisecond))
	fmt.Printf("%-28s %10s %10s %10s %10s %10s\n", "table (claims and ends)", "ins/job", "upd/job", "hot/job", "dead", "size KB")
	for _, t := range r.tables {
		n := float64(r.jobs)
		fmt.Printf("%-28s %10.2f %10.2f %10.2f %10d %10d\n", t.name, float64(t.ins)/n, float64(t.upd)/n, float64(t.hot)/n, t.dead, t.sizeKB)
	}
	if r.beatWAL >= 0 {
		fmt.Printf("heartbeat: %.0f WAL bytes a job, %.1f buffers a statement\n", r.beatWAL, r.beatBuffers)
	}
	if r.reclaim != "" {
		fmt.Println(r.reclaim)
	}
}

// reclaimSlot rotates the ring and reclaims slot 0 as the design's
// maintainer would: under ACCESS EXCLUSIVE locks of the slot's partitions
// (bounded by lock_timeout, so a reader holding one never queues the hot
// path behind the truncate for long), it proves every ready entry consumed
// and every receipt closed, and only then truncates the slot. It runs while
// the snapshot is still pinned.
func reclaimSlot(ctx context.Context, c *pgx.Conn) (string, error) {
	if _, err := c.Exec(ctx, "INSERT INTO fenced_ring (generation, slot) SELECT max(generation) + 1, 1 FROM fenced_ring"); err != nil {
		return "", err
	}
	var msg string
	t0 := time.Now()
	err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		for _, q := range []string{
			"SET LOCAL lock_timeout = '2s'",
			"LOCK TABLE fenced_ready_0, fenced_ready_tombstones_0, fenced_receipts_0, fenced_closures_0 IN ACCESS EXCLUSIVE MODE",
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		var unconsumed, open int64
		err := tx.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM fenced_ready_0 e WHERE NOT EXISTS (SELECT 1 FROM fenced_receipts r
				WHERE r.queue = e.queue AND r.priority = e.priority AND r.ready_seq = e.seq)
				AND NOT EXISTS (SELECT 1 FROM fenced_ready_tombstones t WHERE t.job_id = e.job_id AND t.attempt = e.attempt)),
			(SELECT count(*) FROM fenced_receipts_0 r WHERE NOT EXISTS (SELECT 1 FROM fenced_closures_0 x
				WHERE x.job_id = r.job_id AND x.fence = r.fence AND x.slot = r.slot))`).Scan(&unconsumed, &open)
		if err != nil {
			return err
		}
		if unconsumed > 0 || open > 0 {
			msg = fmt.Sprintf("slot 0 not reclaimable: %d ready entries unconsumed, %d receipts open", unconsumed, open)
			return nil
		}
		var kb int64
		if err := tx.QueryRow(ctx, `SELECT sum(pg_total_relation_size(r)) / 1024 FROM unnest(ARRAY['fenced_ready_0', 'fenced_receipts_0', 'fenced_closures_0']::regclass[]) r`).Scan(&kb); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "TRUNCATE fenced_ready_0, fenced_ready_tombstones_0, fenced_receipts_0, fenced_closures_0"); err != nil {
			return err
		}
		msg = fmt.Sprintf("slot 0 proven done (0 unconsumed, 0 open) and truncated while the snapshot is held: %d KB freed in %s (proof included)", kb, time.Since(t0).Round(time.Millisecond))
		return nil
	})
	return msg, err
}

// summarize prints the table of docs/storage.md: buffers and latency per
// claim at each point, both layouts, pinned and not.
func summarize(w io.Writer, results []*result, points []int) {
	fmt.Fprintln(w, "| layout | pin | "+strings.Join(pointLabels(points), " | ")+" |")
	fmt.Fprintln(w, "|---|---|"+strings.Repeat("---|", len(points)))
	for _, r := range results {
		var cells []string
		for _, p := range points {
			w := at(r, p)
			cells = append(cells, fmt.Sprintf("%.0f buf, %.2f ms (p50 %.2f)", w.buffers, w.serverMs, w.clientP50))
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", r.layout, map[bool]string{true: "pinned", false: "none"}[r.pinned], strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| layout | pin | WAL B/job enqueue | claim | complete | claim+complete | heartbeat |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range results {
		beat := "-"
		if r.beatWAL >= 0 {
			beat = fmt.Sprintf("%.0f", r.beatWAL)
		}
		fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %.0f | %.0f | %s |\n", r.layout, map[bool]string{true: "pinned", false: "none"}[r.pinned],
			r.enqueueWAL, r.claimWAL, r.endWAL, r.claimWAL+r.endWAL, beat)
	}
}

func pointLabels(points []int) []string {
	var s []string
	for _, p := range points {
		s = append(s, fmt.Sprintf("%dk claimed", p/1000))
	}
	return s
}

// at is the window in which p jobs had been claimed (the last one for the
// end of the run).
func at(r *result, p int) window {
	for i := len(r.windows) - 1; i >= 0; i-- {
		if r.windows[i].start <= p && (i == len(r.windows)-1 || p < r.windows[i+1].start) {
			if p == r.jobs {
				return r.windows[len(r.windows)-1]
			}
			return r.windows[i]
		}
	}
	return r.windows[0]
}
