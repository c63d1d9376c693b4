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
set -u
compact=0
if [ "${1:-}" = "--compact" ]; then compact=1; shift; set -- "$1" "$1"; fi
[ $# -eq 2 ] || { echo "usage: $0 OLD_ANALYSIS NEW_ANALYSIS | --compact ANALYSIS" >&2; exit 2; }
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
  if diff -r "$work/old/results/$name/report" "$work/new/results/$name/report" >/dev/null; then
    echo "same: $name"
    rm -rf "$work/old/results/$name" "$work/new/results/$name"
  else
    echo "DIFF: $name"; diff -r "$work/old/results/$name/report" "$work/new/results/$name/report" | head -5; rc=1
  fi
done
exit $rc
