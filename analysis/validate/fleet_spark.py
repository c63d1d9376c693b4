#!/usr/bin/env python3
"""The fleet's answer from Spark (deploy/spark/fleet_answer.py, PySpark in
local mode) compared with `analysis fleet ROOT --no-make --json`.

    pip install pyspark duckdb   # and a Java runtime (Debian: default-jre-headless)
    python3 analysis/validate/fleet_spark.py ROOT [ANALYSIS_BINARY] [--at 1000] [--two-versions] [--all]

--all compares every date per host, and each class's days (hosts, median
with its interval, p95, 1 % rate, ratio, whether it moved).

--two-versions compares on a copy of ROOT in which every other summary is
rewritten as an older writer left it, without the columns added since
(the budget check's, the drift's, the prediction interval's): Spark must
merge the two schemas as analysis does; then one summary is given a newer
format_version, which the job must refuse, naming its file.

Pass: the same classes on both sides, and for the fleet and each class the
hosts, distinct hosts, hosts with a cost, the cost's median, p95 and
maximum, and per budget the 95th-percentile host's and every host's
highest rate, the rate set and the three host counts equal to 1e-9
(relative to the value's size, at least 1e-9 absolute). Exit 0 on pass,
1 on any difference, 2 on bad arguments.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "..", "..", "deploy", "spark", "fleet_answer.py")
# Columns a version-1 summary gained after its first writers, and the
# host traits version 2 added.
LATER = ["budget_pct", "within_budget", "budget_max_hz", "drift_low_pct", "drift_high_pct",
         "drift_trend_pct_per_h", "drift_trend_lo_pct_per_h", "drift_trend_hi_pct_per_h",
         "drift_moved", "cost_per_sample_pred_lo_ns", "cost_per_sample_pred_hi_ns",
         "clocksource", "smt_active", "kernel_hz", "preempt", "cpuidle_driver", "cpuidle_governor",
         "microcode", "pmu_kind", "mitigations", "vulnerabilities"]


def older_copy(root, out):
    """ROOT copied to OUT, every other summary a version 1 without the LATER columns."""
    import duckdb

    shutil.copytree(root, out, ignore=shutil.ignore_patterns("report", "report-*", ".fleet-cache"))
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs if f == "summary.parquet")
    con = duckdb.connect()
    for f in files[::2]:
        con.execute(f"COPY (SELECT * EXCLUDE ({', '.join(LATER)}) REPLACE (1::BIGINT AS format_version) "
                    f"FROM read_parquet('{f}')) "
                    f"TO '{f}.old' (FORMAT parquet)")
        os.replace(f + ".old", f)
    return len(files[::2]), len(files)


def newer_refused(root, tmp):
    """Whether the job refuses a summary of a newer format_version, naming
    its file, as analysis does."""
    import duckdb

    files = sorted(os.path.join(d, n) for d, _, fs in os.walk(root) for n in fs if n == "summary.parquet")
    con = duckdb.connect()
    # One above the newest version in the set: the first file may be an
    # older one that --two-versions rewrote, and one above it is current.
    newest = max(con.execute(f"SELECT max(format_version) FROM read_parquet('{g}')").fetchone()[0]
                 for g in files)
    f = files[0]
    con.execute(f"COPY (SELECT * REPLACE ({newest + 1}::BIGINT AS format_version) "
                f"FROM read_parquet('{f}')) TO '{f}.new' (FORMAT parquet)")
    os.replace(f + ".new", f)
    job = subprocess.run([sys.executable, JOB, root, "--master", "local[2]", "--out", os.path.join(tmp, "x")],
                         capture_output=True, text=True)
    said = job.stderr.strip().splitlines()[-1] if job.stderr.strip() else ""
    ok = job.returncode != 0 and os.path.basename(os.path.dirname(f)) in said and "newer" in said
    print(f"a newer summary version: exit {job.returncode}, `{said[-200:]}`: {'PASS' if ok else 'FAIL'}")
    return ok


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def pairs(a, s):
    """(what, analysis's value, Spark's) for one class."""
    out = [(k, a[k], s[k]) for k in ("hosts", "distinct_hosts", "with_cost",
                                     "cost_median_ns", "cost_p95_ns", "cost_max_ns")]
    for ba, bs in zip(a["budgets"], s["budgets"]):
        for k in ("p95_host_max_hz", "every_host_max_hz", "p95_host_rate_hz",
                  "hosts_without_answer", "hosts_at_highest_measured", "hosts_bounds_only"):
            out.append((f"budget {ba['budget_pct']} {k}", ba[k], bs[k]))
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    at = "1000"
    if "--at" in sys.argv:
        at = sys.argv[sys.argv.index("--at") + 1]
        args.remove(at)
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    root, binary = args[0].rstrip("/"), (args[1] if len(args) > 1 else "analysis")
    tmp = tempfile.mkdtemp(prefix="fleet-spark-")
    try:
        if "--two-versions" in sys.argv:
            old, n = older_copy(root, os.path.join(tmp, "fleet"))
            root = os.path.join(tmp, "fleet")
            print(f"two versions: {old} of {n} summaries rewritten without {len(LATER)} later columns")
        t0 = time.perf_counter()
        every = ["--all"] if "--all" in sys.argv else []
        job = subprocess.run([sys.executable, JOB, root, "--master", "local[2]", "--at", at, *every,
                              "--out", os.path.join(tmp, "spark.json")], capture_output=True, text=True)
        took = time.perf_counter() - t0
        if job.returncode != 0:
            print(job.stderr[-4000:], file=sys.stderr)
            print(f"FAIL: the Spark job exited {job.returncode}")
            return 1
        spark = json.load(open(os.path.join(tmp, "spark.json")))
        ours = json.loads(subprocess.run(
            [binary, "fleet", root, "--no-make", "--no-cache", "--json", "--at", at, *every,
             "--out", os.path.join(tmp, "report")], capture_output=True, text=True, check=True).stdout)
        if "--two-versions" in sys.argv:
            refused = newer_refused(root, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"spark: {len(spark['classes'])} classes, {spark['fleet']['hosts']} hosts in {took:.1f} s "
          "(local[2], with the JVM's start)")
    a = {c["class"]: c for c in ours["classes"]} | {"fleet": ours["fleet"]}
    s = {c["class"]: c for c in spark["classes"]} | {"fleet": spark["fleet"]}
    bad = 0
    if set(a) != set(s):
        print(f"FAIL: classes differ: only analysis {sorted(set(a) - set(s))}, only spark {sorted(set(s) - set(a))}")
        bad += 1
    worst, n = 0.0, 0
    for name in sorted(set(a) & set(s)):
        for what, x, y in pairs(a[name], s[name]):
            n += 1
            if not close(x, y):
                bad += 1
                print(f"FAIL {name}: {what}: analysis {x!r}, spark {y!r}")
            elif x is not None:
                worst = max(worst, abs(x - y) / max(1.0, abs(x), abs(y)))
    print(f"{len(s)} rows (classes + fleet), {n} figures compared, largest relative difference "
          f"{worst:.3g}: {'PASS' if bad == 0 else 'FAIL'}")
    if every:
        ad = {(d["class"], d["date"]): d for d in ours["days"]}
        sd = {(d["class"], d["date"]): d for d in spark["days"]}
        if set(ad) != set(sd):
            print(f"FAIL: class-days differ: {len(set(ad) ^ set(sd))} on one side only")
            bad += 1
        keys = ("hosts", "with_cost", "cost_median_ns", "cost_median_lo_ns", "cost_median_hi_ns",
                "cost_p95_ns", "p95_host_1pct_max_hz", "ratio_to_reference")
        for k in sorted(set(ad) & set(sd)):
            for what in keys:
                if not close(ad[k][what], sd[k][what]):
                    bad += 1
                    print(f"FAIL {k}: {what}: analysis {ad[k][what]!r}, spark {sd[k][what]!r}")
            if ad[k]["moved"] != sd[k]["moved"]:
                bad += 1
                print(f"FAIL {k}: moved: analysis {ad[k]['moved']}, spark {sd[k]['moved']}")
        moved = sum(1 for d in ad.values() if d["moved"])
        print(f"{len(ad)} class-days compared ({moved} moved in analysis): {'PASS' if bad == 0 else 'FAIL'}")
    if "--two-versions" in sys.argv and not refused:
        bad += 1
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
