#!/usr/bin/env bash
# bench/limits.sh — what concurrency keys and sequences cost the job queue on
# PostgreSQL (or, with BACKEND=mysql, MariaDB; BACKEND=sqlite, SQLite): burn-downs of jobs without keys, alternated in one run with the
# same number of jobs each carrying one of KEYS concurrency keys under a
# per-key limit of LIMIT (fenced bench --keys --key-limit), each round on a
# fresh database, then the medians and their ratio (the target: keyed >=
# 0.8 x plain). With SEQUENCES set, a last run works JOBS_SEQ jobs in that
# many sequences (fenced bench --sequences).
#
#   bench/limits.sh                                  # 5 rounds of 50,000 jobs, 1,000 keys, limit 2
#   ROUNDS=3 JOBS=30000 bench/limits.sh
#   SEQUENCES=100 JOBS_SEQ=100000 bench/limits.sh    # and 100 sequences of 1,000 jobs
#   FENCED=/path/to/fenced bench/limits.sh           # a built binary (default: go build ./cmd/fenced)
#   BACKEND=mysql bench/limits.sh                    # the same on MariaDB
#
# The databases (fenced_limits_bench) are made and dropped on the server of
# PGURL (default: the test server, postgres@127.0.0.1:5432), or of MYURL
# (default root@127.0.0.1:3306, the MariaDB test server); SQLite's file is
# a temporary one.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
JOBS=${JOBS:-50000}
KEYS=${KEYS:-1000}
LIMIT=${LIMIT:-2}
SEQUENCES=${SEQUENCES:-}
JOBS_SEQ=${JOBS_SEQ:-100000}
BACKEND=${BACKEND:-postgres}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
MYURL=${MYURL:-mysql://root@127.0.0.1:3306}
DB=fenced_limits_bench
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
case $BACKEND in
postgres)
	URL=$PGURL/$DB
	fresh() { psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null; }
	drop() { psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true; }
	;;
mysql)
	URL=$MYURL/$DB
	fresh() { my "DROP DATABASE IF EXISTS $DB; CREATE DATABASE $DB"; }
	drop() { my "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true; }
	;;
sqlite)
	URL=sqlite://$dir/bench.db
	fresh() { rm -f "$dir"/bench.db*; }
	drop() { :; }
	;;
*)
	echo "BACKEND must be postgres, mysql or sqlite, not $BACKEND" >&2
	exit 2
	;;
esac
trap 'drop; rm -rf "$dir"' EXIT

rate() { sed -n 's/.*"jobs_per_sec": *\([0-9.]*\).*/\1/p'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

plain=() keyed=()
for r in $(seq "$ROUNDS"); do
	fresh
	p=$("$FENCED" --db "$URL" bench --jobs "$JOBS" --json 2>/dev/null | rate)
	fresh
	k=$("$FENCED" --db "$URL" bench --jobs "$JOBS" --keys "$KEYS" --key-limit "$LIMIT" --json 2>/dev/null | rate)
	printf 'round %d: plain %.0f jobs/s, keyed %.0f jobs/s (%.2fx)\n' "$r" "$p" "$k" "$(echo "$k / $p" | bc -l)"
	plain+=("$p") keyed+=("$k")
done
mp=$(printf '%s\n' "${plain[@]}" | median)
mk=$(printf '%s\n' "${keyed[@]}" | median)
printf 'median: plain %.0f jobs/s, keyed (%d keys, limit %d) %.0f jobs/s, ratio %.2f\n' "$mp" "$KEYS" "$LIMIT" "$mk" "$(echo "$mk / $mp" | bc -l)"

if [ -n "$SEQUENCES" ]; then
	fresh
	"$FENCED" --db "$URL" bench --jobs "$JOBS_SEQ" --sequences "$SEQUENCES" 2>/dev/null | tail -1
fi
