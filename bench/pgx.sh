#!/usr/bin/env bash
# bench/pgx.sh — fenced's lease operations beside pgx alone sending the same
# statements: the limit of a Go client on pgx, where bench/run.sh's pgbench is
# the database's (pgx itself does 0.70-0.91 of pgbench, varying by machine).
#
# For each operation (AcquireRelease, Renew, LeaseTx, ResourceWrite) at 1
# and 16 connections it runs driver/pgdriver's BenchmarkFenced and
# BenchmarkPgxAlone (driver/pgdriver/pgxbench_test.go: the driver's own SQL
# constants through a bare pgxpool, driven by the same drivertest.BenchLoop)
# back to back from one test binary, ROUNDS times, alternating which side
# goes first; each run gets a fresh schema. It prints the median ops/s of
# each side and the median of the paired fenced/pgx-alone ratios, with the
# load average at each round's start. The target is >= 0.95.
#
#   bench/pgx.sh                               # ~4 minutes
#   ROUNDS=16 GO_BENCHTIME=1s bench/pgx.sh
#   OPS="Renew LeaseTx" CONNS=16 bench/pgx.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-6}
GO_BENCHTIME=${GO_BENCHTIME:-1s}
read -r -a OPS <<<"${OPS:-AcquireRelease Renew LeaseTx ResourceWrite}"
read -r -a CONNS <<<"${CONNS:-1 16}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results=$tmp/results # side op conns round ops/s

run() { # side(Fenced|PgxAlone) op conns round
	local out v
	local rc=0
	out=$("$tmp/pgdriver.test" -test.run '^$' -test.bench "^Benchmark$1/$2/conns=$3\$" \
		-test.benchtime "$GO_BENCHTIME" -test.count 1 2>&1) || rc=$?
	[ "$rc" -eq 0 ] || { echo "$out" >&2; echo "bench/pgx.sh: Benchmark$1/$2/conns=$3 exited with status $rc" >&2; exit 1; }
	v=$(echo "$out" | awk '/^Benchmark/ { for (i = 2; i <= NF; i++) if ($i == "ops/s") print $(i-1) }')
	[ -n "$v" ] || { echo "$out" >&2; exit 1; }
	echo "$1 $2 $3 $4 $v" >>"$results"
	printf '  %-15s conns=%-2s %-8s %9.0f ops/s\n' "$2" "$3" "$1" "$v"
}

echo "== build"
go test -c -o "$tmp/pgdriver.test" ./driver/pgdriver
echo "runs: driver/pgdriver.test -test.run '^\$' -test.bench '^Benchmark(Fenced|PgxAlone)/OP/conns=N\$' -test.benchtime $GO_BENCHTIME -test.count 1"
echo "machine: $(nproc) CPUs, GOMAXPROCS=${GOMAXPROCS:-$(nproc)}"

loads=""
for round in $(seq "$ROUNDS"); do
	load=$(cut -d' ' -f1 /proc/loadavg)
	loads="$loads $load"
	echo "== round $round/$ROUNDS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	for op in "${OPS[@]}"; do
		for c in "${CONNS[@]}"; do
			if [ $((round % 2)) -eq 1 ]; then
				run Fenced "$op" "$c" "$round"
				run PgxAlone "$op" "$c" "$round"
			else
				run PgxAlone "$op" "$c" "$round"
				run Fenced "$op" "$c" "$round"
			fi
		done
	done
done

echo
echo "== Medians (fenced vs pgx alone, same statements, same connection count)"
echo "ratio is the median of each round's fenced/pgx-alone pair, run back to back;"
echo "load averages at the rounds' starts:$loads (end $(cut -d' ' -f1-3 /proc/loadavg))"
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
		if (f[1] == "Fenced" && ("PgxAlone " f[2] " " f[3] " " f[4]) in run) {
			r = sprintf("%.2f", run[k] / run["PgxAlone " f[2] " " f[3] " " f[4]])
			add("ratio " f[2] " " f[3], r)
			add((f[4] % 2 ? "first " : "second ") f[2] " " f[3], r)
		}
	}
	printf "%-15s %5s %13s %12s %6s %6s %6s   %s\n", "op", "conns", "fenced ops/s", "pgx ops/s", "ratio", "F1st", "P1st", "ratios (round order)"
	for (i = 1; i in O; i++) for (j = 1; j in C; j++) {
		k = O[i] " " C[j]; r = median(vals["ratio " k]); r1 = median(vals["first " k]); r2 = median(vals["second " k])
		printf "%-15s %5s %13.0f %12.0f %6.2f%s %6.2f %6.2f   %s\n", O[i], C[j], median(vals["Fenced " k]),
			median(vals["PgxAlone " k]), r, r < 0.95 ? "*" : " ", r1, r2, vals["ratio " k]
	}
	print "(* below the 0.95 target. F1st and P1st are the medians of the rounds in which fenced,"
	print "or pgx alone, ran first: the run second in a pair tends to be the slower, so an even"
	print "ROUNDS weighs both orders equally)"
}' "$results"
