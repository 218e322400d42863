// Command prototype measures the claim path of two storage designs of the
// job table on PostgreSQL while a snapshot is pinned: today's (one row per
// job, updated by every transition) and the proposed append-only layout
// (docs/storage.md). For each layout, pinned or not, it creates a fresh
// database, enqueues a backlog, and claims and completes it a batch at a
// time on one connection, reading from pg_stat_statements the shared
// buffers and server time each claim statement used, window by window, as
// the jobs claimed since the pin grow. Buffers per claim do not depend on
// the machine's load; latencies do.
//
// Run it with bench/prototype/run.sh, which starts a cluster of its own.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
)

func main() {
	url := flag.String("url", "", "URL of a PostgreSQL cluster with pg_stat_statements preloaded (a private one: the run creates and drops databases)")
	jobs := flag.Int("jobs", 50000, "jobs claimed and completed in each run (the backlog)")
	batch := flag.Int("batch", 10, "jobs per claim")
	window := flag.Int("window", 1000, "jobs per measurement window")
	layouts := flag.String("layouts", "today,append-only", "layouts to run, in order (today, append-only, append-only+close, append-only+shards)")
	modes := flag.String("modes", "pinned,unpinned", "runs of each layout: pinned, unpinned")
	at := flag.String("at", "0,10000,25000,50000", "jobs claimed since the pin at which the summary reports the window")
	heartbeat := flag.Bool("heartbeat", false, "heartbeat each claimed batch once before completing it (layouts that have one)")
	workers := flag.Int("workers", 1, "claimers racing on connections of their own (more than 1: throughput only)")
	flag.Parse()
	if *url == "" || *jobs < *window || *batch < 1 || *window < *batch || *window%*batch != 0 {
		log.Fatal("need -url, and -window a multiple of -batch, at most -jobs")
	}
	var points []int
	for _, s := range strings.Split(*at, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > *jobs {
			log.Fatalf("-at: %q is not a count of jobs between 0 and -jobs", s)
		}
		points = append(points, n)
	}
	ctx := context.Background()
	var results []*result
	for _, name := range strings.Split(*layouts, ",") {
		l, ok := map[string]layout{"today": today, "append-only": appendOnly, "append-only+close": appendOnlyClosing, "append-only+shards": appendOnlySharded}[name]
		if !ok {
			log.Fatalf("no layout %q", name)
		}
		for _, mode := range strings.Split(*modes, ",") {
			if mode != "pinned" && mode != "unpinned" {
				log.Fatalf("no mode %q", mode)
			}
			r, err := run(ctx, *url, l, mode == "pinned", config{jobs: *jobs, batch: *batch, window: *window, heartbeat: *heartbeat, workers: *workers})
			if err != nil {
				log.Fatalf("%s %s: %v", name, mode, err)
			}
			results = append(results, r)
		}
	}
	fmt.Println()
	if *workers > 1 {
		for _, r := range results {
			c := r.concurrent
			fmt.Printf("| %s | %s | %d | %.0f | %.1f | %.3f | %d |\n", r.layout, map[bool]string{true: "pinned", false: "none"}[r.pinned],
				c.workers, c.jobsPerS, c.buffers, c.serverMs, c.emptyTake)
		}
		return
	}
	summarize(os.Stdout, results, points)
}
