#!/usr/bin/env python3
"""The fleet's answer as a Spark job: the same definition as `analysis
fleet --json`, over the same `host=NAME/date=DAY/<set>/summary.parquet`
dataset, on any Spark master.

    spark-submit deploy/spark/fleet_answer.py ROOT [--at 1000] [--by COLS] [--all] [--out answer.json]
    python3 deploy/spark/fleet_answer.py ROOT --master 'local[2]'   # PySpark from PyPI

ROOT is a local folder or any URI Spark reads (s3a://, hdfs://, abfss://).
The answer goes to stdout as JSON (or --out), with the fleet's and each
class's figures under the names `analysis fleet --json` gives them.

The definition (docs/results-format.md, "A fleet dataset"; the Rust one is
analysis/src/fleet/):
- rows: the built-in sampler's loop (`subject` null or `loop`) in the set's
  primary configuration (`config_primary` not false);
- a host is its `host=` folder (else the rows' `hostname`), a date its
  `date=` folder (else the UTC day of `started_at`); per host the newest
  set: date, then `started_at` (null first), then the set's folder;
- a set copied under two hosts (same `set`, `started_at`, `hostname`)
  counts once, under the host that sorts first;
- per set the rate nearest `--at` among those with a cost per sample,
  any rate above 0 Hz where none has one; ties to the lower rate;
- classes: the `--by` columns' values joined by ` / ` (`-` for null);
- per class and for the fleet: the cost's median, 95th percentile and
  maximum over the hosts with a cost; per budget the 5th percentile of
  the hosts' highest rates within it (a host without one counts 0 Hz)
  and their minimum. Quantiles interpolate linearly (Spark's exact
  `percentile`, numpy's default, DuckDB's `quantile_cont`).

Summary files of an older version lack some columns: they read as null
(`mergeSchema`). A file of a newer `format_version` than this job knows
is refused by name, as `analysis fleet` refuses it. ROOT may also be a
compacted fleet (`analysis fleet LANDING --compact ROOT`:
`date=DAY/summaries.parquet`, one table per day with `host` and `set_dir`
columns), which answers the same.

`--all` keeps every date per host, as `analysis fleet --all`, and adds
`days`: each class's cost day by day and the days it moved
(analysis/src/fleet/days.rs states the rule).
"""
import argparse
import json
import math
import sys

SUMMARY_VERSION = 2
BUDGETS = [(0.1, "0p1"), (1.0, "1"), (5.0, "5")]
DEFAULT_BY = "cpu_model_name,virtualised,event"
# A class column's value as text, as analysis/src/fleet/hosts.rs writes it.
CLASS_COLUMNS = ["cpu_model_name", "virtualised", "event", "cpu_vendor", "cpu_family",
                 "cpu_model", "hypervisor", "pmu", "kernel", "scope", "contents",
                 "work_kind", "cpus", "tool_version",
                 # The host traits (results-format's HOST_TRAITS), summary version 2.
                 "mitigations", "preempt", "cpuidle_driver", "cpuidle_governor", "kernel_hz",
                 "clocksource", "smt_active", "microcode", "pmu_kind"]
MAX_SUGGESTED_HZ = 1e7
# analysis/src/fleet/days.rs: the familywise error of a class's history,
# and the fewest hosts with a cost for a day to be judged.
HISTORY_ALPHA = 0.05
SPREAD_MIN_HOSTS = 5


class BadInput(Exception):
    """Input the job refuses (exit 2), with the value and the fix."""


def nice_prime_below(hz):
    """analysis's suggested rate below `hz`: the largest prime at or below
    it rounded down to two significant digits (recommend/search.rs)."""
    if hz is None or math.isnan(hz) or hz < 2.0:
        return None
    h = math.floor(min(hz, MAX_SUGGESTED_HZ) + 1e-6)
    scale = 10 ** max(len(str(h)) - 2, 0)
    n = (h // scale) * scale

    def prime(k):
        if k < 2:
            return False
        i = 2
        while i * i <= k:
            if k % i == 0:
                return False
            i += 1
        return True

    while n >= 2 and not prime(n):
        n -= 1
    return n if n >= 2 else None


def read(spark, root):
    """Every summary row under ROOT with its host, date and set folder:
    from the `host=`/`date=` folders of the landing zone, or from a day
    table's own `host` and `set_dir` columns (`analysis fleet --compact`)."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    try:
        df = (spark.read.option("mergeSchema", "true").option("recursiveFileLookup", "true")
              .option("pathGlobFilter", "{summary,summaries}.parquet").parquet(root))
    except AnalysisException as e:
        raise BadInput(f"{root}: {str(e).splitlines()[0]} (expected a fleet dataset, "
                       "host=NAME/date=DAY/<set>/summary.parquet, or its day tables)") from None
    df = df.withColumn("_file", F.input_file_name())
    own = lambda c: F.col(c) if c in df.columns else F.lit(None).cast("string")
    path_key = lambda k: F.nullif(F.regexp_extract("_file", f"/{k}=([^/]+)/", 1), F.lit(""))
    day = F.date_format(F.col("started_at"), "yyyy-MM-dd")  # the session's time zone is UTC
    return (df.withColumn("set_dir", F.coalesce(own("set_dir"),
                                                F.regexp_replace("_file", "/summary\\.parquet$", "")))
              .withColumn("host", F.coalesce(own("host"), path_key("host"), own("hostname"), F.lit("(unknown)")))
              .withColumn("date", F.coalesce(path_key("date"), day, F.lit(""))))


def class_value(df, col):
    from pyspark.sql import functions as F

    if col == "pmu_kind" and {"pmu", "virtualised"} <= set(df.columns):
        # An older summary's, made from pmu and virtualised as analysis does.
        pmu, vm = F.col("pmu"), F.col("virtualised")
        made = F.when(~pmu, "absent").when(vm, "virtualised").when(~vm, "native")
        own = F.col(col) if col in df.columns else F.lit(None).cast("string")
        return F.coalesce(own, made, F.lit("-"))
    if col not in df.columns:
        return F.lit("-")
    c = F.col(col)
    text = {
        "virtualised": F.when(c, "vm").when(~c, "bare metal"),
        "pmu": F.when(c, "pmu").when(~c, "no pmu"),
        "cpus": F.concat(c.cast("string"), F.lit(" cpus")),
        "kernel_hz": F.concat(c.cast("string"), F.lit(" Hz")),
        "smt_active": F.when(c, "smt on").when(~c, "smt off"),
    }.get(col, c.cast("string"))
    return F.coalesce(text, F.lit("-"))


def class_days(hosts):
    """Each class's cost day by day and the days it moved, as
    analysis/src/fleet/days.rs defines them: the median's interval from
    its order statistics at confidence 1 - 0.05 / (the class's days), a day
    moved when it lies wholly above or below the median of the class's
    daily medians (days of 5 or more hosts with a cost)."""
    from statistics import NormalDist

    from pyspark.sql import Window
    from pyspark.sql import functions as F

    cost = F.col("cost_per_sample_ns")
    per_class = hosts.groupBy("class").agg(F.countDistinct("date").alias("days")).collect()
    spark = hosts.sparkSession
    zs = spark.createDataFrame(
        [(r["class"], NormalDist().inv_cdf(1.0 - HISTORY_ALPHA / r["days"] / 2.0)) for r in per_class],
        "class string, z double")
    day = Window.partitionBy("class", "date")
    ranked = (hosts.join(zs, "class")
              .withColumn("n", F.count(cost).over(day))
              .withColumn("rk", F.row_number().over(day.orderBy(cost.asc_nulls_last()))))
    half = F.col("z") * F.sqrt(F.col("n").cast("double"))
    lo = F.greatest(F.floor((F.col("n") - half) / 2.0), F.lit(1))
    lo = F.least(lo, F.col("n"))
    hi = F.greatest(F.least(F.ceil(1.0 + (F.col("n") + half) / 2.0), F.col("n")), lo)
    ranked = ranked.withColumn("lo_rank", lo).withColumn("hi_rank", hi)
    days = (ranked.groupBy("class", "date").agg(
        F.count(F.lit(1)).alias("hosts"),
        F.count(cost).alias("with_cost"),
        F.expr("percentile(cost_per_sample_ns, 0.5)").alias("cost_median_ns"),
        F.max(F.when((F.col("rk") == F.col("lo_rank")) & (F.col("n") >= SPREAD_MIN_HOSTS), cost)).alias("cost_median_lo_ns"),
        F.max(F.when((F.col("rk") == F.col("hi_rank")) & (F.col("n") >= SPREAD_MIN_HOSTS), cost)).alias("cost_median_hi_ns"),
        F.expr("percentile(cost_per_sample_ns, 0.95)").alias("cost_p95_ns"),
        F.expr("percentile(coalesce(budget_1_max_hz, 0D), 0.05)").alias("p95_host_1pct_max_hz"),
    ).collect())
    out = sorted((r.asDict() for r in days), key=lambda d: (d["class"], d["date"]))
    by_class = {}
    for d in out:
        by_class.setdefault(d["class"], []).append(d)
    for members in by_class.values():
        medians = sorted(d["cost_median_ns"] for d in members if d["cost_median_ns"] is not None)
        ref = quantile(medians, 0.5) if len(medians) > 1 else None
        for d in members:
            d["ratio_to_reference"] = d["cost_median_ns"] / ref if ref and d["cost_median_ns"] is not None else None
            lo_, hi_ = d["cost_median_lo_ns"], d["cost_median_hi_ns"]
            d["moved"] = (None if ref is None else "up" if lo_ is not None and lo_ > ref
                          else "down" if hi_ is not None and hi_ < ref else None)
    return out


def quantile(sorted_values, q):
    """Type 7, as numpy and analysis."""
    h = (len(sorted_values) - 1) * q
    i = math.floor(h)
    return sorted_values[i] + (h - i) * (sorted_values[min(i + 1, len(sorted_values) - 1)] - sorted_values[i])


def exact_quantiles(df, group, wanted):
    """{group's value: {name: quantile}} for each (column, q, name) in
    `wanted`, over the column's non-null values, per value of `group` and
    under None for the whole frame; type 7. From order statistics of one
    sort, which spills to disk: `percentile` holds each group's every
    value in memory, and a year of a fleet is millions of values."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    columns = list(dict.fromkeys(c for c, _, _ in wanted))
    long = F.explode(F.array(*[F.struct(F.lit(c).alias("c"), F.col(c).cast("double").alias("v"))
                               for c in columns]))
    one = df.select(F.col(group).alias("g"), long.alias("x"))
    both = one.unionByName(one.withColumn("g", F.lit(None).cast("string")))
    both = both.select("g", "x.c", "x.v").where(F.col("v").isNotNull())
    part = Window.partitionBy("g", "c")
    ranked = both.select("g", "c", "v", F.row_number().over(part.orderBy("v")).alias("rk"),
                         F.count("v").over(part).alias("n"))
    keep = F.lit(False)
    for q in {q for _, q, _ in wanted}:
        rank = F.floor((F.col("n") - 1) * q) + 1
        keep = keep | (F.col("rk") == rank) | (F.col("rk") == rank + 1)
    stats = {}
    for r in ranked.where(keep).collect():
        stats.setdefault((r["g"], r["c"]), (r["n"], {}))[1][r["rk"]] = r["v"]
    out = {}
    for (g, c), (n, at_rank) in stats.items():
        for column, q, name in wanted:
            if column == c:
                h = (n - 1) * q
                i = math.floor(h)
                lo, hi = at_rank[i + 1], at_rank[min(i + 2, n)]
                out.setdefault(g, {})[name] = lo + (h - i) * (hi - lo)
    return out


def answer(spark, root, at, by, all_dates=False):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = read(spark, root)
    for name, _ in [("format_version", 0), ("subject", 0), ("config_primary", 0), ("started_at", 0),
                    ("set", 0), ("hostname", 0), ("drift_moved", 0)] + [
            (f"budget_{s}_{w}", 0) for _, s in BUDGETS for w in ("max_hz", "basis", "at_highest_measured")]:
        if name not in df.columns:
            df = df.withColumn(name, F.lit(None))
    newer = (df.where(F.col("format_version") > SUMMARY_VERSION)
               .select("_file", "format_version").limit(1).collect())
    if newer:
        f, v = newer[0]
        raise BadInput(f"{f}: summary format_version {v} is newer than this job reads "
                         f"({SUMMARY_VERSION}); use a job from the same or a later revision "
                         "than the driver that wrote it")
    df = df.where((F.coalesce(F.col("subject"), F.lit("loop")) == "loop")
                  & F.coalesce(F.col("config_primary"), F.lit(True)))
    df = df.withColumn("started_us", F.unix_micros(F.col("started_at").cast("timestamp")))
    # Per host its newest set (--all: every set).
    sets = df.select("host", "date", "started_us", "set_dir", "set", "hostname").distinct()
    newest = Window.partitionBy("host").orderBy(
        F.col("date").desc(), F.col("started_us").desc_nulls_last(), F.col("set_dir").desc())
    if not all_dates:
        sets = sets.withColumn("k", F.row_number().over(newest)).where("k = 1").drop("k")
    # The same set under two hosts: counted once, under the first host.
    copies = Window.partitionBy(F.coalesce("set", F.lit("")), "started_us",
                                F.coalesce("hostname", F.lit(""))).orderBy("host")
    sets = sets.withColumn("k", F.row_number().over(copies)).where("k = 1").select("host", "set_dir")
    rows = df.join(sets, ["host", "set_dir"]).where(F.col("freq_hz") > 0)
    f = F.col("freq_hz").cast("double")
    nearest = Window.partitionBy("host", "set_dir").orderBy(
        F.col("cost_per_sample_ns").isNull(), F.greatest(f / F.lit(at), F.lit(at) / f), F.col("freq_hz"))
    hosts = rows.withColumn("k", F.row_number().over(nearest)).where("k = 1")
    hosts = hosts.withColumn("class", F.concat_ws(" / ", *[class_value(hosts, c) for c in by]))
    # Each budget's highest rate with a host without one as 0 Hz.
    hosts = hosts.select("class", "host", "date", "cost_per_sample_ns", *[
        c for _, s in BUDGETS for c in (F.coalesce(f"budget_{s}_max_hz", F.lit(0.0)).alias(f"b{s}"),
                                        f"budget_{s}_max_hz", f"budget_{s}_basis",
                                        f"budget_{s}_at_highest_measured")])
    hosts = hosts.persist()  # read by every figure below: computed once
    aggs = [
        F.count(F.lit(1)).alias("hosts"),
        F.countDistinct("host").alias("distinct_hosts"),
        F.count("cost_per_sample_ns").alias("with_cost"),
        F.max("cost_per_sample_ns").alias("cost_max_ns"),
    ]
    for _, s in BUDGETS:
        aggs += [
            F.min(f"b{s}").alias(f"b{s}_every"),
            F.expr(f"count_if(budget_{s}_max_hz IS NULL)").alias(f"b{s}_none"),
            F.expr(f"count_if(budget_{s}_at_highest_measured)").alias(f"b{s}_top"),
            F.expr(f"count_if(budget_{s}_basis = 'bounds')").alias(f"b{s}_bounds"),
        ]
    wanted = [("cost_per_sample_ns", 0.5, "cost_median_ns"), ("cost_per_sample_ns", 0.95, "cost_p95_ns")]
    wanted += [(f"b{s}", 0.05, f"b{s}_p95") for _, s in BUDGETS]
    with_quantiles = lambda r, q: dict(r.asDict(), **{name: q.get(name) for _, _, name in wanted})
    q = exact_quantiles(hosts, "class", wanted)
    by_class = [with_quantiles(r, q.get(r["class"], {})) for r in hosts.groupBy("class").agg(*aggs).collect()]
    fleet = [with_quantiles(r, q.get(None, {})) for r in hosts.agg(*aggs).collect()]
    figures = lambda name, r: {
        "class": name,
        "hosts": r["hosts"], "distinct_hosts": r["distinct_hosts"], "with_cost": r["with_cost"],
        "cost_median_ns": r["cost_median_ns"], "cost_p95_ns": r["cost_p95_ns"],
        "cost_max_ns": r["cost_max_ns"],
        "budgets": [{
            "budget_pct": pct,
            "p95_host_max_hz": r[f"b{s}_p95"], "every_host_max_hz": r[f"b{s}_every"],
            "p95_host_rate_hz": nice_prime_below(r[f"b{s}_p95"]),
            "hosts_without_answer": r[f"b{s}_none"], "hosts_at_highest_measured": r[f"b{s}_top"],
            "hosts_bounds_only": r[f"b{s}_bounds"],
        } for pct, s in BUDGETS],
    }
    if not fleet or fleet[0]["hosts"] == 0:
        raise BadInput(f"{root}: no usable summary.parquet (host=NAME/date=DAY/<set>/summary.parquet)")
    out = {
        "root": root, "by": by, "at_hz": at, "all": all_dates,
        "fleet": figures("fleet", fleet[0]),
        "classes": sorted((figures(r["class"], r) for r in by_class), key=lambda c: c["class"]),
    }
    if all_dates:
        out["days"] = class_days(hosts)
    hosts.unpersist()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", help="the fleet dataset's root (a folder or a URI Spark reads)")
    p.add_argument("--at", type=float, default=1000.0,
                   help="a host's cost is taken at its measured rate nearest this, Hz (default 1000)")
    p.add_argument("--by", default=DEFAULT_BY, help=f"class columns, comma-separated (default {DEFAULT_BY})")
    p.add_argument("--all", action="store_true",
                   help="every date per host, not only the newest; adds each class's days and the days it moved")
    p.add_argument("--master", help="Spark master URL when not run by spark-submit, e.g. 'local[2]'")
    p.add_argument("--out", help="write the JSON answer here instead of stdout")
    p.add_argument("--driver-memory", help="the driver JVM's heap when this script starts it (local mode), "
                   "e.g. 6g: a year of 10,000 hosts needs more than Spark's 1g default")
    a = p.parse_args()
    by = [c.strip() for c in a.by.split(",") if c.strip()]
    unknown = [c for c in by if c not in CLASS_COLUMNS]
    if unknown or not by:
        print(f"--by {a.by}: unknown class column {unknown}; expected some of {', '.join(CLASS_COLUMNS)}",
              file=sys.stderr)
        return 2
    if not (a.at > 0 and math.isfinite(a.at)):
        print(f"--at {a.at}: expected a rate in Hz above 0, e.g. --at 1000", file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName("perf-overhead fleet answer")
    if a.master:
        b = b.master(a.master)
    if a.driver_memory:
        b = b.config("spark.driver.memory", a.driver_memory)
    spark = (b.config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    try:
        out = answer(spark, a.root, a.at, by, a.all)
    except BadInput as e:
        print(f"fleet_answer: {e}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    text = json.dumps(out, indent=1) + "\n"
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
