#!/usr/bin/env python3
"""The fleet's per-class figures from the same summary.parquet files, with
DuckDB and SQL only, compared with `analysis fleet ROOT --json`.

    pip install duckdb
    python3 analysis/validate/fleet_duckdb.py ROOT [ANALYSIS_BINARY] [--at 1000]
    python3 analysis/validate/fleet_duckdb.py ROOT --sql-only   # DuckDB alone, timed

Pass: every class's hosts, cost median / p95 / max and, per budget, the
95th-percentile host's and every host's highest rate equal analysis
fleet's to 1e-9 (relative to the value's size, at least 1e-9 absolute);
the same classes on both sides. Exit 0 on pass, 1 on any difference.

What the SQL does is what docs/results-format.md ("A fleet dataset") and
analysis/src/fleet/ say: the rows of the built-in sampler's primary
configuration; per host its newest set (date, then started_at); per set
the rate nearest --at among those with a cost, any rate where none has
one (ties to the lower rate); the cost figures over the hosts with a cost; classes
cpu_model_name x virtualised x event; quantiles linear (quantile_cont).
It reads summaries only: sets without one (analysis fleet makes those from
their tables) are invisible to it, so compare on a dataset where every
set has its summary (`analysis fleet --no-make`).
"""
import glob
import json
import os
import subprocess
import sys
import time

import duckdb

BUDGETS = [(0.1, "0p1"), (1.0, "1"), (5.0, "5")]


def source(root: str) -> str:
    """The summary rows under ROOT with a `set_key` naming each set: the
    landing zone's files (each file a set), or a compacted fleet's day
    tables (`analysis fleet --compact`: `host` and `set_dir` columns)."""
    if glob.glob(f"{root}/**/summaries.parquet", recursive=True):
        return (f"SELECT *, set_dir AS set_key FROM read_parquet('{root}/**/summaries.parquet', "
                "hive_partitioning = true)")
    return (f"SELECT *, filename AS set_key FROM read_parquet('{root}/**/summary.parquet', "
            "hive_partitioning = true, union_by_name = true, filename = true)")


def sql(root: str, at: float) -> str:
    budgets = ",\n".join(
        f"""    quantile_cont(coalesce(budget_{s}_max_hz, 0), 0.05) AS b{s}_p95,
    min(coalesce(budget_{s}_max_hz, 0)) AS b{s}_every"""
        for _, s in BUDGETS
    )
    return f"""
WITH s AS (
  SELECT * FROM ({source(root)})
  WHERE coalesce(subject, 'loop') = 'loop' AND coalesce(config_primary, true)
),
sets AS (
  SELECT host, CAST(date AS VARCHAR) AS date, started_at, set_key,
         dense_rank() OVER (PARTITION BY host
                            ORDER BY CAST(date AS VARCHAR) DESC, started_at DESC) AS newest
  FROM (SELECT DISTINCT host, date, started_at, set_key FROM s)
),
rep AS (
  SELECT s.*,
         row_number() OVER (PARTITION BY s.set_key
                            ORDER BY cost_per_sample_ns IS NULL,
                                     greatest(freq_hz / {at}, {at} / freq_hz), freq_hz) AS k
  FROM s JOIN sets USING (host, set_key)
  WHERE sets.newest = 1 AND freq_hz > 0
),
hosts AS (
  SELECT concat_ws(' / ', coalesce(cpu_model_name, '-'),
                   CASE WHEN virtualised IS NULL THEN '-' WHEN virtualised THEN 'vm'
                        ELSE 'bare metal' END,
                   coalesce(event, '-')) AS class, *
  FROM rep WHERE k = 1
)
SELECT class, count(*) AS hosts,
    quantile_cont(cost_per_sample_ns, 0.5) AS cost_median_ns,
    quantile_cont(cost_per_sample_ns, 0.95) AS cost_p95_ns,
    max(cost_per_sample_ns) AS cost_max_ns,
{budgets}
FROM hosts GROUP BY GROUPING SETS ((class), ())
ORDER BY class NULLS FIRST
"""


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    at = 1000.0
    if "--at" in sys.argv:
        at = float(sys.argv[sys.argv.index("--at") + 1])
        args = [a for a in args if a != sys.argv[sys.argv.index("--at") + 1]]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    root = args[0].rstrip("/")
    con = duckdb.connect()
    # For the scale benchmark (tools/fleet-bench.sh): a memory limit, and
    # union_by_name off (every synthetic file has one schema; with it on,
    # DuckDB 1.x held 23 GB on 100 000 files before the kernel killed it).
    if os.environ.get("DUCKDB_MEMORY_LIMIT"):
        con.execute(f"SET memory_limit = '{os.environ['DUCKDB_MEMORY_LIMIT']}'")
    query = sql(root, at)
    if os.environ.get("DUCKDB_UNION_BY_NAME") == "0":
        query = query.replace("union_by_name = true", "union_by_name = false")
    t0 = time.perf_counter()
    rows = con.execute(query).fetchall()
    cols = [d[0] for d in con.description]
    took = time.perf_counter() - t0
    duck = {}
    for r in rows:
        d = dict(zip(cols, r))
        duck[d["class"] if d["class"] is not None else "fleet"] = d
    print(f"duckdb: {len(duck) - 1} classes, {duck['fleet']['hosts']} hosts in {took:.2f} s")
    if "--sql-only" in sys.argv:
        return 0
    binary = args[1] if len(args) > 1 else "analysis"
    out = subprocess.run(
        [binary, "fleet", root, "--no-make", "--json", "--at", str(at),
         "--out", f"/tmp/fleet-duckdb-check-{abs(hash(root))}"],
        capture_output=True, text=True, check=True,
    )
    fleet = json.loads(out.stdout)
    ours = {c["class"]: c for c in fleet["classes"]}
    ours["fleet"] = fleet["fleet"]
    bad = 0
    worst = 0.0
    if set(ours) != set(duck):
        print(f"FAIL: classes differ: only analysis {sorted(set(ours) - set(duck))}, "
              f"only duckdb {sorted(set(duck) - set(ours))}")
        bad += 1
    for name in sorted(set(ours) & set(duck)):
        a, d = ours[name], duck[name]
        pairs = [("hosts", a["hosts"], d["hosts"])]
        for key in ("cost_median_ns", "cost_p95_ns", "cost_max_ns"):
            pairs.append((key, a[key], d[key]))
        for i, (_, s) in enumerate(BUDGETS):
            pairs.append((f"budget {s} p95 host", a["budgets"][i]["p95_host_max_hz"], d[f"b{s}_p95"]))
            pairs.append((f"budget {s} every host", a["budgets"][i]["every_host_max_hz"], d[f"b{s}_every"]))
        for key, x, y in pairs:
            x, y = float(x), float(y)
            worst = max(worst, abs(x - y) / max(1.0, abs(x), abs(y)))
            if not close(x, y):
                bad += 1
                print(f"FAIL {name}: {key}: analysis {x!r}, duckdb {y!r}")
    print(f"{len(duck)} rows (classes + fleet) compared, largest relative difference "
          f"{worst:.3g}: {'PASS' if bad == 0 else 'FAIL'}")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
