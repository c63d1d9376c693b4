#!/usr/bin/env bash
# The daily check's deploy files, offline (deploy/README.md, "The daily
# check"): the Prometheus alert rules and their unit tests, the example
# textfile (lint, and node_exporter's own textfile collector reading it), the
# systemd service and timer, and the per-node CronJobs against the
# Kubernetes schema with their privileges read back. Each part shows its
# tool refusing something broken, so a PASS means the tool looked.
#
# Tools: promtool and prometheus-node-exporter (Debian: prometheus,
# prometheus-node-exporter), systemd-analyze, kubernetes-validate (PyPI) and
# python3 with PyYAML. A missing tool skips its part, or fails it with
# PERF_TESTS=require. No service is installed, no unit started, no cluster
# contacted; node_exporter runs on 127.0.0.1 for a second, on a free port.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
prom=$repo/deploy/prometheus
units=$repo/deploy/systemd
T=$(mktemp -d)
ne_pid=""
trap '[ -n "$ne_pid" ] && kill "$ne_pid" 2>/dev/null; rm -rf "$T"' EXIT
fails=0
skips=0
check() { local what=$1; shift; if "$@"; then echo "PASS: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi; }
# missing TOOL HOW: SKIP (or FAIL under PERF_TESTS=require); true when missing.
missing() {
    command -v "$1" >/dev/null && return 1
    if [ "${PERF_TESTS:-}" = require ]; then
        echo "FAIL: $1 missing ($2)"; fails=$((fails + 1))
    else
        echo "SKIP: $1 missing ($2)"; skips=$((skips + 1))
    fi
    return 0
}
# quiet CMD...: succeeds when CMD exits 0 and prints nothing (promtool's lint
# and systemd-analyze's parse warnings exit 0 but print).
quiet() {
    local out
    if out=$("$@" 2>&1) && [ -z "$out" ]; then return 0; fi
    printf '%s\n' "$out" | sed 's/^/    /'
    return 1
}
refused() { ! "$@" >/dev/null 2>&1; }
prints() { local out; out=$("$@" 2>&1); [ -n "$out" ]; }

# --- The names the check writes (docs/results-format.md, "perf_overhead.prom",
# --textfile): every series but the last two carries these labels, the
# budget_* ones a budget label more.
labels="contents event profiler rate_hz scope subject work_kind"
names="perf_overhead_cost_per_sample_seconds perf_overhead_cost_per_sample_lo_seconds
perf_overhead_cost_per_sample_hi_seconds perf_overhead_cost_per_sample_pred_lo_seconds
perf_overhead_cost_per_sample_pred_hi_seconds perf_overhead_predicted_loss_ratio
perf_overhead_predicted_loss_lo_ratio perf_overhead_predicted_loss_hi_ratio
perf_overhead_achieved_hz perf_overhead_runs perf_overhead_noisy_runs
perf_overhead_budget_max_hz perf_overhead_budget_rate_hz perf_overhead_check_budget_ratio
perf_overhead_check_within_budget perf_overhead_max_rate_hertz perf_overhead_check_exit_code"
bare="perf_overhead_check_timestamp_seconds perf_overhead_check_success"

if ! missing python3 "apt-get install python3-yaml"; then
    python3 - "$prom/example.prom" "$prom/perf-overhead.rules.yml" "$labels" "$names" "$bare" <<'PY' || fails=$((fails + 1))
import re, sys, yaml
path, rules, labels, names, bare = sys.argv[1:]
labels, names, bare = set(labels.split()), names.split(), bare.split()
seen, bad = {}, []
def want(cond, what):
    print(("PASS: " if cond else "FAIL: ") + what)
    if not cond:
        bad.append(what)
lines = [l.strip() for l in open(path) if l.strip() and not l.startswith("#")]
samples = [re.match(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$', l) for l in lines]
want(all(samples), "example.prom: every sample is name{labels} value, without a timestamp")
for m in filter(None, samples):
    seen.setdefault(m[1], []).append(set(re.findall(r'([a-z_]+)="', m[2] or "")))
want(sorted(seen) == sorted(names + bare), f"example.prom: exactly the {len(names + bare)} metric names the check writes")
wrong = [n for n, sets in seen.items() if any(s != (set() if n in bare else labels
         | ({"budget"} if n.startswith("perf_overhead_budget_") else set())) for s in sets)]
want(not wrong, "example.prom: each series labelled " + " ".join(sorted(labels))
     + ", budget_* with budget too, the last two bare" + (f" (wrong: {', '.join(wrong)})" if wrong else ""))
used = set(re.findall(r'perf_overhead_[a-z_]+', " ".join(
    r["expr"] + " ".join(r.get("annotations", {}).values())
    for g in yaml.safe_load(open(rules))["groups"] for r in g["rules"])))
want(used <= set(seen), f"the rules use only names the check writes ({', '.join(sorted(used - set(seen))) or 'all known'})")
sys.exit(1 if bad else 0)
PY
fi

# --- Prometheus: the rules, their unit tests, the example textfile's lint.
if ! missing promtool "apt-get install prometheus"; then
    check "promtool check rules perf-overhead.rules.yml" \
        bash -c "promtool check rules '$prom/perf-overhead.rules.yml' >/dev/null"
    check "promtool test rules: each alert firing and not firing" \
        bash -c "promtool test rules '$prom/perf-overhead.rules.test.yml' >'$T/test.out' 2>&1 || { sed 's/^/    /' '$T/test.out'; false; }"
    check "promtool check metrics < example.prom: no lint output" quiet bash -c "promtool check metrics < '$prom/example.prom'"
    # Negative: a broken expression, a changed threshold, a lint error.
    mkdir -p "$T/rules"
    sed 's/expr: perf_overhead_check_within_budget == 0/expr: perf_overhead_check_within_budget ==/' \
        "$prom/perf-overhead.rules.yml" > "$T/rules/perf-overhead.rules.yml"
    check "promtool refuses a rules file with a broken expression" \
        refused promtool check rules "$T/rules/perf-overhead.rules.yml"
    sed 's/^          ) > 0\.5$/          ) > 0.1/' "$prom/perf-overhead.rules.yml" > "$T/rules/perf-overhead.rules.yml"
    cp "$prom/perf-overhead.rules.test.yml" "$T/rules/"
    check "the unit tests fail when the cost threshold moves from 50 % to 10 %" \
        bash -c "! cmp -s '$prom/perf-overhead.rules.yml' '$T/rules/perf-overhead.rules.yml' \
                 && ! promtool test rules '$T/rules/perf-overhead.rules.test.yml' >/dev/null 2>&1"
    sed 's/perf_overhead_cost_per_sample_seconds/perf_overhead_cost_per_sample_ns/' "$prom/example.prom" > "$T/bad.prom"
    check "promtool's lint refuses a _ns metric name" prints bash -c "promtool check metrics < '$T/bad.prom'"
fi

# --- node_exporter's textfile collector reads the example whole (it skips
# a whole file for one bad line, e.g. a sample with a timestamp), and its
# default folder is the one the unit and the CronJob write to.
if ! missing prometheus-node-exporter "apt-get install prometheus-node-exporter"; then
    check "node_exporter's default textfile folder is /var/lib/prometheus/node-exporter" \
        bash -c "prometheus-node-exporter --help 2>&1 | grep -q -- '--collector.textfile.directory=\"/var/lib/prometheus/node-exporter\"'"
    mkdir -p "$T/textfile"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    prometheus-node-exporter --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
        --collector.textfile --collector.textfile.directory="$T/textfile" >"$T/ne.log" 2>&1 &
    ne_pid=$!
    # scrape: the perf_overhead_ families and the collector's error gauge.
    scrape() {
        python3 - "$port" <<'PY'
import sys, time, urllib.request
for _ in range(50):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=2).read().decode()
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("node_exporter did not answer")
fams = {l.split()[2] for l in text.splitlines() if l.startswith("# TYPE perf_overhead_")}
err = [l.split()[1] for l in text.splitlines() if l.startswith("node_textfile_scrape_error ")]
print(len(fams), err[0] if err else "?")
PY
    }
    cp "$prom/example.prom" "$T/textfile/perf_overhead.prom"
    got=$(scrape)
    check "node_exporter serves the example: 19 perf_overhead_ families, scrape error 0 (got: $got)" \
        test "$got" = "19 0"
    sed 's/^perf_overhead_check_success 1$/perf_overhead_check_success 1 1795741668000/' \
        "$prom/example.prom" > "$T/textfile/perf_overhead.prom"
    got=$(scrape)
    check "node_exporter skips the whole file for a sample with a timestamp (got: $got)" \
        test "$got" = "0 1"
    kill "$ne_pid" 2>/dev/null; wait "$ne_pid" 2>/dev/null; ne_pid=""
fi

# --- systemd: `systemd-analyze verify` works without systemd as PID 1. It
# parses every line of both units (an unknown key or a bad value is only a
# printed warning with exit 0, hence `quiet`), requires ExecStart's binary
# to exist and be executable, and loads the timer. It starts nothing: not
# the check, not the capabilities against the kernel, not the driver's
# arguments. The units are copied with ExecStart pointed at a stub.
if ! missing systemd-analyze "apt-get install systemd"; then
    mkdir -p "$T/units/bin"
    printf '#!/bin/sh\nexit 0\n' > "$T/units/bin/perf-overhead-driver"
    chmod +x "$T/units/bin/perf-overhead-driver"
    sed "s|/usr/local/bin/perf-overhead-driver|$T/units/bin/perf-overhead-driver|" \
        "$units/perf-overhead-check.service" > "$T/units/perf-overhead-check.service"
    cp "$units/perf-overhead-check.timer" "$T/units/"
    check "systemd-analyze verify: the service and the timer, no warning" \
        quiet systemd-analyze verify --man=no "$T/units/perf-overhead-check.service" "$T/units/perf-overhead-check.timer"
    sed 's/^Type=oneshot/Type=oneshoot/' "$T/units/perf-overhead-check.service" > "$T/units/bad.service"
    check "systemd-analyze verify warns about a bad value (Type=oneshoot)" \
        prints systemd-analyze verify --man=no "$T/units/bad.service"
    sed 's|^ExecStart=[^ ]*|ExecStart=/nonexistent/perf-overhead-driver|' "$T/units/perf-overhead-check.service" > "$T/units/nobin.service"
    check "systemd-analyze verify refuses a missing ExecStart binary" \
        refused systemd-analyze verify --man=no "$T/units/nobin.service"
    check "the timer's OnCalendar parses (systemd-analyze calendar)" \
        bash -c "systemd-analyze calendar \"\$(sed -n 's/^OnCalendar=//p' '$units/perf-overhead-check.timer')\" >/dev/null"
    # What the units say, read back (continuation lines joined).
    python3 - "$units/perf-overhead-check.service" "$units/perf-overhead-check.timer" <<'PY' || fails=$((fails + 1))
import re, sys
def read(p):
    d = {}
    for line in re.sub(r"\\\n\s*", " ", open(p).read()).splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
            k, v = line.split("=", 1)
            d.setdefault(k.strip(), []).append(v.strip())
    return d
s, t = read(sys.argv[1]), read(sys.argv[2])
bad = []
def want(cond, what):
    print(("PASS: " if cond else "FAIL: ") + what)
    if not cond:
        bad.append(what)
argv = s["ExecStart"][0].split()
want(s["Type"] == ["oneshot"], "service: Type=oneshot")
want(argv[:2] == ["/usr/local/bin/perf-overhead-driver", "check"]
     and "--textfile /var/lib/prometheus/node-exporter" in " ".join(argv)
     and "--history /var/lib/perf-overhead" in " ".join(argv), "service: driver check, textfile and history folders")
want(sorted(s["SuccessExitStatus"][0].split()) == ["1", "3"], "service: exit 1 and 3 are results (SuccessExitStatus=1 3)")
want(s.get("StateDirectory") == ["perf-overhead"], "service: StateDirectory=perf-overhead")
want(s.get("CapabilityBoundingSet") == ["CAP_PERFMON CAP_SYSLOG CAP_SYS_NICE"], "service: capabilities PERFMON, SYSLOG, SYS_NICE only")
want(s.get("Nice", ["0"]) == ["0"] and not {"CPUQuota", "CPUWeight", "CPUSchedulingPolicy", "IOSchedulingClass"} & set(s),
     "service: priority not lowered (no Nice>0, CPUQuota, CPUWeight, idle policy)")
want(s.get("UMask") == ["0022"], "service: the textfile stays readable by node_exporter (UMask=0022)")
want(t["OnCalendar"] == ["daily"] and t.get("Persistent") == ["true"] and "RandomizedDelaySec" in t,
     "timer: daily, Persistent, RandomizedDelaySec")
want("Unit" not in t or t["Unit"] == ["perf-overhead-check.service"], "timer: starts perf-overhead-check.service")
sys.exit(1 if bad else 0)
PY
fi

# --- Kubernetes: one CronJob per node, against the schemas check-manifests.sh
# uses, and its privileges read back against the sweep Job's.
if ! missing kubernetes-validate "pip install kubernetes-validate"; then
    "$repo/deploy/k8s/render-checks.sh" -i registry.example/perf-overhead-driver:1 \
        web-17.example.com gpu-node-3 > "$T/checks.yaml"
    "$repo/deploy/k8s/render-checks.sh" -r 4000 -b 0.5% -s '30 2 * * *' web-18 > "$T/checks-options.yaml"
    "$repo/deploy/k8s/render-jobs.sh" web-17.example.com > "$T/job.yaml"
    for v in 1.25.0 1.30.0 1.37.0; do
        check "schema $v --strict: check-cronjob.yaml and the rendered CronJobs" \
            kubernetes-validate --strict --quiet -k "$v" "$repo/deploy/k8s/check-cronjob.yaml" \
            "$T/checks.yaml" "$T/checks-options.yaml"
    done
    sed 's/concurrencyPolicy: Forbid/concurrencyPolicy: Forbid\n  concurrency: 1/' "$T/checks-options.yaml" > "$T/bad-field.yaml"
    check "the validator refuses an unknown CronJob field" \
        refused kubernetes-validate --strict --quiet "$T/bad-field.yaml"
    check "render-checks.sh refuses two nodes with one name, and renders nothing" \
        bash -c "! '$repo/deploy/k8s/render-checks.sh' a.one a.two > '$T/dup.yaml' 2>/dev/null && [ ! -s '$T/dup.yaml' ]"
    python3 - "$T/checks.yaml" "$T/checks-options.yaml" "$T/job.yaml" <<'PY' || fails=$((fails + 1))
import sys, yaml
load = lambda p: [d for d in yaml.safe_load_all(open(p)) if d]
crons, opts, job = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3])[0]
bad = []
def want(cond, what):
    print(("PASS: " if cond else "FAIL: ") + what)
    if not cond:
        bad.append(what)
pod = lambda c: c["spec"]["jobTemplate"]["spec"]["template"]["spec"]
want([c["kind"] for c in crons] == ["CronJob", "CronJob"]
     and [pod(c)["nodeName"] for c in crons] == ["web-17.example.com", "gpu-node-3"],
     "one CronJob per node, pinned by nodeName")
want(len({c["spec"]["schedule"] for c in crons}) == 2, "each node at its own time of day")
want(all(len(c["metadata"]["name"]) <= 52 for c in crons), "CronJob names within 52 characters")
jspec = job["spec"]["template"]["spec"]
jdrv = [c for c in jspec["containers"] if c["name"] == "sweep"][0]
jvols = {v["name"]: v for v in jspec["volumes"]}
for c in crons + opts:
    spec, n = pod(c), pod(c)["nodeName"]
    [drv] = spec["containers"]
    want(spec.get("hostPID") is True and not spec.get("hostNetwork") and not spec.get("hostIPC")
         and spec["securityContext"] == jspec["securityContext"], f"{n}: hostPID, seccomp as the sweep Job's")
    want(drv["securityContext"] == jdrv["securityContext"],
         f"{n}: the sweep Job's container privileges exactly (PERFMON, SYSLOG, SYS_NICE, not privileged)")
    want(drv["resources"] == jdrv["resources"] and "cpu" not in drv["resources"].get("limits", {}),
         f"{n}: the sweep Job's resources, no CPU limit")
    vols = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m for m in drv["volumeMounts"]}
    want(vols["tracefs"] == jvols["tracefs"] and vols["state"] == jvols["state"]
         and mounts["/sys/kernel/tracing"].get("readOnly") is True, f"{n}: tracefs read-only, the host's sweep lock")
    want(vols["textfile"]["hostPath"]["path"] == "/var/lib/prometheus/node-exporter"
         and vols["history"]["hostPath"]["path"] == "/var/lib/perf-overhead"
         and mounts["/var/lib/prometheus/node-exporter"]["name"] == "textfile"
         and mounts["/var/lib/perf-overhead"]["name"] == "history", f"{n}: textfile and history on the node")
    want("/sys/kernel/debug" not in mounts and not any("hostPath" in v for k, v in vols.items()
         if k not in ("tracefs", "state", "textfile", "history")), f"{n}: no other host folder")
    a = drv["args"]
    want(a[0] == "check" and a[a.index("--textfile") + 1] == "/var/lib/prometheus/node-exporter"
         and a[a.index("--history") + 1] == "/var/lib/perf-overhead"
         and a[a.index("--scope") + 1] == "cpu", f"{n}: driver check --scope cpu, textfile, history")
    want(c["spec"]["concurrencyPolicy"] == "Forbid" and c["spec"]["jobTemplate"]["spec"]["backoffLimit"] == 0
         and spec["restartPolicy"] == "Never", f"{n}: never two at once, no retry")
a = opts[0]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
want(a[a.index("--rate") + 1] == "4000" and a[a.index("--budget") + 1] == "0.5%"
     and opts[0]["spec"]["schedule"] == "30 2 * * *", "-r, -b and -s reach the CronJob")
sys.exit(1 if bad else 0)
PY
fi

echo "check-deploy: $fails failed, $skips skipped"
[ "$fails" = 0 ]
