#!/usr/bin/env bash
# Regenerates the report of every committed result set with two analysis
# binaries and diffs them: a refactor of the analysis must leave every
# report/ (report.md, CSVs, SVG/PNG) byte-identical.
#   usage: analysis/validate/same_reports.sh OLD_ANALYSIS NEW_ANALYSIS
# Build OLD from the commit before the change (e.g. a `git worktree` with its
# own CARGO_TARGET_DIR). Prints one line per result set; exits 1 on any diff.
#   usage: analysis/validate/same_reports.sh --compact ANALYSIS
# One binary, each set as committed against a copy whose raw files
# `ANALYSIS compact` rewrote: re-encoding must not change a byte of any
# report (sets already compact compare equal trivially).
#   usage: analysis/validate/same_reports.sh --except-latency OLD NEW
# OLD from before the request-latency section: each report must
# be the same once NEW's additions are taken out (the "Request latency"
# section, its plot's line, the answer box's "p99 of a 1 ms request" line,
# report/latency*); report.html is left out (it embeds report.md).
set -u
compact=0
except_latency=0
if [ "${1:-}" = "--compact" ]; then compact=1; shift; set -- "$1" "$1"; fi
if [ "${1:-}" = "--except-latency" ]; then except_latency=1; shift; fi
[ $# -eq 2 ] || { echo "usage: $0 OLD_ANALYSIS NEW_ANALYSIS | --compact ANALYSIS | --except-latency OLD NEW" >&2; exit 2; }
# NEW's report without the latency additions, in place.
strip_latency() {
  local r=$1
  rm -f "$r"/latency.csv "$r"/latency_runs.csv "$r"/latency.svg "$r"/latency.png "$r"/report.html
  python3 - "$r/report.md" "$r/answer.txt" <<'PY'
import re, sys
md, box = sys.argv[1], sys.argv[2]
s = open(md).read()
s = re.sub(r"## Request latency\n.*?(?=^## )", "", s, flags=re.S | re.M)
s = "".join(l for l in s.splitlines(True)
            if "p99 of a 1 ms request" not in l and l != "![latency.svg](latency.svg)\n")
open(md, "w").write(s)
b = open(box).read()
open(box, "w").write("".join(l for l in b.splitlines(True) if "p99 of a 1 ms request" not in l))
PY
}
old=$(realpath "$1"); new=$(realpath "$2")
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
rc=0
for d in "$root"/results/*/; do
  d=${d%/}; name=$(basename "$d")
  [ -f "$d/manifest.json" ] || continue
  for which in old new; do
    bin=$old; [ $which = new ] && bin=$new
    mkdir -p "$work/$which/results"
    (cd "$d/.." && tar cf - --exclude="$name/report" "$name") | (cd "$work/$which/results" && tar xf -)
    if [ $compact = 1 ] && [ $which = new ]; then
      "$bin" compact "$work/new/results/$name" 2>>"$work/compact.log" \
        || { echo "COMPACT FAILED: $name"; tail -3 "$work/compact.log"; rc=1; }
      tail -1 "$work/compact.log"
    fi
    # Run from the copy's root: report.md quotes the directory as given.
    (cd "$work/$which" && "$bin" report "results/$name" >/dev/null 2>"$work/$which.err") \
      || { echo "FAILED ($which): $name"; tail -3 "$work/$which.err"; rc=1; }
  done
  if [ $except_latency = 1 ]; then
    strip_latency "$work/new/results/$name/report"
    rm -f "$work/old/results/$name/report/report.html"
  fi
  if diff -r "$work/old/results/$name/report" "$work/new/results/$name/report" >/dev/null; then
    echo "same: $name"
    rm -rf "$work/old/results/$name" "$work/new/results/$name"
  else
    echo "DIFF: $name"; diff -r "$work/old/results/$name/report" "$work/new/results/$name/report" | head -5; rc=1
  fi
done
exit $rc
