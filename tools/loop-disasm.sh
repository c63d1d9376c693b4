#!/usr/bin/env bash
# Prints the machine code of the measured loop's functions in BINARY (the
# workload, or the driver, which runs the workload from its own binary),
# with addresses and raw bytes normalised away, so that two builds can be
# diffed: a change of build profile, dependency or module layout must leave
# the loop that is measured exactly as it was.
#   usage: tools/loop-disasm.sh BINARY > loop.s
#          diff <(tools/loop-disasm.sh OLD) <(tools/loop-disasm.sh NEW)
# The functions: workload's count_chunk, run_until, run_until_clock, the
# timeline's stamped loop, and the work kinds' chunk bodies (stack descent,
# pointer chase), whatever their monomorphised names.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BINARY" >&2; exit 2; }
objdump -d --no-show-raw-insn --demangle "$1" | awk '
  /^[0-9a-f]+ <.*>:$/ {
    name = $0; sub(/^[0-9a-f]+ </, "", name); sub(/>:$/, "", name)
    keep = (name ~ /workload::((run|work)::count_chunk|run::run_until|run::run_until_clock|timeline::.*stamped|work::descend|work::.*chase|work::.*Work.*chunk)/)
    if (keep) { gsub(/::h[0-9a-f]{16}$/, "", name); if (n++) printf "\n"; printf "== %s", name }
    next
  }
  keep && NF {
    line = $0
    sub(/^ *[0-9a-f]+:\t/, "", line)          # the instruction address
    gsub(/0x[0-9a-f]+\(%rip\)/, "ADDR(%rip)", line) # rip-relative data
    gsub(/[0-9a-f]+ </, "<", line)                  # a target'"'"'s absolute address
    gsub(/::h[0-9a-f]+/, "", line)                  # symbol hashes
    gsub(/<(anon|_DYNAMIC)[^>]*>/, "<DATA>", line)  # constants and GOT slots
    printf "\001%s", line
  }
  END { if (n == 0) { print "no loop function found" > "/dev/stderr"; exit 1 } else printf "\n" }
' | LC_ALL=C sort | tr '\001' '\n'
# One function per line until the sort: monomorphised copies come out in
# whatever order the linker placed them, so they are compared as a set.
