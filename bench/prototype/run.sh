#!/usr/bin/env bash
# bench/prototype/run.sh — the storage prototype of docs/storage.md: today's
# job table and the proposed append-only layout, claims measured while a
# snapshot is pinned and while none is.
#
# It starts a PostgreSQL cluster of its own (bench/privatepg.sh, port
# FENCED_BENCH_PG_PORT, default here 5462, with pg_stat_statements
# preloaded), runs the prototype against it, and removes the cluster.
#
#   bench/prototype/run.sh                          # 50,000 jobs, 10 a claim, both layouts, pinned and not
#   bench/prototype/run.sh -jobs 20000 -batch 1     # flags of the prototype (go run ./bench/prototype -h)
set -euo pipefail
cd "$(dirname "$0")/../.."
export FENCED_BENCH_PG_PORT=${FENCED_BENCH_PG_PORT:-5462}
export PG_EXTRA_CONF="shared_preload_libraries = 'pg_stat_statements'"
# shellcheck source=bench/privatepg.sh
. bench/privatepg.sh
start_private_pg
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
go build -o "$PG_DIR/prototype" ./bench/prototype
"$PG_DIR/prototype" -url "$PG_URL" "$@"
