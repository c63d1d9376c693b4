#!/usr/bin/env bash
# The Kubernetes manifests against the Kubernetes API schema, offline:
# kubernetes-validate (PyPI) bundles the OpenAPI-derived JSON schemas of
# each Kubernetes release, and --strict refuses any field the schema does not
# know. The Job template is rendered by deploy/k8s/render-jobs.sh first, as
# a user would, with and without an experiment file. Then the privileges
# are read back from the rendered Job, so a change that widens them fails
# here. No cluster is contacted.
#
#   pip install kubernetes-validate   (skips without it, unless PERF_TESTS=require)
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v kubernetes-validate >/dev/null; then
    [ "${PERF_TESTS:-}" = require ] && { echo "FAIL: kubernetes-validate missing (pip install kubernetes-validate)"; exit 1; }
    echo "SKIP: kubernetes-validate missing (pip install kubernetes-validate)"
    exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
check() { local what=$1; shift; if "$@"; then echo "PASS: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi; }

"$repo/deploy/k8s/render-jobs.sh" -i registry.example/perf-overhead-driver:1 \
    -e "$repo/experiments/quick.toml" -d 2026-11-27 web-17.example.com gpu-node-3 > "$T/with-experiment.yaml"
"$repo/deploy/k8s/render-jobs.sh" web-18 > "$T/default-sweep.yaml"

# The oldest and the newest schema the package bundles, and one between.
for v in 1.25.0 1.30.0 1.37.0; do
    check "schema $v --strict: namespace.yaml and the rendered Jobs" \
        kubernetes-validate --strict --quiet -k "$v" "$repo/deploy/k8s/namespace.yaml" \
        "$T/with-experiment.yaml" "$T/default-sweep.yaml"
done

# The validator can say no: a wrong type and an unknown field are refused.
sed 's/hostPID: true/hostPID: "yes"/' "$T/default-sweep.yaml" > "$T/bad-type.yaml"
sed 's/restartPolicy: Never/restartPolicy: Never\n      privilegedMode: true/' "$T/default-sweep.yaml" > "$T/bad-field.yaml"
check "the validator refuses hostPID: \"yes\"" bash -c "! kubernetes-validate --strict --quiet '$T/bad-type.yaml' >/dev/null 2>&1"
check "the validator refuses an unknown field" bash -c "! kubernetes-validate --strict --quiet '$T/bad-field.yaml' >/dev/null 2>&1"

# What the Jobs are granted, read back from the rendered YAML.
python3 - "$T/with-experiment.yaml" <<'PY' || fails=$((fails + 1))
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
jobs = [d for d in docs if d["kind"] == "Job"]
bad = []
def want(cond, what):
    print(("PASS: " if cond else "FAIL: ") + what)
    if not cond:
        bad.append(what)
want(len(jobs) == 2 and {j["spec"]["template"]["spec"]["nodeName"] for j in jobs}
     == {"web-17.example.com", "gpu-node-3"}, "one Job per node, pinned by nodeName")
for j in jobs:
    spec = j["spec"]["template"]["spec"]
    n = spec["nodeName"]
    want(spec.get("hostPID") is True and not spec.get("hostNetwork") and not spec.get("hostIPC"),
         f"{n}: hostPID only (no hostNetwork, no hostIPC)")
    want(j["spec"]["backoffLimit"] == 0 and spec["restartPolicy"] == "Never",
         f"{n}: no retry (a retry would measure twice)")
    driver = spec["initContainers"] + [c for c in spec["containers"] if c["name"] == "sweep"]
    for c in driver:
        sc = c["securityContext"]
        want(sc.get("privileged") is False and sc.get("allowPrivilegeEscalation") is False,
             f"{n}/{c['name']}: not privileged, no privilege escalation")
        want(sc["capabilities"] == {"drop": ["ALL"], "add": ["PERFMON", "SYSLOG", "SYS_NICE"]},
             f"{n}/{c['name']}: capabilities exactly PERFMON, SYSLOG, SYS_NICE")
        mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
        want(mounts["/sys/kernel/tracing"].get("readOnly") is True, f"{n}/{c['name']}: tracefs read-only")
        want("/sys/kernel/debug" not in mounts, f"{n}/{c['name']}: no debugfs")
    want(spec["initContainers"][0]["args"] == ["probe", "--json"], f"{n}: the probe runs first")
    sweep = [c for c in spec["containers"] if c["name"] == "sweep"][0]
    want(sweep["args"][:3] == ["sweep", "--scope", "cpu"], f"{n}: sweep --scope cpu")
    hold = [c for c in spec["containers"] if c["name"] == "hold"][0]
    want(hold["securityContext"]["capabilities"] == {"drop": ["ALL"]}
         and hold["securityContext"]["runAsNonRoot"] is True, f"{n}/hold: no capability, not root")
    vols = {v["name"]: v for v in spec["volumes"]}
    want(vols["tracefs"]["hostPath"]["path"] == "/sys/kernel/tracing", f"{n}: tracefs from the host")
    want("emptyDir" in vols["results"], f"{n}: results in an emptyDir (removed with the pod)")
sys.exit(1 if bad else 0)
PY

echo "check-manifests: $fails failed"
[ "$fails" = 0 ]
