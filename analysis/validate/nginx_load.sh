#!/bin/sh
# One run's load for experiments/nginx-latency.toml: h2load sends requests
# to nginx at a constant rate for a fixed time and logs every request's
# latency (microseconds) into the run's folder. The driver starts this
# pinned to the measured CPU, where nginx runs; h2load is moved to the load
# CPU so that it does not compete with the server. Set by nginx_latency.py:
#   NGINX_LATENCY_URL      the request, e.g. http://127.0.0.1:18080/work?n=60000
#   NGINX_LATENCY_LOAD_CPU the CPU h2load runs on
#   NGINX_LATENCY_RPS      requests per second (h2load's timer ticks every
#                          ~10 ms here: at most 100/s is one per tick)
#   NGINX_LATENCY_SECONDS  how long
set -eu
: "${PERF_OVERHEAD_RUN_DIR:?run through driver sweep, which names the run folder}"
: "${NGINX_LATENCY_URL:?run through analysis/validate/nginx_latency.py}"
exec taskset -c "${NGINX_LATENCY_LOAD_CPU:-0}" h2load --h1 -c 1 -m 64 \
    --rps "${NGINX_LATENCY_RPS:-100}" -D "${NGINX_LATENCY_SECONDS:-20}" \
    --log-file "$PERF_OVERHEAD_RUN_DIR/requests.tsv" "$NGINX_LATENCY_URL" \
    > "$PERF_OVERHEAD_RUN_DIR/h2load.txt"
