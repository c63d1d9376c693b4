#!/usr/bin/env python3
"""Recomputes the report's per-sample cost table from the raw files with
numpy/scipy, written apart from the Rust code, and compares it with
report/per_sample.csv.

    python3 analysis/validate/per_sample_scipy.py RESULTS_DIR

From timeline.csv, recovery.csv, gaps/ and samples/ (docs/results-format.md)
and the formulas of docs/methodology.md, "Gaps design":
- episodes rebuilt from the gaps' `episode` column; episodes with 1 ms of
  excess or more, and the samples in them, left out;
- matched excess per sample per run, and b(F) drawn independently
  (numpy's generator, periodic timestamps at the achieved rate, distinct
  episodes per replication): b matches the report's within its interval,
  everything else exactly (1e-6 relative);
- after-effect per sample = E(H) / episodes x matched episodes / samples,
  with H = min(50 us, 0.5 / rate) and the run's reference beyond H;
- 95 % t intervals over runs with scipy.stats.t.
Needs numpy, scipy, pyarrow.
"""
import csv
import sys

import numpy as np
import rawfiles
from scipy import stats

LONG = 1_000_000
SLACK = 1_000


def t_interval(v):
    v = np.asarray(v, dtype=float)
    m = v.mean()
    if len(v) < 2:
        return m, np.nan, np.nan
    hw = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return m, m - hw, m + hw


def episodes(d, rid):
    g_start, g_end, g_excess, ep = rawfiles.gaps(d, rid)
    n = ep.max() + 1 if len(ep) else 0
    ex = np.bincount(ep, weights=g_excess.astype(np.float64), minlength=n)
    start = np.full(n, np.iinfo(np.int64).max)
    end = np.zeros(n, dtype=np.int64)
    np.minimum.at(start, ep, g_start)
    np.maximum.at(end, ep, g_end)
    return start, end, ex


def background(start, end, ex, lo, hi, rate, rng, stamps=200_000):
    period = 1e9 / rate
    per_rep = max(int((hi - lo) / period), 1)
    reps = max(8, int(np.ceil(stamps / per_rep)))
    total_ex, total_n = 0.0, 0
    for _ in range(reps):
        t = lo + rng.random() * period + np.arange(per_rep + 1) * period
        t = t[t < hi].astype(np.int64)
        k = np.searchsorted(end + SLACK, t)  # first episode ending (with slack) at or after t
        ok = k < len(start)
        hit = np.zeros(len(t), dtype=bool)
        hit[ok] = start[k[ok]] - SLACK <= t[ok]
        idx = k[hit]
        long_hit = ex[idx] >= LONG
        total_n += len(t) - long_hit.sum()
        total_ex += ex[np.unique(idx[~long_hit])].sum()
    return total_ex / total_n


def main():
    d = sys.argv[1]
    tl = {r["run_id"]: r for r in csv.DictReader(open(f"{d}/timeline.csv"))}
    rec = {}
    for r in csv.DictReader(open(f"{d}/recovery.csv")):
        rec.setdefault(r["run_id"], []).append(r)
    ok = {r["run_id"] for r in csv.DictReader(open(f"{d}/runs.csv"))
          if r["design"] == "gaps" and r["kind"] == "loss" and r["status"] == "ok"}
    report = {int(r["freq_hz"]): r for r in csv.DictReader(open(f"{d}/report/per_sample.csv"))}
    rng = np.random.default_rng(2014)
    zero = [rid for rid in ok if int(tl[rid]["freq_hz"]) == 0]
    zero_eps = {rid: episodes(d, rid) for rid in zero}
    bad = 0
    for f in sorted({int(tl[rid]["freq_hz"]) for rid in ok} - {0}):
        runs = [rid for rid in ok if int(tl[rid]["freq_hz"]) == f]
        matched, after, rates = [], [], []
        for rid in runs:
            row = tl[rid]
            w = int(row["loop_end_ns"]) - int(row["loop_start_ns"])
            start, end, ex = episodes(d, rid)
            s = rawfiles.sample_episodes(d, rid)
            m = s[s >= 0]
            in_long = (ex[m] >= LONG).sum()
            u = np.unique(m)
            u = u[ex[u] < LONG]
            n = len(s) - in_long
            matched.append(ex[u].sum() / n)
            rates.append(len(s) / (w * 1e-9))
            h = min(50_000.0, 0.5e9 / rates[-1])
            bins = rec[rid]
            far = [b for b in bins if float(b["from_ns"]) >= h]
            ref = sum(float(b["excess_ns_sum"]) for b in far) / sum(int(b["chunks"]) for b in far)
            e_h = sum(float(b["excess_ns_sum"]) - int(b["chunks"]) * ref
                      for b in bins if float(b["to_ns"]) <= h)
            after.append(e_h / int(row["episodes"]) * len(u) / n)
        rate = np.mean(rates)
        b_runs = [background(*zero_eps[rid], int(tl[rid]["loop_start_ns"]), int(tl[rid]["loop_end_ns"]), rate, rng)
                  for rid in zero]
        b = np.mean(b_runs)
        rep = report[f]
        rb = float(rep["background_ns"])
        b_ok = float(rep["background_lo_ns"]) <= b <= float(rep["background_hi_ns"])
        # Everything below uses the report's b, so it must agree exactly.
        direct = t_interval(np.array(matched) - rb)
        aft = t_interval(after)
        total = t_interval(np.array(matched) - rb + np.array(after))
        pred = t_interval(np.array(rates) * (np.array(matched) - rb + np.array(after)) * 1e-7)
        checks = [
            ("direct_ns", direct), ("after_effect_ns", aft), ("total_ns", total),
            ("predicted_loss_pct", pred),
        ]
        line = [f"{f} Hz: b here {b:.1f} vs report {rb:.1f} [{float(rep['background_lo_ns']):.1f}, "
                f"{float(rep['background_hi_ns']):.1f}] {'ok' if b_ok else 'OUTSIDE'}"]
        bad += not b_ok
        for name, (v, lo, hi) in checks:
            base, unit = name.rsplit("_", 1)
            want = (float(rep[name]), float(rep[f"{base}_lo_{unit}"]), float(rep[f"{base}_hi_{unit}"]))
            same = all(abs(a - c) <= 1e-6 * max(abs(c), 1.0) for a, c in zip((v, lo, hi), want))
            bad += not same
            line.append(f"{name} {v:.4g} [{lo:.4g}, {hi:.4g}] {'=' if same else '!= ' + str(want)}")
        print("; ".join(line))
    print("all equal" if bad == 0 else f"{bad} differences")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
