#!/usr/bin/env bash
# Render deploy/k8s/job.yaml once per node, and the experiment's ConfigMap,
# on stdout (deploy/README.md, "Kubernetes").
#
#   deploy/k8s/render-jobs.sh -i REGISTRY/perf-overhead-driver:TAG \
#       -e experiments/quick.toml $(kubectl get nodes -o name | sed 's|^node/||') \
#     | kubectl apply -f -
#
# -i IMAGE       the driver image (deploy/Containerfile)
# -e FILE.toml   an experiment file; without it the playbook's default sweep
#                (--freqs 100,500,2000,4000,20000) runs
# -d YYYY-MM-DD  the dataset's date= (default: today, UTC): one per run
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
image=perf-overhead-driver:latest
experiment=""
date=$(date -u +%F)
while getopts i:e:d: opt; do
    case $opt in
        i) image=$OPTARG ;;
        e) experiment=$OPTARG ;;
        d) date=$OPTARG ;;
        *) echo "usage: $0 [-i IMAGE] [-e EXPERIMENT.toml] [-d YYYY-MM-DD] NODE..." >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-i IMAGE] [-e EXPERIMENT.toml] [-d YYYY-MM-DD] NODE..." >&2; exit 2; }
[[ $date =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] || { echo "error: -d $date is not YYYY-MM-DD" >&2; exit 2; }

if [ -n "$experiment" ]; then
    [ -f "$experiment" ] || { echo "error: -e $experiment: no such file" >&2; exit 2; }
    sweep_args='--experiment, /etc/perf-overhead/experiment.toml'
    cat <<CM
apiVersion: v1
kind: ConfigMap
metadata:
  name: perf-overhead-experiment
  namespace: perf-overhead
  labels:
    app.kubernetes.io/name: perf-overhead
data:
  experiment.toml: |
$(sed 's/^/    /' "$experiment")
CM
else
    sweep_args='--freqs, "100,500,2000,4000,20000"'
fi

for node in "$@"; do
    # Names and the pod's hostname are DNS labels: the node name's first
    # label, lower case, at most 40 characters (the Job's name adds 24).
    label=$(printf '%s' "${node%%.*}" | tr '[:upper:]' '[:lower:]' | tr -c 'a-z0-9-' '-' | cut -c1-40 | sed 's/^-*//; s/-*$//')
    [ -n "$label" ] || { echo "error: node name '$node' gives no DNS label" >&2; exit 2; }
    echo "---"
    sed -e "s|@NODE@|$node|g" -e "s|@NODE_LABEL@|$label|g" -e "s|@DATE@|$date|g" \
        -e "s|@DATE_COMPACT@|${date//-/}|g" -e "s|@IMAGE@|$image|g" \
        -e "s|@SWEEP_ARGS@|$sweep_args|g" -e "/^#/d" "$here/job.yaml"
done
