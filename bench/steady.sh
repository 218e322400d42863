#!/usr/bin/env bash
# bench/steady.sh — is the job queue as fast in its tenth minute as in its
# first? A continuous run (a producer keeps the backlog full, the workers
# work it, a maintainer runs as in production) on a PostgreSQL cluster of
# its own with production-like settings (bench/privatepg.sh: a temporary
# directory, its own port, autovacuum on), stopped and removed afterwards.
#
#   bench/steady.sh                          # 10 minutes, pool 8
#   DURATION=3m POOL=8 bench/steady.sh
#   bench/steady.sh --json                   # extra arguments go to fenced bench
#   FENCED=/path/to/fenced bench/steady.sh   # a built binary (default: go run ./cmd/fenced)
#
# It prints the throughput of every 10 s window and, at the end, the first
# and the last minute's and their ratio (the target: last >= 0.9 x first).
# Every minute it prints what the cluster's statistics say
# of the job tables: live and dead rows, how many times autovacuum and
# fenced's maintainer vacuumed them, and their size on disk.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10m}
POOL=${POOL:-8}
FENCED=${FENCED:-go run ./cmd/fenced}
# shellcheck source=bench/privatepg.sh
. bench/privatepg.sh
start_private_pg
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB; load: $(cut -d' ' -f1-3 /proc/loadavg)"

(
	while sleep 60; do
		echo "--- $(date -u '+%H:%M:%S') load $(cut -d' ' -f1-3 /proc/loadavg)"
		job_table_stats 2>/dev/null || true
	done
) &
stats=$!
trap 'kill $stats 2>/dev/null || true; stop_private_pg' EXIT

$FENCED --db "$PG_URL" bench --duration "$DURATION" --pool "$POOL" "$@"
kill $stats 2>/dev/null || true
