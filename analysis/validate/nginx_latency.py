"""what perf record does to a real server's request
latency, against what the latency model predicts for that request size.

    python3 analysis/validate/nginx_latency.py OUT [--cpu 1] [--load-cpu 0]

1. Starts nginx (Debian's, with its Lua module) pinned to the measured CPU:
   one worker, one location whose request runs a Lua loop of n iterations.
   n is sized beforehand, without sampling, so that a request takes about
   --target-us (1 ms) at the median.
2. Runs `driver sweep --experiment experiments/nginx-latency.toml`: per
   randomised block, one run at 0 Hz and one under `perf record -e
   cpu-clock -F F -C CPU -o /dev/null` (the driver's --profiler) at 99, 999
   and 3999 Hz. Each run's command (nginx_load.sh) is h2load on the load
   CPU sending requests at a constant rate for --seconds and logging each
   one's latency.
3. Runs a gaps sweep of our sampler (perf record's sample contents, cpu
   scope, same CPU) at the same rates: the latency model's per-sample costs.
   The same sweep again with a control in place of perf record: a process
   on the measured CPU that only wakes at the rate (perl's usleep), no
   sampling. An idle vCPU answers a wake-up slower than one that a timer
   keeps waking; the control measures that effect alone.
4. Per run, p50/p99/p99.9 of the request latency; per block, each rate's
   percentile minus the 0 Hz run's; mean and 95 % t interval over blocks
   (scipy), for perf record and for the control. What sampling itself adds
   = perf record's minus the control's (independent sweeps: their standard
   errors add in quadrature). The model's prediction for a request of the
   0 Hz median's size comes from `analysis latency OUT/model --size ...`
   (kept in OUT/prediction.json). Agreement: |sampling - predicted| <=
   1.96 sqrt(se_s^2 + se_p^2).
5. Writes OUT/server_latency.csv and OUT/server_latency.md; stops nginx
   (also on Ctrl-C). `--analyse-only` redoes step 4 on a folder that holds
   the sweeps (a committed one: its logs gzipped, the model's prediction
   from prediction.json).

Why h2load: it is a Debian package (nghttp2-client) with a constant
request rate (--rps) that does not wait for responses (HTTP/1.1 pipelining,
-m 64), so a slow response does not delay the next request: no coordinated
omission. wrk (Debian's 4.1, not wrk2) is closed-loop: it sends the next
request only when the last one is answered, so the requests that would have
waited behind a slow one are never sent and the tail is understated. The
script checks this on the logs: how many requests were sent while the one
before was still outstanding, and how regular the sends were.
"""
import argparse
import csv
import gzip
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from validate_common import stop_group, t_interval

RATES = [99, 999, 3999]
# The control in place of perf record: wakes on the measured CPU at the
# rate and does nothing else (perl's usleep; no sampling).
TIMER_CONTROL = "taskset -c {cpu} perl -MTime::HiRes=usleep -e 'usleep(1e6/{freq}) while 1'"
PERCENTILES = [50.0, 99.0, 99.9]
NGINX_CONF = """\
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
daemon off;
master_process on;
worker_processes 1;
worker_cpu_affinity {mask};
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location /work {{
      content_by_lua_block {{
        local n = tonumber(ngx.var.arg_n) or 1000
        local x = 0
        for i = 1, n do x = (x * 31 + i) % 1000003 end
        ngx.say(x)
      }}
    }}
  }}
}}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(conf_dir, cpu, port):
    conf_dir.mkdir(parents=True, exist_ok=True)
    mask = "1" + "0" * cpu
    conf = conf_dir / "nginx.conf"
    conf.write_text(NGINX_CONF.format(mask=mask, dir=conf_dir, port=port))
    proc = subprocess.Popen(
        ["taskset", "-c", str(cpu), "nginx", "-c", str(conf), "-p", str(conf_dir)],
        start_new_session=True,
    )
    for _ in range(100):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            if proc.poll() is not None:
                sys.exit(f"nginx exited with {proc.returncode}; see {conf_dir}/error.log")
            time.sleep(0.1)
    stop_group(proc)
    sys.exit(f"nginx did not listen on 127.0.0.1:{port} within 10 s; see {conf_dir}/error.log")


def read_log(path):
    """(start_us, latency_us) of each answered request, in send order, and
    the number that failed (h2load's log, or its .gz as committed)."""
    path = Path(path)
    if not path.exists() and path.with_suffix(".tsv.gz").exists():
        text = gzip.decompress(path.with_suffix(".tsv.gz").read_bytes()).decode()
    else:
        text = path.read_text()
    rows = [l.split("\t") for l in text.splitlines() if l.strip()]
    ok = [(int(r[0]), int(r[2])) for r in rows if r[1] == "200"]
    ok.sort()
    return np.array(ok, dtype=np.int64).reshape(-1, 2), len(rows) - len(ok)


def h2load(url, load_cpu, rps, seconds, log):
    subprocess.run(
        ["taskset", "-c", str(load_cpu), "h2load", "--h1", "-c", "1", "-m", "64",
         "--rps", str(rps), "-D", str(seconds), "--log-file", str(log), url],
        check=True, stdout=subprocess.DEVNULL,
    )
    return read_log(log)[0]


def size_request(base, load_cpu, target_us, tmp):
    """n iterations whose request takes about target_us at the median."""
    n = 50000
    for i in range(3):
        lat = h2load(f"{base}?n={n}", load_cpu, 100, 3, tmp / f"size-{i}.tsv")[:, 1]
        p50 = float(np.median(lat))
        print(f"sizing: n={n}: median {p50:.0f} us over {len(lat)} requests", flush=True)
        if abs(p50 - target_us) < 0.05 * target_us:
            break
        n = max(1000, round(n * target_us / p50))
    return n


def schedule_check(log):
    """Sends while the previous request was outstanding, and the spread of
    the time between sends: open-loop evidence."""
    start, lat = log[:, 0], log[:, 1]
    overlapped = int(np.sum(start[1:] < start[:-1] + lat[:-1]))
    gaps = np.diff(start)
    return overlapped, float(np.median(gaps)), float(np.max(gaps))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--cpu", type=int, default=1, help="the measured CPU (nginx, perf record -C)")
    ap.add_argument("--load-cpu", type=int, default=0, help="where h2load runs")
    ap.add_argument("--target-us", type=float, default=1000.0)
    ap.add_argument("--rps", type=int, default=100)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--model-reps", type=int, default=4)
    ap.add_argument("--model-duration", default="8s", help="the model's gaps runs' length")
    target = Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "release"
    ap.add_argument("--driver", default=str(target / "driver"))
    ap.add_argument("--analysis", default=str(target / "analysis"))
    ap.add_argument("--analyse-only", action="store_true", help="OUT holds both sweeps: compare only")
    ap.add_argument("--model", type=Path, help="a gaps set of our sampler to take the model from (default: measure OUT/model)")
    a = ap.parse_args()
    out = a.out
    if not a.analyse_only:
        if out.exists():
            sys.exit(f"{out} exists: give a new folder (nothing measured is overwritten)")
        out.mkdir(parents=True)
        port = free_port()
        nginx = start_nginx(out / "nginx", a.cpu, port)
        try:
            base = f"http://127.0.0.1:{port}/work"
            with tempfile.TemporaryDirectory() as tmp:
                n = size_request(base, a.load_cpu, a.target_us, Path(tmp))
            env = dict(os.environ, NGINX_LATENCY_URL=f"{base}?n={n}",
                       NGINX_LATENCY_LOAD_CPU=str(a.load_cpu),
                       NGINX_LATENCY_RPS=str(a.rps), NGINX_LATENCY_SECONDS=str(a.seconds))
            (out / "load.json").write_text(json.dumps(
                {"url": env["NGINX_LATENCY_URL"], "iterations": n, "rps": a.rps, "seconds": a.seconds,
                 "cpu": a.cpu, "load_cpu": a.load_cpu}, indent=1) + "\n")
            for name, control in [("server", []), ("control", ["--profiler", TIMER_CONTROL])]:
                subprocess.run([a.driver, "sweep", "--experiment", "experiments/nginx-latency.toml",
                                "--cpu", str(a.cpu), "--reps", str(a.reps), "--out", str(out / name)]
                               + control, env=env, check=True)
        finally:
            stop_group(nginx)
    model = a.model or out / "model"
    if not a.analyse_only and a.model is None:
        subprocess.run([a.driver, "sweep", "--design", "gaps", "--freqs", ",".join(map(str, RATES)),
                        "--sample", "perf-default", "--scope", "cpu", "--cpu", str(a.cpu),
                        "--duration", a.model_duration, "--reps", str(a.model_reps), "--no-util",
                        "--out", str(model)], check=True)
    compare(out, model, a.analysis)


def sweep_percentiles(folder):
    """Each ok run's percentiles by (block, freq), and the schedule's
    figures over all runs."""
    runs = [r for r in csv.DictReader(open(folder / "runs.csv")) if r["status"] == "ok"]
    per = {}
    sched = {"requests": 0, "failed": 0, "overlapped": 0, "gap_med": [], "gap_max": []}
    for r in runs:
        log, bad = read_log(folder / "command" / f"run-{r['run_id']}" / "requests.tsv")
        o, gm, gx = schedule_check(log)
        sched["requests"] += len(log)
        sched["failed"] += bad
        sched["overlapped"] += o
        sched["gap_med"].append(gm)
        sched["gap_max"].append(gx)
        per[(int(r["block"]), int(r["freq_hz"]))] = np.percentile(log[:, 1], PERCENTILES)
    return runs, per, sched


def added(per, f, i):
    """Per block: the rate's percentile i minus the 0 Hz run's, us."""
    return [per[(b, f)][i] - per[(b, 0)][i] for b, g in per if g == 0 and (b, f) in per]


def compare(out, model, analysis):
    runs, per, sched = sweep_percentiles(out / "server")
    _, cper, csched = sweep_percentiles(out / "control")
    zero = np.array([v for (b, f), v in per.items() if f == 0])
    size_us = float(np.mean(zero[:, 0]))
    asked = [analysis, "latency", str(model), "--size", f"{size_us:.0f}us",
             "--rates", ",".join(map(str, RATES)), "--percentiles", ",".join(map(str, PERCENTILES)), "--json"]
    try:
        got = subprocess.run(asked, capture_output=True, text=True)
    except FileNotFoundError:
        # No analysis binary there (--analysis, or CARGO_TARGET_DIR).
        got = subprocess.CompletedProcess(asked, 127, "", f"{analysis} not found")
    saved = out / "prediction.json"
    if got.returncode == 0:
        pred = json.loads(got.stdout)
        saved.write_text(json.dumps({"command": " ".join(asked[1:]), "prediction": pred}, indent=1) + "\n")
    elif saved.exists():
        # A committed set keeps the model's report but not its raw files.
        print(f"the model could not be run ({got.stderr.strip()}); using {saved}", file=sys.stderr)
        pred = json.loads(saved.read_text())["prediction"]
    else:
        sys.exit(f"{' '.join(asked)} failed: {got.stderr.strip()}")
    pred = {(int(p["rate_hz"]), float(p["percentile"])): p for p in pred}
    prof = {}
    for r in runs:
        if int(r["freq_hz"]) > 0 and r.get("profiler_cpu_ns"):
            prof.setdefault(int(r["freq_hz"]), []).append(
                (float(r["profiler_cpu_ns"]) / float(r["wall_ns"]), r.get("profiler_cpus", "")))
    rows = []
    for f in RATES:
        for i, p in enumerate(PERCENTILES):
            d = added(per, f, i)
            c = added(cper, f, i)
            m, lo, hi, se_m = t_interval(d)
            cm, clo, chi, se_c = t_interval(c)
            net, se_net = m - cm, float(np.hypot(se_m, se_c))
            q = pred.get((f, p), {})
            e = q.get("added_ns")
            # One block resolving the percentile gives a value without an
            # interval: the JSON writes its NaN bounds as null.
            us = lambda k: float("nan") if not e or e.get(k) is None else e[k] / 1e3
            pm, plo, phi, se_p = us("value"), us("lo"), us("hi"), us("se")
            lim = 1.96 * float(np.hypot(se_net, se_p))
            verdict = "agree" if abs(net - pm) <= lim else ("DISAGREE" if np.isfinite(lim) else "-")
            rows.append({
                "rate_hz": f, "percentile": p, "blocks": len(d), "control_blocks": len(c),
                "size_us": round(size_us, 1), "at_0hz_us": round(float(np.mean(zero[:, i])), 1),
                "perf_added_us": round(m, 2), "perf_added_lo_us": round(lo, 2), "perf_added_hi_us": round(hi, 2),
                "timer_added_us": round(cm, 2), "timer_added_lo_us": round(clo, 2),
                "timer_added_hi_us": round(chi, 2),
                "sampling_us": round(net, 2), "sampling_lo_us": round(net - 1.96 * se_net, 2),
                "sampling_hi_us": round(net + 1.96 * se_net, 2),
                "predicted_us": round(pm, 2), "predicted_lo_us": round(plo, 2), "predicted_hi_us": round(phi, 2),
                "difference_us": round(net - pm, 2), "limit_us": round(lim, 2), "verdict": verdict,
            })
    with open(out / "server_latency.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    ci = lambda v, lo, hi: f"{v:+.1f} [{lo:+.1f}, {hi:+.1f}]"
    lines = [
        f"nginx on CPU {runs[0]['cpu']}, request of {size_us:.0f} us at the 0 Hz median; "
        f"perf record sweep: {sched['requests']} requests, {sched['failed']} failed; "
        f"timer control sweep: {csched['requests']} requests, {csched['failed']} failed.",
        f"Open loop: {sched['overlapped'] + csched['overlapped']} requests were sent while the one before was "
        f"outstanding; time between sends: median {np.median(sched['gap_med']) / 1e3:.2f} ms, "
        f"longest {max(sched['gap_max'] + csched['gap_max']) / 1e3:.2f} ms.",
        "",
        "Added over the 0 Hz run of the same block, us, mean [95% CI] over blocks. perf record: "
        "`perf record -e cpu-clock -F F -C CPU`; timer: a process waking at F on the CPU, no sampling; "
        "sampling = perf record - timer; model: `analysis latency` for this request size.",
        "",
        "| rate Hz | pct | 0 Hz us | perf record | timer only | sampling | model | difference (limit) | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['rate_hz']} | p{r['percentile']:g} | {r['at_0hz_us']} | "
            f"{ci(r['perf_added_us'], r['perf_added_lo_us'], r['perf_added_hi_us'])} | "
            f"{ci(r['timer_added_us'], r['timer_added_lo_us'], r['timer_added_hi_us'])} | "
            f"{ci(r['sampling_us'], r['sampling_lo_us'], r['sampling_hi_us'])} | "
            f"{ci(r['predicted_us'], r['predicted_lo_us'], r['predicted_hi_us'])} | "
            f"{r['difference_us']:+.1f} ({r['limit_us']:.1f}) | {r['verdict']} |")
    lines.append("")
    for f, v in sorted(prof.items()):
        share = 100 * float(np.mean([x for x, _ in v]))
        cpus = sorted({c for _, cs in v for c in cs.split(";") if c})
        lines.append(f"perf record at {f} Hz: its own CPU time {share:.3f} % of the run, on CPUs {','.join(cpus)}")
    text = "\n".join(lines) + "\n"
    (out / "server_latency.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
