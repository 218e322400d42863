#!/usr/bin/env bash
# bench/run.sh — fenced's lease operations beside the database's own limit.
#
# In one run, for each operation (AcquireRelease, Renew, LeaseTx,
# ResourceWrite) at 1 and 16 connections, it runs the Go benchmark
# (driver/pgdriver BenchmarkFenced, see driver/drivertest/bench.go) and pgbench
# executing the same statements (bench/pgbench/*.sql) back to back, ROUNDS
# times, alternating which side goes first. Many short rounds rather than a
# few long ones: on a small shared machine the load moves, and pairing each
# Go run with the pgbench run beside it cancels most of that. It prints the
# median ops/s of each side and the median of the paired ratios; the target
# is fenced/pgbench >= 0.8. SQLite has no pgbench; its figures follow. (Its
# Renew at 1 connection is flattering: renewals of one lease within the same
# millisecond, the SQLite clock's resolution, store the bytes already stored,
# which SQLite skips without a write or a sync. The 16-connection figure,
# 16 leases in turn, is the durable rate.) pgx itself does 0.70-0.91 of
# pgbench, varying by machine: bench/pgx.sh measures fenced against the same
# statements through pgx alone, the limit for a Go client (target >= 0.95).
#
#   bench/run.sh                       # ~6 minutes
#   ROUNDS=3 GO_BENCHTIME=10s PGBENCH_SECONDS=10 bench/run.sh
#
# PostgreSQL is FENCED_TEST_POSTGRES_URL (default the local test server).
# pgbench runs in schema fenced_bench, recreated by bench/setup before every
# pgbench run, as each Go benchmark run gets a fresh schema.
set -euo pipefail
cd "$(dirname "$0")/.."

PGURL=${FENCED_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
ROUNDS=${ROUNDS:-5}
GO_BENCHTIME=${GO_BENCHTIME:-3s}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-3}
SQLITE_BENCHTIME=${SQLITE_BENCHTIME:-1s}
SQLITE_COUNT=${SQLITE_COUNT:-3}
SCHEMA=fenced_bench
OPS=(AcquireRelease Renew LeaseTx ResourceWrite)
CONNS=(1 16)
VALUE=$(sed -n 's/^\tBenchValue *= "\(.*\)"$/\1/p' driver/drivertest/bench.go)
[ -n "$VALUE" ] || { echo "no BenchValue in driver/drivertest/bench.go" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results=$tmp/results # side op conns round ops/s

script() { # AcquireRelease -> acquire_release
	echo "$1" | sed 's/\([a-z]\)\([A-Z]\)/\1_\2/g' | tr 'A-Z' 'a-z'
}

# work is how many operations the database shows done after a pgbench run,
# to check pgbench measured real updates, not statements matching no row.
work() {
	local q
	case $1 in
	AcquireRelease) q="SELECT sum(fence) FROM $SCHEMA.fenced_leases" ;;
	Renew) q="SELECT n_tup_upd FROM pg_stat_user_tables WHERE schemaname = '$SCHEMA' AND relname = 'fenced_leases'" ;;
	LeaseTx) q="SELECT sum(v) FROM $SCHEMA.fenced_bench_biz" ;;
	ResourceWrite) q="SELECT sum(version) FROM $SCHEMA.fenced_resources" ;;
	esac
	psql "$PGURL" -XAtqc "$q"
}

run_go() { # op conns round
	local out
	out=$("$tmp/pgdriver.test" -test.run '^$' -test.bench "^BenchmarkFenced/$1/conns=$2\$" \
		-test.benchtime "$GO_BENCHTIME" -test.count 1 2>&1) || { echo "$out" >&2; exit 1; }
	local v
	v=$(echo "$out" | awk '/^BenchmarkFenced/ { for (i = 2; i <= NF; i++) if ($i == "ops/s") print $(i-1) }')
	[ -n "$v" ] || { echo "$out" >&2; exit 1; }
	echo "fenced $1 $2 $3 $v" >>"$results"
	printf '  %-15s conns=%-2s fenced  %9.0f ops/s\n' "$1" "$2" "$v"
}

run_pgbench() { # op conns round
	local jobs=1 out tps done processed
	[ "$2" -gt 1 ] && jobs=2
	"$tmp/setup" -url "$PGURL" -schema "$SCHEMA" -clients "$2" 2>/dev/null
	out=$(PGOPTIONS="-c search_path=$SCHEMA" pgbench -n -M prepared -c "$2" -j "$jobs" -T "$PGBENCH_SECONDS" \
		-D owner=bench -D value="$VALUE" -f "bench/pgbench/$(script "$1").sql" "$PGURL" 2>&1) ||
		{ echo "$out" >&2; exit 1; }
	tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p')
	processed=$(echo "$out" | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
	sleep 0.2 # let the backends' exit flush their statistics
	done=$(work "$1")
	if [ "${done:-0}" -lt "$processed" ]; then
		echo "  warning: pgbench $1 processed $processed transactions but the tables show ${done:-0} operations" >&2
	fi
	tps=$(printf '%.0f' "$tps")
	echo "pgbench $1 $2 $3 $tps" >>"$results"
	printf '  %-15s conns=%-2s pgbench %9.0f tps\n' "$1" "$2" "$tps"
}

echo "== build"
go test -c -o "$tmp/pgdriver.test" ./driver/pgdriver
go test -c -o "$tmp/sqlitedriver.test" ./driver/sqlitedriver
go build -o "$tmp/setup" ./bench/setup
echo "go:      driver/pgdriver.test -test.bench '^BenchmarkFenced/OP/conns=N\$' -test.benchtime $GO_BENCHTIME -test.count 1"
echo "pgbench: pgbench -n -M prepared -c N -j (1|2) -T $PGBENCH_SECONDS -D owner=bench -D value=$VALUE -f bench/pgbench/op.sql (search_path=$SCHEMA)"
echo "machine: $(nproc) CPUs, GOMAXPROCS=${GOMAXPROCS:-$(nproc)}, $(psql "$PGURL" -XAtqc 'SELECT version()' | cut -d' ' -f1-2)"

for round in $(seq "$ROUNDS"); do
	echo "== PostgreSQL round $round/$ROUNDS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	for op in "${OPS[@]}"; do
		for c in "${CONNS[@]}"; do
			if [ $((round % 2)) -eq 1 ]; then
				run_go "$op" "$c" "$round"
				run_pgbench "$op" "$c" "$round"
			else
				run_pgbench "$op" "$c" "$round"
				run_go "$op" "$c" "$round"
			fi
		done
	done
done
PGOPTIONS="-c client_min_messages=warning" psql "$PGURL" -XAtqc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE"

echo "== SQLite (-test.benchtime $SQLITE_BENCHTIME -test.count $SQLITE_COUNT)"
"$tmp/sqlitedriver.test" -test.run '^$' -test.bench '^BenchmarkFenced/' \
	-test.benchtime "$SQLITE_BENCHTIME" -test.count "$SQLITE_COUNT" |
	tee "$tmp/sqlite.out" | grep '^Benchmark' | sed 's/^/  /'
awk '/^BenchmarkFenced/ { split($1, n, "/"); sub(/conns=/, "", n[3]); sub(/-[0-9]+$/, "", n[3]);
	for (i = 2; i <= NF; i++) if ($i == "ops/s") print "sqlite", n[2], n[3], NR, $(i-1) }' \
	"$tmp/sqlite.out" >>"$results"

echo
echo "== Medians (PostgreSQL: fenced vs pgbench, same SQL, same connection count)"
echo "ratio is the median of each round's fenced/pgbench pair, run back to back;"
echo "the raw runs follow, in round order."
awk -v ops="${OPS[*]}" -v conns="${CONNS[*]}" '
function median(list,   n, i, j, t, a) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function add(key, v) { vals[key] = vals[key] (vals[key] == "" ? "" : " ") v }
{ add($1 " " $2 " " $3, $5); run[$1 " " $2 " " $3 " " $4] = $5 }
END {
	split(ops, O, " "); split(conns, C, " ")
	for (k in run) {
		split(k, f, " ")
		if (f[1] == "fenced" && ("pgbench " f[2] " " f[3] " " f[4]) in run)
			add("ratio " f[2] " " f[3], sprintf("%.2f", run[k] / run["pgbench " f[2] " " f[3] " " f[4]]))
	}
	printf "%-15s %5s %13s %12s %6s   %s\n", "op", "conns", "fenced ops/s", "pgbench tps", "ratio", "runs: fenced | pgbench"
	for (i = 1; i in O; i++) for (j = 1; j in C; j++) {
		k = O[i] " " C[j]; r = median(vals["ratio " k])
		printf "%-15s %5s %13.0f %12.0f %6.2f%s  %s | %s\n", O[i], C[j], median(vals["fenced " k]),
			median(vals["pgbench " k]), r, r < 0.8 ? "*" : " ", vals["fenced " k], vals["pgbench " k]
	}
	print "(* below the 0.8 target)"
	print ""
	print "== SQLite medians (no pgbench equivalent)"
	printf "%-15s %5s %13s   %s\n", "op", "conns", "fenced ops/s", "runs"
	for (i = 1; i in O; i++) for (j = 1; j in C; j++)
		printf "%-15s %5s %13.0f   %s\n", O[i], C[j], median(vals["sqlite " O[i] " " C[j]]), vals["sqlite " O[i] " " C[j]]
}' "$results"
