#!/usr/bin/env bash
# deploy/k8s/collect.sh against a stand-in kubectl: no cluster is at hand,
# so `kubectl` here answers from files, and `kubectl exec ... -c hold`
# runs the pod's command with busybox (the hold image's shell and tar) over
# a local folder standing for the pod's emptyDir. What this checks is
# collect.sh's own logic: which pod gives a set, which a missing.json with
# which stage, that raw events/ stay behind, that a rerun collects nothing
# twice. What it cannot check: a real API server, kubelet or container.
#
# Needs python3 and busybox (Debian: busybox); skips without them, unless
# PERF_TESTS=require.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
skip() {
    [ "${PERF_TESTS:-}" = require ] && { echo "FAIL: $1 (PERF_TESTS=require)"; exit 1; }
    echo "SKIP: $1"; exit 0
}
command -v busybox >/dev/null || skip "busybox missing (apt-get install busybox)"
command -v python3 >/dev/null || skip "python3 missing"

T=$(mktemp -d /tmp/k8s-collect-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
check() { local what=$1; shift; if "$@"; then echo "PASS: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi; }

# --- the stand-in cluster ---------------------------------------------------
mkdir -p "$T/bin" "$T/pods/p-ok/results/20261127T010000Z-n1/events" \
    "$T/pods/p-ok/results/20261127T010000Z-n1/report" "$T/logs" "$T/fleet"
set_dir="$T/pods/p-ok/results/20261127T010000Z-n1"
printf '{\n  "format_version": 1,\n  "status": "complete"\n}\n' > "$set_dir/manifest.json"
echo "run_id,freq_hz" > "$set_dir/runs.csv"
echo "answer" > "$set_dir/report/answer.txt"
echo "raw" > "$set_dir/events/run-1.parquet"
echo '{"hostname":"n2","ready":false,"missing":["perf_event_open: EACCES"]}' > "$T/logs/p-unready.probe"
printf 'line 1\nerror: no tracefs\n' > "$T/logs/p-failed.sweep"
cat > "$T/pods.json" <<'EOF'
{"items": [
 {"metadata": {"name": "p-ok", "labels": {"perf-overhead/date": "2026-11-27"}}, "spec": {"nodeName": "n1"},
  "status": {"phase": "Running",
   "initContainerStatuses": [{"name": "probe", "state": {"terminated": {"exitCode": 0}}}],
   "containerStatuses": [{"name": "sweep", "state": {"terminated": {"exitCode": 0}}},
                         {"name": "hold", "state": {"running": {}}}]}},
 {"metadata": {"name": "p-unready", "labels": {"perf-overhead/date": "2026-11-27"}}, "spec": {"nodeName": "n2"},
  "status": {"phase": "Failed",
   "initContainerStatuses": [{"name": "probe", "state": {"terminated": {"exitCode": 1}}}],
   "containerStatuses": [{"name": "sweep", "state": {"waiting": {}}}, {"name": "hold", "state": {"waiting": {}}}]}},
 {"metadata": {"name": "p-failed", "labels": {"perf-overhead/date": "2026-11-27"}}, "spec": {"nodeName": "n3"},
  "status": {"phase": "Running",
   "initContainerStatuses": [{"name": "probe", "state": {"terminated": {"exitCode": 0}}}],
   "containerStatuses": [{"name": "sweep", "state": {"terminated": {"exitCode": 1}}},
                         {"name": "hold", "state": {"running": {}}}]}},
 {"metadata": {"name": "p-pending", "labels": {"perf-overhead/date": "2026-11-27"}}, "spec": {"nodeName": "n4"},
  "status": {"phase": "Pending", "reason": "NodeLost", "message": "node n4 not ready"}}
]}
EOF
cat > "$T/bin/kubectl" <<EOF
#!/usr/bin/env bash
# Stand-in kubectl: answers from $T.
[ "\$1" = -n ] && shift 2
case "\$1" in
    get) cat "$T/pods.json" ;;
    logs) pod=\$2; c=\$4; f="$T/logs/\$pod.\$c"
          if [ "\${5:-}" = --tail=5 ]; then tail -5 "\$f"; else cat "\$f"; fi ;;
    exec) pod=\$2; shift 5   # exec POD -c hold --
          dir="$T/pods/\$pod/results"
          [ -d "\$dir" ] || mkdir -p "\$dir"
          if [ "\$1" = touch ]; then touch "\$dir/.collected"
          else busybox sh -c "\${3//\/work\/results/\$dir}"; fi ;;
    *) echo "stand-in kubectl: unexpected \$*" >&2; exit 2 ;;
esac
EOF
chmod +x "$T/bin/kubectl"
export PATH="$T/bin:$PATH"
d="date=2026-11-27"
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2" 2>/dev/null; }

# --- first collection ---------------------------------------------------------
bash "$repo/deploy/k8s/collect.sh" "$T/fleet" > "$T/out1" 2>&1
rc=$?
cat "$T/out1"
check "collect.sh exits 0 ($rc)" test "$rc" = 0
got="$T/fleet/host=n1/$d/20261127T010000Z-n1"
check "n1: the set is in place with its manifest, runs.csv and report" \
    test -s "$got/manifest.json" -a -s "$got/runs.csv" -a -s "$got/report/answer.txt"
check "n1: the raw events/ stayed in the pod" test ! -e "$got/events"
check "n1: no .partial-* left" test -z "$(find "$T/fleet" -name '.partial-*')"
check "n1: the pod was released (.collected)" test -e "$T/pods/p-ok/results/.collected"
check "n2: missing.json stage probe" test "$(field "$T/fleet/host=n2/$d/missing.json" stage)" = probe
check "n2: the probe's reason" grep -q 'not ready: perf_event_open: EACCES' "$T/fleet/host=n2/$d/missing.json"
check "n3: missing.json stage sweep" test "$(field "$T/fleet/host=n3/$d/missing.json" stage)" = sweep
check "n3: the exit status and the log's last lines" \
    grep -q 'exited 1: line 1 / error: no tracefs' "$T/fleet/host=n3/$d/missing.json"
check "n3: the pod was released" test -e "$T/pods/p-failed/results/.collected"
check "n4: pending, not recorded without FINAL=1" test ! -e "$T/fleet/host=n4"

# --- rerun, FINAL=1 -------------------------------------------------------------
FINAL=1 bash "$repo/deploy/k8s/collect.sh" "$T/fleet" > "$T/out2" 2>&1
rc=$?
cat "$T/out2"
check "rerun exits 0 ($rc)" test "$rc" = 0
check "rerun: n1 already collected" grep -q '^n1: already collected' "$T/out2"
check "rerun: n1 still has exactly one set" test "$(find "$T/fleet/host=n1/$d" -mindepth 1 -maxdepth 1 | wc -l)" = 1
check "rerun with FINAL=1: n4 missing.json stage unreachable" \
    test "$(field "$T/fleet/host=n4/$d/missing.json" stage)" = unreachable
check "n4: names the pod's phase and reason" grep -q 'phase Pending (NodeLost' "$T/fleet/host=n4/$d/missing.json"

echo "k8s-collect: $fails failed"
[ "$fails" = 0 ]
