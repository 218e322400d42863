#!/usr/bin/env bash
# bench/overload.sh — the job queue offered more than it can work, on a
# PostgreSQL cluster of its own with production-like settings.
#
# The test server on this machine runs with autovacuum off (a CI setting);
# no production server does, and a queue's steadiness depends on it. So this
# script initdbs a cluster in a temporary directory on its own port
# (FENCED_BENCH_PG_PORT, default 5442) with autovacuum on and the settings
# below, runs `fenced bench` in fixed-rate mode against it, and stops and
# removes the cluster, whatever happens.
#
#   bench/overload.sh                          # 5 minutes, 4000 jobs/s, 1ms jobs, 32 slots
#   DURATION=10m RATE=4000 WORK=1ms WORKERS=32 bench/overload.sh
#   bench/overload.sh --json                   # extra arguments go to fenced bench
#   FENCED=/path/to/fenced bench/overload.sh   # a built binary (default: go run ./cmd/fenced)
#
# It prints the throughput of every 10 s window, then the first and the last
# minute's throughput and their ratio (the target: last >= 0.9 x first),
# and the enqueue-to-start latency percentiles. Afterwards it prints what
# the cluster's statistics say of fenced_jobs: dead rows, and how many
# times autovacuum and fenced's own maintainer vacuumed it.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${FENCED_BENCH_PG_PORT:-5442}
DURATION=${DURATION:-5m}
RATE=${RATE:-4000}
WORK=${WORK:-1ms}
WORKERS=${WORKERS:-32}
FENCED=${FENCED:-go run ./cmd/fenced}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}

dir=$(mktemp -d)
chmod 755 "$dir"
as_pg() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
[ "$(id -u)" = 0 ] && chown postgres "$dir"
cleanup() {
	as_pg "$PGBIN/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT

as_pg "$PGBIN/initdb" -D "$dir/data" -U postgres --auth=trust >/dev/null
# Production-like: autovacuum on with its defaults, durable commits, room
# for the pool. shared_buffers is a quarter of a small server's memory.
cat >>"$dir/data/postgresql.conf" <<EOF
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 200
shared_buffers = 1GB
autovacuum = on
synchronous_commit = on
fsync = on
EOF
as_pg "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w start >/dev/null
url="postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable"

echo "overload: PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on port $PORT (autovacuum on, shared_buffers 1GB, synchronous_commit on)"
$FENCED --db "$url" bench --duration "$DURATION" --rate "$RATE" --work "$WORK" --workers "$WORKERS" --keep "$@"
"$PGBIN/psql" -X -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -c \
	"SELECT relname, n_live_tup, n_dead_tup, autovacuum_count, vacuum_count FROM pg_stat_user_tables WHERE relname LIKE 'fenced_job%' ORDER BY relname"
