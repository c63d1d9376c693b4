"""Shared loading and statistics for the Xeon host's loss investigation scripts
(xeon_loss_outside_gaps.py, heavy_tail_estimators.py). Reads a results directory the way
analysis/src/percost_load.rs does (docs/results-format.md, gaps design).
Needs numpy, pandas, pyarrow, scipy."""
import numpy as np
import pandas as pd
import rawfiles
from scipy import stats

from per_sample_scipy import episodes  # noqa: F401 (one reader of the gaps files)

LONG = 1_000_000
SLACK = 1_000


def t_int(v):
    """mean, lo, hi of a 95 % Student-t interval over the values."""
    v = np.asarray([x for x in v if np.isfinite(x)], dtype=float)
    if len(v) == 0:
        return (np.nan, np.nan, np.nan)
    m = v.mean()
    if len(v) < 2:
        return (m, np.nan, np.nan)
    hw = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return (m, m - hw, m + hw)


def fmt(e, p=1):
    m, lo, hi = e
    return f"{m:.{p}f} [{lo:.{p}f}, {hi:.{p}f}]"


def welch_diff(a, b):
    """mean(a) - mean(b) with a Welch 95 % t interval."""
    a = np.asarray(a, float); b = np.asarray(b, float)
    d = a.mean() - b.mean()
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    hw = stats.t.ppf(0.975, df) * se
    return (d, d - hw, d + hw)


class Run:
    pass


def load(d, workload="loop", need_parquet=True):
    """Gaps runs (design gaps, kind loss, status ok[, workload]) with their
    timeline row, recovery bins, episodes and sample episode indices."""
    runs = pd.read_csv(f"{d}/runs.csv")
    sel = (runs.design == "gaps") & (runs.kind == "loss") & (runs.status == "ok")
    if "workload" in runs and workload is not None:
        sel &= runs.workload.fillna("loop").replace("", "loop") == workload
    runs = runs[sel]
    tl = pd.read_csv(f"{d}/timeline.csv").drop_duplicates("run_id", keep="last").set_index("run_id")
    rec = pd.read_csv(f"{d}/recovery.csv").drop_duplicates(["run_id", "bin"], keep="last")
    out = []
    for _, r in runs.iterrows():
        rid = int(r.run_id)
        if rid not in tl.index:
            continue
        x = Run()
        x.id = rid
        x.freq = int(r.freq_hz)
        x.runrow = r
        x.tl = tl.loc[rid]
        x.lo, x.hi = int(x.tl.loop_start_ns), int(x.tl.loop_end_ns)
        x.W = x.hi - x.lo
        x.rec = rec[rec.run_id == rid].sort_values("bin")
        if need_parquet:
            x.start, x.end, x.ex = episodes(d, rid)
            if x.freq > 0:
                s = rawfiles.sample_episodes(d, rid)
                x.s_ep = s
                x.n = len(s)
            else:
                x.s_ep = np.zeros(0, dtype=np.int64)
                x.n = 0
        else:
            x.n = int(x.tl.samples)
        x.rate = x.n / (x.W * 1e-9) if x.freq > 0 else 0.0
        out.append(x)
    return out


def match(start, end, t):
    """match_times: episode index holding each sorted timestamp, -1 if none."""
    k = np.searchsorted(end + SLACK, t, side="left")
    ok = k < len(start)
    hit = np.zeros(len(t), dtype=bool)
    hit[ok] = start[k[ok]] - SLACK <= t[ok]
    return np.where(hit, k, -1)
