#!/usr/bin/env python3
"""Recomputes report/latency_runs.csv (request latency per gaps run and
request size) from the raw files with numpy, written apart from the Rust
code, and compares it with the report.

    python3 analysis/validate/latency_numpy.py RESULTS_DIR [--arrivals N] [--seed S]

The definition, implemented here from its statement in words, not from
the Rust code (the columns: docs/results-format.md, report/latency_runs.csv):
- runs: runs.csv design gaps, kind loss, status ok; their window
  [loop_start_ns, loop_end_ns) from timeline.csv (a resumed sweep's last
  row per run);
- episodes: the gaps joined by their `episode` number (start = min start,
  end = max end, excess = summed excess); episodes of 1 ms of excess or
  more are dropped (the CPU taken away: neither lost time nor a split);
- lost time: each remaining episode, by end, is the interval
  [end - excess, end), its start clipped to the previous kept interval's
  end, empty ones dropped;
- a request of W ns of work arriving at t completes when the work clock
  (time less the lost time before it) has advanced by W, the rest of a lost
  interval it arrives in included: elapsed = completion - t;
- whole spans: the window, or for a thinned run (raw_keep_every k > 1) the
  10 ms slices j (floor(time / 10 ms) on the absolute clock) with
  j % k == 0, within the window; arrivals uniform over every span's
  [s, e - W), here a grid of N (default 199 999, prime: see ARRIVALS)
  arrivals from a random phase over their concatenation; a request that
  completes past its span's end is cut and left out;
- per run and W in {100 us, 1 ms, 10 ms, 100 ms}: p50, p99, p99.9 of
  elapsed (numpy's default, linear), and the share of requests with a
  sample time in [t, completion); a percentile is left empty where
  usable / W x (1 - p/100) < 1 or cut / arrivals > 0.1 x (1 - p/100), the
  hit share at 0 Hz (or without samples) or with more than 1 % cut.
The work clock is two sorted arrays, the lost intervals' starts on the wall
clock and on the work clock, so every request is two np.searchsorted calls.

Compared with report/latency_runs.csv where both sides have a value:
`independent` (usable time / W: exact, to 1e-9 relative), the cut share
cut / (requests + cut), each percentile and the hit share. The two sides
lay different arrival grids (the report 49 999 arrivals from its own
random phase), so these differ by the grids' sampling; the tolerances are
set from it (below, and README.md). Rows where only one side has a
percentile (the cut share at the rule's limit) are listed, not compared.
Exit 1 on any failed comparison or any run or size present on one side
only.
Needs numpy, pandas, pyarrow.
"""
import argparse
import sys
import warnings

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

import rawfiles

LONG = 1_000_000  # ns of excess: the CPU taken away, dropped
SLICE = 10_000_000  # ns, a thinned run's slice
SIZES = (100_000, 1_000_000, 10_000_000, 100_000_000)
PCTS = (50.0, 99.0, 99.9)
PCOLS = ("p50_ns", "p99_ns", "p999_ns")
# The tolerance (README.md): the report's figures come from one grid of
# REPORT_ARRIVALS arrivals from a random phase, ours from another. Their
# spread is measured here: the same computation on REPS more grids of
# REPORT_ARRIVALS arrivals, each from its own phase, gives each figure's SD
# over such grids (sd_grid). A comparison passes when |ours - report| <=
# Z x sd_grid x sqrt(1 + REPORT_ARRIVALS / arrivals) (both grids' spread),
# or within FLOOR (relative for the times, absolute for the shares), which
# covers figures that no grid moves (an atom: p50 = W exactly, share 1).
# With sd_grid from REPS grids, diff / (sd_grid x widening) is about
# Student t with REPS - 1 degrees of freedom: P(|t_19| > 6) ~ 1e-5 per
# comparison. The cut share has an exact bound instead: completion never
# comes before an earlier arrival's, so each span's cut arrivals are one
# stretch at its end, and a grid counts a stretch to within one arrival:
# |ours - report| <= spans x (1 / arrivals + 1 / REPORT_ARRIVALS).
REPORT_ARRIVALS = 49_999  # analysis/src/latency.rs ARRIVALS
# Ours: a prime number of arrivals. A grid whose count is a multiple of a
# thinned run's slices (50 000 over 500 slices at 10 kHz) puts its arrivals
# at the same offsets in every slice, so it measures each slice's structure
# (the cut stretch at its end) all or nothing; a prime count shifts them
# from slice to slice and covers a slice at N offsets.
ARRIVALS = 199_999
REPS = 20
Z = 6.0
FLOOR = 1e-5
INDEP_TOL = 1e-9


def sample_times(d, rid):
    """Sorted sample times of samples/run-<rid> (either stored form); an
    empty array where the file is absent (0 Hz)."""
    try:
        t = pq.read_table(f"{d}/samples/run-{rid}.parquet")
    except FileNotFoundError:
        return np.zeros(0, dtype=np.int64)
    if "time_step_ns" in t.column_names:
        return rawfiles._cumsum(t["time_step_ns"])
    return np.asarray(t["time_ns"], dtype=np.int64)


def lost_intervals(d, rid):
    """(a, b): the starts and ends of the run's lost intervals, sorted,
    disjoint, non-empty."""
    g_start, g_end, g_excess, ep = rawfiles.gaps(d, rid)
    if len(ep) == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    _, inv = np.unique(ep, return_inverse=True)
    n = inv.max() + 1
    end = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(end, inv, g_end)
    ex = np.zeros(n, dtype=np.int64)
    np.add.at(ex, inv, g_excess)
    # Long episodes dropped; so are episodes with no excess (empty
    # intervals, which must not clip the next one).
    keep = (ex < LONG) & (ex > 0)
    end, ex = end[keep], ex[keep]
    o = np.argsort(end, kind="stable")
    end, ex = end[o], ex[o]
    start = end - ex
    # Clip each start to the previous kept interval's end. Sorted by end and
    # with excess > 0, an interval comes out empty only where its end equals
    # the previous kept end, so the running maximum of the earlier ends is
    # the previous kept interval's end.
    prev = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(end)[:-1]))
    start = np.maximum(start, prev)
    nz = end > start
    return start[nz], end[nz]


def spans(lo, hi, every):
    """[(s, e)] whole spans of a run: its window, or a thinned run's kept
    10 ms slices within it."""
    if every <= 1:
        return np.array([lo]), np.array([hi])
    j0, j1 = lo // SLICE, (hi - 1) // SLICE
    j = np.arange(j0, j1 + 1, dtype=np.int64)
    j = j[j % every == 0]
    s = np.maximum(j * SLICE, lo)
    e = np.minimum((j + 1) * SLICE, hi)
    ok = e > s
    return s[ok], e[ok]


class WorkClock:
    def __init__(self, a, b):
        self.a, self.b = a, b
        # c[i]: lost time before interval i; u[i]: interval i's start on the
        # work clock (where the work clock stands still until b[i]).
        self.c = np.concatenate(([0], np.cumsum(b - a))).astype(np.int64)
        self.u = a - self.c[:-1]

    def work(self, t):
        i = np.searchsorted(self.a, t, side="right") - 1
        inside = (i >= 0) & (t < self.b[np.maximum(i, 0)]) if len(self.a) else np.zeros(len(t), bool)
        w = t - self.c[i + 1]
        w[inside] = self.u[i[inside]]
        return w

    def wall(self, v):
        """The earliest wall time at which the work clock reaches v."""
        k = np.searchsorted(self.u, v, side="left")
        return v + self.c[k]


def run_rows(d, rid, freq, lo, hi, every, n_arr, rng):
    a, b = lost_intervals(d, rid)
    clock = WorkClock(a, b)
    smp = sample_times(d, rid)
    ss, se = spans(lo, hi, every)
    out = []
    for size in SIZES:
        usable = np.maximum(se - ss - size, 0)
        total = int(usable.sum())
        row = {"run_id": rid, "size_ns": size, "independent": total / size,
               "spans": int((usable > 0).sum())}
        if total == 0:
            row.update(arrivals=0, requests=0, cut=0, cut_share=np.nan)
            row.update({c: np.nan for c in PCOLS}, hit_share=np.nan)
            out.append(row)
            continue
        # A grid of n_arr arrivals from a random phase over the spans'
        # usable positions laid end to end.
        step = total / n_arr
        pos = (rng.random() + np.arange(n_arr)) * step
        pos = np.minimum(np.floor(pos).astype(np.int64), total - 1)
        cum = np.concatenate(([0], np.cumsum(usable)))
        k = np.searchsorted(cum, pos, side="right") - 1
        t = ss[k] + (pos - cum[k])
        done = clock.wall(clock.work(t) + size)
        cut = done > se[k]
        t, done = t[~cut], done[~cut]
        el = done - t
        n_cut = int(cut.sum())
        row.update(arrivals=n_arr, requests=len(el), cut=n_cut, cut_share=n_cut / n_arr)
        share_cut = n_cut / n_arr
        for p, col in zip(PCTS, PCOLS):
            tail = 1 - p / 100
            if len(el) == 0 or total / size * tail < 1 or share_cut > 0.1 * tail:
                row[col] = np.nan
            else:
                row[col] = float(np.percentile(el, p))
        if freq == 0 or len(smp) == 0 or share_cut > 0.01 or len(el) == 0:
            row["hit_share"] = np.nan
        else:
            hits = np.searchsorted(smp, done, side="left") - np.searchsorted(smp, t, side="left")
            row["hit_share"] = float((hits > 0).mean())
        out.append(row)
    return out


def recompute(d, n_arr, seed):
    runs = pd.read_csv(f"{d}/runs.csv")
    runs = runs.drop_duplicates("run_id", keep="last")
    g = runs[(runs.design == "gaps") & (runs.kind == "loss") & (runs.status == "ok")]
    tl = pd.read_csv(f"{d}/timeline.csv").drop_duplicates("run_id", keep="last").set_index("run_id")
    rng = np.random.default_rng(seed)
    rows = []
    for _, r in g.iterrows():
        rid = int(r.run_id)
        if rid not in tl.index:
            continue
        lo, hi = int(tl.loc[rid, "loop_start_ns"]), int(tl.loc[rid, "loop_end_ns"])
        if hi <= lo:
            continue
        every = r.get("raw_keep_every")
        every = int(every) if pd.notna(every) else 1
        for row in run_rows(d, rid, int(r.freq_hz), lo, hi, every, n_arr, rng):
            row.update(freq_hz=int(r.freq_hz), block=int(r.block))
            rows.append(row)
    return pd.DataFrame(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="results directory whose report/latency_runs.csv is current")
    ap.add_argument("--arrivals", type=int, default=ARRIVALS, help=f"arrivals per run and size ({ARRIVALS})")
    ap.add_argument("--seed", type=int, default=1, help="seed of the grids' phases (1)")
    ap.add_argument("--worst", type=int, default=12, help="rows of the worst-differences table (12)")
    args = ap.parse_args()
    d = args.dir.rstrip("/")

    key = ["run_id", "size_ns"]
    figs = PCOLS + ("hit_share", "cut_share")
    mine = recompute(d, args.arrivals, args.seed)
    # The grid's own spread: REPS grids of the report's size.
    reps = [recompute(d, REPORT_ARRIVALS, args.seed + 1 + i).set_index(key) for i in range(REPS)]
    sd = {}
    for col in figs:
        v = np.stack([r[col].to_numpy(dtype=float) for r in reps])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sd[col] = np.where(np.isfinite(v).sum(axis=0) >= 3, np.nanstd(v, axis=0, ddof=1), np.nan)
    sd = pd.DataFrame({f"sd_{c}": sd[c] for c in figs}, index=reps[0].index).reset_index()
    mine = mine.merge(sd, on=key, how="left")

    rust = pd.read_csv(f"{d}/report/latency_runs.csv")
    rust["cut_share"] = rust.cut / (rust.requests + rust.cut)
    m = mine.merge(rust, on=key, how="outer", suffixes=("", "_rust"), indicator=True)
    bad = 0
    one_side = m[m._merge != "both"]
    if len(one_side):
        print("present on one side only:")
        print(one_side[key + ["_merge"]].to_string(index=False))
        bad += len(one_side)
    m = m[m._merge == "both"]

    widen = np.sqrt(1 + REPORT_ARRIVALS / args.arrivals)
    cmp = []
    presence = {}  # column: (here only, in the report only)
    for _, r in m.iterrows():
        k = (int(r.run_id), int(r.freq_hz), int(r.size_ns))
        x, y = r["independent"], r["independent_rust"]
        diff = abs(x - y) / abs(y) if y else abs(x - y)
        cmp.append(("independent", *k, x, y, diff, np.nan, INDEP_TOL))
        for col in figs:
            x, y = r[col], r[col + "_rust"]
            if np.isnan(x) != np.isnan(y):
                h, rr = presence.get(col, (0, 0))
                presence[col] = (h + (not np.isnan(x)), rr + (not np.isnan(y)))
            if np.isnan(x) or np.isnan(y):
                continue
            rel = col in PCOLS  # times relative, shares absolute
            scale = abs(y) if rel else 1.0
            sdg = r[f"sd_{col}"] / scale
            if col == "cut_share":
                tol = r.spans * (1 / args.arrivals + 1 / REPORT_ARRIVALS)
            else:
                tol = FLOOR if np.isnan(sdg) else max(FLOOR, Z * sdg * widen)
            cmp.append((col, *k, x, y, abs(x - y) / scale, sdg, tol))
    c = pd.DataFrame(cmp, columns=["column", "run_id", "freq_hz", "size_ns", "here", "report",
                                   "diff", "sd_grid", "tol"])
    c["ok"] = c["diff"] <= c["tol"]
    c["z"] = c["diff"] / (c["sd_grid"] * widen)

    print(f"{d}: {m.run_id.nunique()} gaps runs, {len(m)} run x size rows; arrivals per run and size: "
          f"{args.arrivals} here, {REPORT_ARRIVALS} x {REPS} grids for the spread")
    for col, (h, rr) in sorted(presence.items()):
        print(f"  {col}: a value here only {h}, in the report only {rr} (not compared)")
    pres = np.zeros(len(m), bool)
    for col in PCOLS + ("hit_share",):
        pres |= m[col].isna().to_numpy() != m[col + "_rust"].isna().to_numpy()
    if pres.any():
        print("  rows where one side leaves a figure empty (the rule's cut share or independent count at its limit):")
        t = m[pres].assign(cut_share_here=m.cut_share, cut_share_report=m.cut_share_rust)
        with pd.option_context("display.width", 200, "display.float_format", lambda v: f"{v:.6g}"):
            print(t[["run_id", "freq_hz", "size_ns", "spans", "independent", "cut_share_here", "cut_share_report"]
                    + [f"{c}{s}" for c in PCOLS for s in ("", "_rust")]].to_string(index=False))
    counts = ", ".join(f"{k} {v}" for k, v in c.column.value_counts().sort_index().items())
    print(f"comparisons: {len(c)} ({counts})")
    print("diff: |here - report|, relative for the times and independent, absolute for the shares;")
    print(f"sd_grid: the same on one grid of {REPORT_ARRIVALS}; z = diff / (sd_grid x {widen:.3f}); "
          f"tol = max({FLOOR:g}, {Z:g} x sd_grid x {widen:.3f})")
    print(f"  (independent: {INDEP_TOL:g}; cut_share: spans x (1/{args.arrivals} + 1/{REPORT_ARRIVALS}))")
    with pd.option_context("display.width", 200, "display.float_format", lambda v: f"{v:.6g}"):
        print("largest difference per column:")
        print(c.loc[c.groupby("column")["diff"].idxmax()].to_string(index=False))
        print(f"{args.worst} worst against their tolerance:")
        worst = c.assign(ratio=c["diff"] / c["tol"]).sort_values("ratio", ascending=False)
        print(worst.head(args.worst).drop(columns="ratio").to_string(index=False))
        failed = c[~c.ok]
        if len(failed):
            print(f"FAILED: {len(failed)} of {len(c)} comparisons")
            print(failed.to_string(index=False))
    bad += int((~c.ok).sum())
    print("pass" if bad == 0 else "FAIL")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
