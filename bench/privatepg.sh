# bench/privatepg.sh — sourced by the benchmark scripts that need a
# PostgreSQL cluster of their own with production-like settings.
#
# The test server on this machine runs with autovacuum off (a CI setting);
# no production server does, and a queue's steadiness depends on it. So
# start_private_pg initdbs a cluster in a temporary directory on its own port
# (FENCED_BENCH_PG_PORT, default 5442) with autovacuum on and the settings
# below, sets PG_URL and PG_PSQL, and arranges for the cluster to be stopped
# and removed when the script exits, whatever happens.

PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}

start_private_pg() {
	PG_PORT=${FENCED_BENCH_PG_PORT:-5442}
	PG_DIR=$(mktemp -d)
	chmod 755 "$PG_DIR"
	[ "$(id -u)" = 0 ] && chown postgres "$PG_DIR"
	trap stop_private_pg EXIT
	as_pg "$PGBIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust >/dev/null
	# Production-like: autovacuum on with its defaults, durable commits,
	# room for the pool. shared_buffers is a quarter of a small server's
	# memory.
	cat >>"$PG_DIR/data/postgresql.conf" <<CONF
port = $PG_PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$PG_DIR'
max_connections = 200
shared_buffers = 1GB
autovacuum = on
synchronous_commit = on
fsync = on
max_wal_size = 8GB
${PG_EXTRA_CONF:-}
CONF
	as_pg "$PGBIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w start >/dev/null
	PG_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
	PG_PSQL=("$PGBIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres)
	echo "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') of its own on port $PG_PORT (autovacuum on with its defaults, shared_buffers 1GB, synchronous_commit on, fsync on)"
}

stop_private_pg() {
	as_pg "$PGBIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
	[ -n "${PG_KEEP_LOG:-}" ] && cp "$PG_DIR/log" "$PG_KEEP_LOG"
	rm -rf "$PG_DIR"
}

as_pg() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# job_table_stats prints what the cluster's statistics say of the job
# tables: live and dead rows, and how often autovacuum and fenced's own
# maintainer vacuumed them.
job_table_stats() {
	"${PG_PSQL[@]}" -c "SELECT pg_stat_force_next_flush()" >/dev/null 2>&1 || true
	"${PG_PSQL[@]}" -c \
		"SELECT relname, n_live_tup, n_dead_tup, autovacuum_count, vacuum_count, autoanalyze_count, analyze_count, pg_size_pretty(pg_total_relation_size(relid)) AS size FROM pg_stat_user_tables WHERE relname LIKE 'fenced_job%' ORDER BY relname"
}
