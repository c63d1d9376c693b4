#!/usr/bin/env bash
# The fleet at lake scale: wall time and peak memory of compacting a day of
# 100,000 hosts, of answering from the compacted day (analysis fleet cold,
# DuckDB, the Spark job in local[2]), and of a synthetic year (365 days of
# 10,000 hosts) with analysis fleet --all and the Spark job's --all.
#
#   tools/lake-bench.sh [DIR]     (DIR: where the fleets are made, default /tmp)
#
# "cold" drops the page cache first (root only; otherwise said). Peak memory
# is the largest resident set of the command's process tree, sampled every
# 0.2 s (the Spark job's JVM is a child of Python). Run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/perf-overhead/target}"
cargo build --release -q -p analysis --bin analysis --example synth_fleet
A="$CARGO_TARGET_DIR/release/analysis"
S="$CARGO_TARGET_DIR/release/examples/synth_fleet"
echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {print int($2/1024/1024)" GiB"}' /proc/meminfo), Linux $(uname -r)"
printf '%-34s %8s %10s\n' what wall_s peak_MiB
cold() { sync; if [ "$(id -u)" = 0 ]; then echo 3 >/proc/sys/vm/drop_caches; else echo "(not root: the page cache stays warm)"; fi; }
tree_rss_kb() { # the resident set of PID and its descendants, KB
    local pids
    pids=$(pstree -p "$1" 2>/dev/null | grep -o '([0-9]*)' | tr -d '()' | tr '\n' ',')
    ps -o rss= -p "${pids%,}" 2>/dev/null | awk '{s += $1} END {print s + 0}'
}
timed() { # label command...
    local label=$1; shift
    local t0 peak=0 rss pid
    t0=$(date +%s.%N)
    "$@" >/tmp/lake-bench.out 2>/tmp/lake-bench.err &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        rss=$(tree_rss_kb "$pid")
        [ "$rss" -gt "$peak" ] && peak=$rss
        sleep 0.2
    done
    if wait "$pid"; then
        printf '%-34s %8.1f %10d\n' "$label" "$(echo "$(date +%s.%N) - $t0" | bc)" "$((peak / 1024))"
    else
        printf '%-34s %8s %10d\n' "$label" failed "$((peak / 1024))"; tail -3 /tmp/lake-bench.err
    fi
}
day="$dir/lake-100k"
[ -d "$day/landing" ] || "$S" --hosts 100000 --out "$day/landing" --from results --from results/20261127-fleet 2>/dev/null
rm -rf "$day/days"
cold; timed "compact 100k per-host summaries" "$A" fleet "$day/landing" --compact "$day/days"
du -sh "$day/days" | awk '{print "  the day table: " $1}'
cold; timed "analysis fleet, compacted, cold" "$A" fleet "$day/days" --no-make --no-cache --json --out "$day/report"
timed "analysis fleet, compacted, warm" "$A" fleet "$day/days" --no-make --no-cache --json --out "$day/report"
cold; timed "duckdb, compacted, cold" python3 analysis/validate/fleet_duckdb.py "$day/days" --sql-only
timed "spark local[2], compacted" python3 deploy/spark/fleet_answer.py "$day/days" --master 'local[2]' --out "$day/spark.json"
timed "spark local[2], 100k landing files" python3 deploy/spark/fleet_answer.py "$day/landing" --master 'local[2]' --out "$day/spark-landing.json"
python3 analysis/validate/fleet_spark.py "$day/days" "$A" | tail -1
python3 analysis/validate/fleet_duckdb.py "$day/days" "$A" | tail -1
year="$dir/lake-year"
[ -d "$year" ] || "$S" --hosts 10000 --days 365 --day-tables --plant 250:AMD:1.3 --out "$year" \
    --from results --from results/20261127-fleet 2>/dev/null
du -sh "$year" | awk '{print "  the year: " $1 " in 365 day tables"}'
cold; timed "analysis fleet --all, a year" "$A" fleet "$year" --all --no-make --no-cache --out "$dir/lake-year-report"
grep -E "moved on" /tmp/lake-bench.err || true
timed "spark local[2] --all, a year" python3 deploy/spark/fleet_answer.py "$year" --all --master 'local[2]' --out "$dir/lake-year-spark.json"
