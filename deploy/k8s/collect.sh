#!/usr/bin/env bash
# Collect the per-node Jobs' result sets into the fleet dataset, the same
# layout the playbook writes (deploy/README.md, "Kubernetes"):
#
#   FLEET_DIR/host=<node name>/date=<the Jobs' date>/<set>/
#   FLEET_DIR/host=<node name>/date=<the Jobs' date>/missing.json
#
#   deploy/k8s/collect.sh FLEET_DIR          once the sweeps have ended
#
# Per pod: a probe that said "not ready" -> missing.json stage probe; a
# sweep that exited 0 or 4 -> its set is copied out of the pod's emptyDir
# (through the hold container) into .partial-<pod>/, each complete set
# renamed into place, then .collected is touched so the pod ends and the
# Job's TTL removes it; any other exit -> missing.json stage sweep; a pod
# that never ran (node down, not schedulable) -> stage unreachable, with
# FINAL=1 only (otherwise it is reported as not yet run). A host already
# holding a complete set for that date is left alone: rerunning is safe.
#
# Env: NAMESPACE (default perf-overhead), FETCH_EVENTS=1 to copy the raw
# events/ folders too, FINAL=1 as above. Needs kubectl and python3.
set -euo pipefail
fleet=${1:?usage: collect.sh FLEET_DIR}
ns=${NAMESPACE:-perf-overhead}
mkdir -p "$fleet"
fleet=$(cd "$fleet" && pwd)

# One line per pod: pod node date phase probe_exit sweep_exit hold_running why
pods=$(kubectl -n "$ns" get pods -l app.kubernetes.io/name=perf-overhead,app.kubernetes.io/component=sweep -o json |
python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    st = p.get("status", {})
    def exit_of(statuses, name):
        for c in statuses or []:
            if c["name"] == name:
                t = c.get("state", {}).get("terminated")
                return str(t["exitCode"]) if t else "-"
        return "-"
    hold = any(c["name"] == "hold" and "running" in c.get("state", {})
               for c in st.get("containerStatuses") or [])
    why = " ".join(x for x in (st.get("reason", ""), st.get("message", "")) if x) or "-"
    print("\t".join([p["metadata"]["name"], p["spec"].get("nodeName") or "-",
                     p["metadata"]["labels"].get("perf-overhead/date", "-"), st.get("phase", "-"),
                     exit_of(st.get("initContainerStatuses"), "probe"),
                     exit_of(st.get("containerStatuses"), "sweep"),
                     "1" if hold else "0", why.replace("\t", " ").replace("\n", " ")]))
')

has_set() { # a complete set in host folder $1 (summary.parquet or manifest complete)
    python3 - "$1" <<'PY'
import json, os, sys
d = sys.argv[1]
for n in (os.listdir(d) if os.path.isdir(d) else []):
    p = os.path.join(d, n)
    if n.startswith(".") or not os.path.isdir(p):
        continue
    if os.path.isfile(os.path.join(p, "summary.parquet")):
        sys.exit(0)
    try:
        if json.load(open(os.path.join(p, "manifest.json"))).get("status") == "complete":
            sys.exit(0)
    except (OSError, ValueError, AttributeError):
        pass
sys.exit(1)
PY
}
missing() { # missing HOST_DIR NODE DATE STAGE REASON: write missing.json atomically
    mkdir -p "$1"
    python3 - "$@" <<'PY'
import json, os, sys
d, host, date, stage, reason = sys.argv[1:6]
tmp = os.path.join(d, ".missing.json.tmp")
with open(tmp, "w") as f:
    json.dump({"host": host, "date": date, "stage": stage, "reason": reason}, f, indent=4)
    f.write("\n")
os.replace(tmp, os.path.join(d, "missing.json"))
PY
    echo "$2: missing ($4): $5"
}
release() { # let the pod end (its hold container waits for this file)
    kubectl -n "$ns" exec "$1" -c hold -- touch /work/results/.collected >/dev/null 2>&1 || true
}

[ -n "$pods" ] || { echo "no perf-overhead sweep pods in namespace $ns" >&2; exit 1; }
while IFS=$'\t' read -r pod node date phase probe_exit sweep_exit hold why; do
    dir="$fleet/host=$node/date=$date"
    if has_set "$dir"; then
        echo "$node: already collected"
        [ "$hold" = 1 ] && release "$pod"
        continue
    fi
    if [ "$probe_exit" != - ] && [ "$probe_exit" != 0 ]; then
        reason=$(kubectl -n "$ns" logs "$pod" -c probe 2>/dev/null | python3 -c '
import json, sys
try:
    print("driver probe: not ready: " + "; ".join(json.load(sys.stdin)["missing"]))
except Exception:
    print("")' || true)
        missing "$dir" "$node" "$date" probe "${reason:-driver probe exited $probe_exit}"
    elif [ "$sweep_exit" = 0 ] || [ "$sweep_exit" = 4 ]; then
        if [ "$hold" != 1 ]; then
            missing "$dir" "$node" "$date" fetch "the pod's hold container is not running: its results are gone"
            continue
        fi
        partial="$dir/.partial-$pod"
        rm -rf "$partial" && mkdir -p "$partial"
        # Named entries, not tar --exclude (not in every busybox). The script
        # runs in the pod: its $e and $@ are the pod shell's.
        # shellcheck disable=SC2016
        if kubectl -n "$ns" exec "$pod" -c hold -- sh -c '
            cd /work/results && set --
            for e in */*; do
                case $e in */events) [ "'"${FETCH_EVENTS:-0}"'" = 1 ] || continue ;; esac
                set -- "$@" "$e"
            done
            tar -cz "$@"' | tar -xz -C "$partial"; then
            moved=0
            for s in "$partial"/*/; do
                s=${s%/}
                [ -d "$s" ] || continue
                status=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("status",""))' "$s/manifest.json" 2>/dev/null || true)
                if [ "$status" = complete ] && mv -T "$s" "$dir/$(basename "$s")"; then
                    moved=$((moved + 1))
                    echo "$node: set $(basename "$s")"
                fi
            done
            if [ "$moved" -gt 0 ]; then
                rm -rf "$partial" "$dir/missing.json"
                release "$pod"
            else
                rm -rf "$partial"
                missing "$dir" "$node" "$date" fetch "no complete set in the pod's results"
            fi
        else
            rm -rf "$partial"
            missing "$dir" "$node" "$date" fetch "copying the set out of pod $pod failed"
        fi
    elif [ "$sweep_exit" != - ]; then
        tail=$(kubectl -n "$ns" logs "$pod" -c sweep --tail=5 2>/dev/null | tr '\n' '/' | sed 's|/$||; s|/| / |g' || true)
        missing "$dir" "$node" "$date" sweep "driver sweep exited $sweep_exit: $tail"
        [ "$hold" = 1 ] && release "$pod"
    elif [ "$phase" = Running ]; then
        echo "$node: sweep still running; run collect.sh again later"
    elif [ "${FINAL:-0}" = 1 ]; then
        missing "$dir" "$node" "$date" unreachable "pod $pod never ran: phase $phase ($why)"
    else
        echo "$node: pod $phase ($why); not recorded yet (FINAL=1 records it as unreachable)"
    fi
done <<<"$pods"
