#!/usr/bin/env bash
# `driver check` read by a real Prometheus through a real node_exporter:
# prometheus-node-exporter (Debian) with its textfile collector on a
# temporary folder and prometheus (Debian) scraping it every second, both on
# 127.0.0.1 on free ports; one `driver check --textfile`; then Prometheus'
# HTTP query API must return the check's cost per sample, its verdict and
# its exit status exactly as the check's --json answer says them. Both
# servers are stopped at the end, however the script ends.
#
#   deploy/tests/check-prometheus.sh DRIVER   (root: the check samples)
#   apt-get install prometheus prometheus-node-exporter
# Skips when a server is missing, unless PERF_TESTS=require.
set -uo pipefail
driver=${1:?usage: check-prometheus.sh DRIVER}
for b in prometheus prometheus-node-exporter promtool; do
    if ! command -v "$b" >/dev/null; then
        [ "${PERF_TESTS:-}" = require ] && { echo "FAIL: $b missing (apt-get install prometheus prometheus-node-exporter)"; exit 1; }
        echo "SKIP: $b missing (apt-get install prometheus prometheus-node-exporter)"
        exit 0
    fi
done
T=$(mktemp -d)
pids=()
stop() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap stop EXIT
fails=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { # URL SECONDS
    local i
    for i in $(seq 1 $(($2 * 10))); do
        curl -fsS "$1" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

mkdir -p "$T/textfile" "$T/history" "$T/tsdb"
NE=$(free_port)
PR=$(free_port)
prometheus-node-exporter --web.listen-address="127.0.0.1:$NE" \
    --collector.disable-defaults --collector.textfile \
    --collector.textfile.directory="$T/textfile" >"$T/node-exporter.log" 2>&1 &
pids+=($!)
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$NE']
EOF
promtool check config "$T/prometheus.yml" >/dev/null || fail "promtool check config"
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
    --web.listen-address="127.0.0.1:$PR" >"$T/prometheus.log" 2>&1 &
pids+=($!)
if wait_http "http://127.0.0.1:$NE/metrics" 20 && wait_http "http://127.0.0.1:$PR/-/ready" 30; then
    pass "node_exporter on :$NE and prometheus on :$PR are up"
else
    fail "the servers did not come up"; tail -5 "$T"/*.log; exit 1
fi

"$driver" check --rate 1000 --time 14s --scope cpu --budget 1% \
    --textfile "$T/textfile" --history "$T/history" --json >"$T/answer.json" 2>"$T/check.err"
code=$?
case $code in
    0|1|3) pass "driver check ran (exit $code)" ;;
    *) fail "driver check exited $code"; tail -5 "$T/check.err"; exit 1 ;;
esac
if promtool check metrics <"$T/textfile/perf_overhead.prom" >"$T/lint" 2>&1 && [ ! -s "$T/lint" ]; then
    pass "promtool check metrics: the check's textfile has no lint"
else
    fail "promtool check metrics"; cat "$T/lint"
fi

# The query API until the first scrape after the check has the series.
query() { curl -fsS "http://127.0.0.1:$PR/api/v1/query" --data-urlencode "query=$1"; }
for i in $(seq 1 300); do
    query 'perf_overhead_cost_per_sample_seconds' >"$T/cost.json" 2>/dev/null \
        && python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["data"]["result"] else 1)' "$T/cost.json" && break
    sleep 0.1
done
query 'perf_overhead_check_exit_code' >"$T/exit.json"
query 'perf_overhead_check_within_budget' >"$T/within.json"
query 'perf_overhead_check_success' >"$T/success.json"
python3 - "$T" "$code" <<'EOF'
import json, sys
t, code = sys.argv[1], int(sys.argv[2])
answer = json.load(open(f"{t}/answer.json"))
row = answer["rows"][0]
def result(name):
    r = json.load(open(f"{t}/{name}.json"))["data"]["result"]
    return r
fails = 0
def check(what, ok, detail):
    global fails
    print(("PASS: " if ok else "FAIL: ") + what + ("" if ok else f" ({detail})"))
    fails += 0 if ok else 1
cost = result("cost")
want = row["cost_per_sample_ns"] * 1e-9
got = float(cost[0]["value"][1]) if cost else None
check(f"Prometheus' cost per sample equals the JSON's: {got!r} == {want!r} s", got == want, cost)
labels = cost[0]["metric"] if cost else {}
check("its labels: rate_hz, event, scope, subject",
      labels.get("rate_hz") == "1000" and labels.get("event") == row["event"]
      and labels.get("scope") == "cpu" and labels.get("subject") == row["subject"], labels)
ex = result("exit")
check(f"the exit status metric equals the check's ({code})",
      bool(ex) and float(ex[0]["value"][1]) == code == answer["exit_code"], ex)
wb = result("within")
if answer["within_budget"] is None:
    check("unresolved: no within_budget series", not wb, wb)
else:
    check("within_budget equals the JSON's",
          bool(wb) and float(wb[0]["value"][1]) == (1.0 if answer["within_budget"] else 0.0), wb)
ok = result("success")
check("check_success is 1: the check measured a cost", bool(ok) and ok[0]["value"][1] == "1", ok)
sys.exit(1 if fails else 0)
EOF
[ $? -eq 0 ] || fails=$((fails + 1))
echo "check-prometheus: $fails failed"
[ "$fails" -eq 0 ]
