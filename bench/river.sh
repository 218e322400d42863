#!/usr/bin/env bash
# bench/river.sh — fenced beside River on PostgreSQL, in one run: burn-down
# of JOBS jobs and continuous for SECONDS, ROUNDS rounds of each, each run on
# a fresh database, alternating River and fenced; then the medians and
# their ratio (the target: fenced >= 2 x River in both modes). Both use a
# pool of POOL connections, 2,000 jobs at once and the same connection
# settings (sslmode=disable: no TLS on either side).
#
# River is measured by a program outside this repository, given as
# RIVERBENCH (a built binary that takes -db, -n, -duration, -pool and
# prints work_jobs_per_s=N; the project's own is built from its tools
# directory, which is not part of this repository). No River code is here.
#
#   RIVERBENCH=/path/to/riverbench bench/river.sh
#   ROUNDS=3 JOBS=50000 SECONDS_CONT=20 RIVERBENCH=… bench/river.sh
#   FENCED=/path/to/fenced …             # a built binary (default: go build ./cmd/fenced)
#
# After the continuous rounds it prints the most River's program can let
# River work in that time (it adds jobs at a bounded rate) and how near
# River's median came to it. A median near that ceiling may be the
# program's limit rather than River's; it was not on 2026-12-03, when a
# copy of the program that tops the backlog up without a cap worked as
# many jobs a second (the figures of docs/performance.md).
#
# In burn-down it also reads the server's WAL position before and after each
# program and prints the WAL written per job by the whole run: insert, work
# and cleanup (River truncates its table at the start, fenced at the end
# when alone in it). The WAL is the whole server's: run it on a quiet one.
#
# The databases (fenced_river_bench) are made and dropped on the server of
# PGURL (default: the test server, postgres@127.0.0.1:5432). It prints the
# date, the machine (cores, memory) and its load before and after, which
# belong with any figure quoted from it.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${RIVERBENCH:?set RIVERBENCH to a built River benchmark program}"
ROUNDS=${ROUNDS:-5}
JOBS=${JOBS:-100000}
SECONDS_CONT=${SECONDS_CONT:-20}
POOL=${POOL:-8}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
DB=fenced_river_bench
if [ -z "${FENCED:-}" ]; then
	FENCED=$(mktemp -d)/fenced
	go build -o "$FENCED" ./cmd/fenced
fi

# fresh also checkpoints, so that no program starts with the previous one's
# dirty pages and WAL to write (a checkpoint falling in one program's run
# and not in the other's would be charged to it; the role needs superuser
# or pg_checkpoint).
fresh() { # a server that cannot drop or create the database ends the run, saying why
	PGOPTIONS="-c client_min_messages=warning" psql "$PGURL/postgres" -Xqc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" -c "CHECKPOINT" >/dev/null
}
trap 'psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true; rm -f "${errs:-}"' EXIT

fenced_rate() { sed -n 's/.*"jobs_per_sec": *\([0-9.]*\).*/\1/p'; }
river_rate() { sed -n 's/.*work_jobs_per_s=\([0-9.]*\).*/\1/p'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "PostgreSQL: $(psql "$PGURL/postgres" -Atc 'SHOW server_version'); pool $POOL; rounds $ROUNDS"

# A program that fails ends the run, saying which and how.
errs=$(mktemp)
failed() {
	echo "$1 failed in this round; its last messages:" >&2
	tail -5 "$errs" >&2
	exit 1
}

lsn() { psql "$PGURL/postgres" -Atc 'SELECT pg_current_wal_lsn()'; }
wal_per_job() { psql "$PGURL/postgres" -Atc "SELECT round(pg_wal_lsn_diff('$2', '$1') / $JOBS)"; }

run_mode() { # mode name, fenced args, river args, wal (whether to measure it)
	local mode=$1 fargs=$2 rargs=$3 wal=$4 river=() fenced=() rwal=() fwal=() r f a b rw=0 fw=0
	for i in $(seq "$ROUNDS"); do
		fresh
		a=$(lsn)
		# shellcheck disable=SC2086
		r=$("$RIVERBENCH" -db "$PGURL/$DB?sslmode=disable" -pool "$POOL" $rargs 2>"$errs" | river_rate) || failed River
		b=$(lsn)
		[ "$wal" = wal ] && rw=$(wal_per_job "$a" "$b")
		fresh
		a=$(lsn)
		# shellcheck disable=SC2086
		f=$("$FENCED" --db "$PGURL/$DB?sslmode=disable" bench --pool "$POOL" $fargs --json 2>"$errs" | fenced_rate) || failed fenced
		b=$(lsn)
		[ "$wal" = wal ] && fw=$(wal_per_job "$a" "$b")
		printf '%s round %d: River %.0f jobs/s, fenced %.0f jobs/s (%.2fx)' "$mode" "$i" "$r" "$f" "$(echo "$f / $r" | bc -l)"
		[ "$wal" = wal ] && printf '; WAL River %d B/job, fenced %d B/job (%.2fx)' "$rw" "$fw" "$(echo "$fw / $rw" | bc -l)"
		echo
		river+=("$r") fenced+=("$f") rwal+=("$rw") fwal+=("$fw")
	done
	local mr mf
	mr=$(printf '%s\n' "${river[@]}" | median)
	mf=$(printf '%s\n' "${fenced[@]}" | median)
	printf '%s median: River %.0f jobs/s, fenced %.0f jobs/s, ratio %.2f\n' "$mode" "$mr" "$mf" "$(echo "$mf / $mr" | bc -l)"
	river_median=$mr
	if [ "$wal" = wal ]; then
		mr=$(printf '%s\n' "${rwal[@]}" | median)
		mf=$(printf '%s\n' "${fwal[@]}" | median)
		printf '%s WAL median: River %.0f B/job, fenced %.0f B/job, ratio %.2f\n' "$mode" "$mr" "$mf" "$(echo "$mf / $mr" | bc -l)"
	fi
}

run_mode "burn-down $JOBS" "--jobs $JOBS" "-n $JOBS" wal
run_mode "continuous ${SECONDS_CONT}s" "--duration ${SECONDS_CONT}s" "-duration ${SECONDS_CONT}s" nowal
# The ceiling (see the header): the program starts with 75,000 jobs and adds
# at most 5,000 every 250 ms (the tools' README), so S seconds can work at
# most 75,000 + 20,000 S jobs. river_median is the last run_mode's.
ceiling=$(((75000 + 20000 * SECONDS_CONT) / SECONDS_CONT))
printf "continuous: River's program can work at most %d jobs/s in %ss; River's median is %.0f%% of that\n" \
	"$ceiling" "$SECONDS_CONT" "$(echo "100 * $river_median / $ceiling" | bc -l)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
