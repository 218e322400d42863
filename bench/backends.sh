#!/usr/bin/env bash
# bench/backends.sh — the job queue's burn-down on each backend in one run:
# ROUNDS rounds, each a burn-down of JOBS jobs on a fresh PostgreSQL
# database and a fresh MariaDB/MySQL database (in turns, the first
# changing every round), then a fresh SQLite file; then each backend's median and its ratio to PostgreSQL's
# (the target for MariaDB: >= 0.5).
#
#   bench/backends.sh                          # 5 rounds of 20,000 jobs
#   ROUNDS=3 JOBS=50000 bench/backends.sh
#   FENCED=/path/to/fenced bench/backends.sh   # a built binary (default: go build ./cmd/fenced)
#
# The databases (fenced_backends_bench) are made and dropped on the servers
# of PGURL and MYURL (default: the test servers, postgres@127.0.0.1:5432
# and root@127.0.0.1:3306).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
JOBS=${JOBS:-20000}
POOL=${POOL:-8}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
MYURL=${MYURL:-mysql://root@127.0.0.1:3306}
DB=fenced_backends_bench
if [ -z "${FENCED:-}" ]; then
	FENCED=$(mktemp -d)/fenced
	go build -o "$FENCED" ./cmd/fenced
fi
dir=$(mktemp -d)

my() { # runs SQL on the MariaDB server of MYURL
	local hostport=${MYURL#mysql://} user=root
	case $hostport in *@*) user=${hostport%%@*} hostport=${hostport#*@} ;; esac
	hostport=${hostport%%/*}
	mysql -u"${user%%:*}" -h"${hostport%%:*}" -P"${hostport##*:}" -e "$1"
}
fresh() {
	psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null 2>&1
	my "DROP DATABASE IF EXISTS $DB; CREATE DATABASE $DB"
	rm -f "$dir"/bench.db*
}
cleanup() {
	psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
	my "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT

rate() { sed -n 's/.*"jobs_per_sec": *\([0-9.]*\).*/\1/p'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg); $JOBS jobs, pool $POOL"
pg=() my_=() lite=()
for r in $(seq "$ROUNDS"); do
	fresh
	# The first two change places every round, so that neither always
	# runs first (on a warmer or a quieter machine).
	if [ $((r % 2)) = 1 ]; then
		p=$("$FENCED" --db "$PGURL/$DB" bench --jobs "$JOBS" --pool "$POOL" --json 2>/dev/null | rate)
		m=$("$FENCED" --db "$MYURL/$DB" bench --jobs "$JOBS" --pool "$POOL" --json 2>/dev/null | rate)
	else
		m=$("$FENCED" --db "$MYURL/$DB" bench --jobs "$JOBS" --pool "$POOL" --json 2>/dev/null | rate)
		p=$("$FENCED" --db "$PGURL/$DB" bench --jobs "$JOBS" --pool "$POOL" --json 2>/dev/null | rate)
	fi
	s=$("$FENCED" --db "sqlite:$dir/bench.db" bench --jobs "$JOBS" --json 2>/dev/null | rate)
	printf 'round %d: PostgreSQL %.0f, MariaDB %.0f (%.2fx), SQLite %.0f (%.2fx) jobs/s\n' "$r" "$p" "$m" \
		"$(echo "$m / $p" | bc -l)" "$s" "$(echo "$s / $p" | bc -l)"
	pg+=("$p") my_+=("$m") lite+=("$s")
done
mp=$(printf '%s\n' "${pg[@]}" | median)
mm=$(printf '%s\n' "${my_[@]}" | median)
ms=$(printf '%s\n' "${lite[@]}" | median)
printf 'median: PostgreSQL %.0f, MariaDB %.0f (%.2fx), SQLite %.0f (%.2fx) jobs/s\n' "$mp" "$mm" \
	"$(echo "$mm / $mp" | bc -l)" "$ms" "$(echo "$ms / $mp" | bc -l)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
