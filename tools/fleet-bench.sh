#!/usr/bin/env bash
# analysis fleet against DuckDB on synthetic fleets of 1k, 10k and 100k
# hosts: wall time and peak memory of each, on the same files.
#
#   tools/fleet-bench.sh [DIR]     (DIR: where the fleets are made, default /tmp)
#
# The fleets come from analysis/examples/synth_fleet.rs (drawn from the
# committed sets' classes and spread), made once into DIR/fleet-bench-N and
# reused. Rows:
#   analysis         every summary read (--no-cache), twice;
#   analysis-cached  the run after, with ROOT/.fleet-cache from it: what a
#                    daily run pays when the fleet has not changed;
#   duckdb           analysis/validate/fleet_duckdb.py's SQL alone, with a
#                    4 GB memory limit and union_by_name off (with it on,
#                    DuckDB held 23 GB on 100k files and was killed).
# Run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/perf-overhead/target}"
cargo build --release -q -p analysis --bin analysis --example synth_fleet
A="$CARGO_TARGET_DIR/release/analysis"
S="$CARGO_TARGET_DIR/release/examples/synth_fleet"
python3 -c "import duckdb" 2>/dev/null || pip install -q duckdb
echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {print int($2/1024/1024)" GiB"}' /proc/meminfo), Linux $(uname -r); duckdb $(python3 -c 'import duckdb; print(duckdb.__version__)')"
printf '%-8s %-16s %8s %10s\n' hosts tool wall_s peak_MiB
timed() { # label hosts command...
    local label=$1 n=$2; shift 2
    if /usr/bin/time -f "%e %M" -o /tmp/fleet-bench.time "$@" >/dev/null 2>&1; then
        read -r wall kb </tmp/fleet-bench.time
        printf '%-8s %-16s %8s %10s\n' "$n" "$label" "$wall" "$((kb / 1024))"
    else
        printf '%-8s %-16s %8s %10s\n' "$n" "$label" failed "$(tail -1 /tmp/fleet-bench.time)"
    fi
}
for n in 1000 10000 100000; do
    root="$dir/fleet-bench-$n"
    [ -d "$root" ] || "$S" --hosts "$n" --out "$root" --from results --seed "$n" 2>/dev/null
    out="$dir/fleet-bench-report-$n"
    for run in 1 2; do
        timed analysis "$n" "$A" fleet "$root" --no-make --no-cache --out "$out"
    done
    rm -rf "$root/.fleet-cache"
    "$A" fleet "$root" --no-make --out "$out" >/dev/null 2>&1
    timed analysis-cached "$n" "$A" fleet "$root" --no-make --out "$out"
    DUCKDB_MEMORY_LIMIT=4GB DUCKDB_UNION_BY_NAME=0 \
        timed duckdb "$n" python3 analysis/validate/fleet_duckdb.py "$root" --sql-only
done
