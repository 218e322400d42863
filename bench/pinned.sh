#!/usr/bin/env bash
# bench/pinned.sh — the job queue at a fixed rate while another session holds
# a snapshot open, so that no VACUUM can reclaim the rows the queue leaves
# dead (a long transaction, a replica's hot_standby_feedback, a pg_dump).
#
# It starts a PostgreSQL cluster of its own (bench/privatepg.sh: a temporary
# directory, its own port, autovacuum on), runs `fenced bench` in fixed-rate
# mode against it, and WARMUP into the run opens a REPEATABLE READ
# transaction in another session, takes its snapshot and holds it for PIN;
# the run goes on for AFTER once the snapshot is released. The cluster is
# stopped and removed afterwards, whatever happens.
#
#   bench/pinned.sh                            # 2000 jobs/s, 1ms jobs, 64 at once; pin 10m after 60s, 60s after
#   RATE=1000 PIN=3m bench/pinned.sh
#   FENCED=/path/to/fenced bench/pinned.sh     # a built binary (default: go run ./cmd/fenced)
#   FENCED_BENCH_PG_PORT=5452 bench/pinned.sh  # the private cluster's port
#
# It prints every 10 s window (throughput, backlog, enqueue->start p50/p99),
# the dead rows of the job tables as the pin ends, and then:
#   - the pin's first and last minute's throughput and their ratio (the
#     target: last >= 0.95 x first);
#   - the highest window p99 of enqueue->start while pinned (target <= 50 ms);
#   - how long after the release the backlog was back to its level before
#     the pin with a window p99 <= 50 ms (target: within 30 s).
set -euo pipefail
cd "$(dirname "$0")/.."

RATE=${RATE:-2000}
WORK=${WORK:-1ms}
WORKERS=${WORKERS:-64}
WARMUP=${WARMUP:-60s}
PIN=${PIN:-10m}
AFTER=${AFTER:-60s}
WINDOW=10s
FENCED=${FENCED:-go run ./cmd/fenced}
export FENCED_BENCH_PG_PORT=${FENCED_BENCH_PG_PORT:-5452}

secs() { # 90s, 10m, 1h -> seconds
	local v=${1%[smh]}
	case $1 in *m) echo $((v * 60)) ;; *h) echo $((v * 3600)) ;; *) echo "$v" ;; esac
}
warmup=$(secs "$WARMUP") pin=$(secs "$PIN") after=$(secs "$AFTER")
[ "$warmup" -ge 20 ] || { echo "WARMUP must be at least 20s" >&2; exit 2; }
total=$((warmup + pin + after))

# shellcheck source=bench/privatepg.sh
. bench/privatepg.sh
start_private_pg
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "offered $RATE jobs/s of $WORK, $WORKERS at once, for ${total}s; snapshot pinned from ${warmup}s to $((warmup + pin))s"

out=$(mktemp) progress=$(mktemp)
holder=
cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null || true
	rm -f "$out" "$progress"
	stop_private_pg
}
trap cleanup EXIT

$FENCED --db "$PG_URL" bench --duration "${total}s" --rate "$RATE" --work "$WORK" \
	--workers "$WORKERS" --window "$WINDOW" --json >"$out" 2>"$progress" &
bench=$!
tail -f "$progress" --pid "$bench" &

# The windows count from when the work began: the first window's line is
# printed 10 s after it.
until grep -q 'window to' "$progress"; do
	kill -0 "$bench" 2>/dev/null || { wait "$bench"; exit 1; }
	sleep 0.2
done
sleep $((warmup - 10))
echo "--- $(date -u +%T) pinning a snapshot for ${pin}s"
"${PG_PSQL[@]}" -c "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pg_class; SELECT pg_sleep($pin); COMMIT;" >/dev/null &
holder=$!
wait "$holder"
holder=
echo "--- $(date -u +%T) snapshot released; the job tables as it ended:"
job_table_stats
wait "$bench"
job_table_stats

jq -r --argjson from "$warmup" --argjson to "$((warmup + pin))" '
	def mean(f): (map(f) | add) / length;
	.windows as $w
	| ($w | map(select(.end_s > $from and .end_s <= $to))) as $pinned
	| ($w | map(select(.end_s <= $from)) | map(.backlog) | max) as $before
	| ($w | map(select(.end_s > $to and .backlog <= $before and (.latency.p99_ms // 0) <= 50)) | first) as $back
	| "pinned: first minute \($pinned[:6] | mean(.jobs_per_sec) | round) jobs/s, last minute \($pinned[-6:] | mean(.jobs_per_sec) | round) jobs/s (\(($pinned[-6:] | mean(.jobs_per_sec)) / ($pinned[:6] | mean(.jobs_per_sec)) * 100 | round / 100)x)",
	  "pinned: highest window p99 enqueue->start \($pinned | map(.latency.p99_ms // 0) | max) ms, highest backlog \($pinned | map(.backlog) | max) (before the pin at most \($before))",
	  (if $back then "released: back to the backlog before the pin with p99 <= 50 ms in the window ending \($back.end_s - $to | round) s after the release"
	   else "released: not back to the backlog before the pin with p99 <= 50 ms by the end of the run" end),
	  "run: \(.jobs) worked of \(.inserted) inserted; whole-run enqueue->start p50 \(.latency.p50_ms) ms p99 \(.latency.p99_ms) ms"
' "$out"
