#!/usr/bin/env bash
# Render deploy/k8s/check-cronjob.yaml once per node on stdout: one CronJob
# per node, each pinned to its node and at its own time of day
# (deploy/README.md, "The daily check").
#
#   deploy/k8s/render-checks.sh -i REGISTRY/perf-overhead-driver:TAG \
#       $(kubectl get nodes -o name | sed 's|^node/||') | kubectl apply -f -
#
# -i IMAGE     the driver image (deploy/Containerfile)
# -r HZ        the rate to check, the one your profiler uses (default 99)
# -b BUDGET    the loss allowed, e.g. 1% (default 1%)
# -s SCHEDULE  one cron schedule for every node; by default each node gets
#              its own minute and hour between 00:00 and 05:59 from a hash
#              of its name, the same every time it is rendered
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
image=perf-overhead-driver:latest
rate=99
budget=1%
schedule=""
usage="usage: $0 [-i IMAGE] [-r HZ] [-b BUDGET] [-s 'CRON SCHEDULE'] NODE..."
while getopts i:r:b:s: opt; do
    case $opt in
        i) image=$OPTARG ;;
        r) rate=$OPTARG ;;
        b) budget=$OPTARG ;;
        s) schedule=$OPTARG ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
[[ $rate =~ ^[0-9]+$ ]] || { echo "error: -r $rate is not a rate in Hz" >&2; exit 2; }
[[ $budget =~ ^[0-9.]+%?$ ]] || { echo "error: -b $budget is not a budget such as 1%" >&2; exit 2; }
[[ -z $schedule || $schedule =~ ^[-0-9*/,]+( [-0-9*/,A-Za-z]+){4}$ ]] \
    || { echo "error: -s '$schedule' is not a 5-field cron schedule" >&2; exit 2; }
[[ $image != *'|'* ]] || { echo "error: -i $image contains |" >&2; exit 2; }

# Names first, all of them, so that a refusal renders nothing at all.
declare -A seen
hosts=() labels=()
for node in "$@"; do
    # DNS labels from the node name's first label, lower case: at most 32
    # characters in the CronJob's name (a CronJob's name is limited to 52,
    # and "perf-overhead-check-" takes 20), at most 63 for the hostname.
    host=$(printf '%s' "${node%%.*}" | tr '[:upper:]' '[:lower:]' | tr -c 'a-z0-9-' '-' | cut -c1-63 | sed 's/^-*//; s/-*$//')
    label=$(printf '%s' "$host" | cut -c1-32 | sed 's/-*$//')
    [ -n "$label" ] || { echo "error: node name '$node' gives no DNS label" >&2; exit 2; }
    [ -z "${seen[$label]:-}" ] || { echo "error: nodes '${seen[$label]}' and '$node' give the same name perf-overhead-check-$label" >&2; exit 2; }
    seen[$label]=$node
    hosts+=("$host") labels+=("$label")
done

i=0
for node in "$@"; do
    s=$schedule
    if [ -z "$s" ]; then
        h=$(printf '%s' "$node" | cksum | cut -d' ' -f1)
        s="$((h % 60)) $((h / 60 % 6)) * * *"
    fi
    echo "---"
    sed -e "s|@NODE@|$node|g" -e "s|@NODE_LABEL@|${labels[i]}|g" -e "s|@HOST_LABEL@|${hosts[i]}|g" \
        -e "s|@SCHEDULE@|$s|g" -e "s|@IMAGE@|$image|g" -e "s|@RATE@|$rate|g" \
        -e "s|@BUDGET@|$budget|g" -e "/^#/d" "$here/check-cronjob.yaml"
    i=$((i + 1))
done
