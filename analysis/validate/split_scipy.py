"""report/split.csv (the split design, issue 32) recomputed from
report/split_phases.csv and the raw gaps files with pandas and scipy.

    python3 analysis/validate/split_scipy.py SET

From the raw files: each kept phase's gap time is recomputed from
gaps/run-N.parquet (gaps that start in the phase, inside its kept 10 ms
slices where the run was thinned) and must equal split_phases.csv's.
From the phases: per ABBA group, in the gaps 1 - mean(1 - g_on) /
mean(1 - g_off), outside 1 - mean(s_on) / mean(s_off), total 1 -
mean(r_on) / mean(r_off); per run the mean over its groups; per rate the
mean over runs with scipy's t interval. Every figure must match split.csv
to 1e-9 (relative).
"""
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

SLICE_NS = 10_000_000


def gap_check(root, phases, runs):
    bad = 0
    for run_id, ph in phases.groupby("run_id"):
        k = runs.loc[run_id, "raw_keep_every"] if "raw_keep_every" in runs else 1
        keep = 1 if pd.isna(k) else int(k)
        g = pd.read_parquet(root / "gaps" / f"run-{run_id}.parquet")
        # Stored as steps from the row before (docs/results-format.md).
        start = np.cumsum(g["start_step_ns"].to_numpy(dtype=np.int64))
        excess = g["excess_ns"].to_numpy()
        kept = (start // SLICE_NS) % keep == 0 if keep > 1 else np.ones(len(start), bool)
        for _, p in ph.iterrows():
            lo, hi = p["start_ns"], p["end_ns"]
            m = (start >= lo) & (start < hi) & kept
            if int(excess[m].sum()) != int(p["gap_ns"]):
                bad += 1
    return bad


def main(root):
    root = Path(root)
    ph = pd.read_csv(root / "report" / "split_phases.csv")
    want = pd.read_csv(root / "report" / "split.csv").set_index("freq_hz")
    runs = pd.read_csv(root / "runs.csv").set_index("run_id")
    raw = pd.read_csv(root / "phases.csv")[["run_id", "phase", "start_ns", "end_ns"]]
    phr = ph.merge(raw, on=["run_id", "phase"])
    if (root / "gaps").is_dir():
        bad = gap_check(root, phr, runs)
        print(f"gap time per phase from the raw gaps files: {len(phr) - bad} of {len(phr)} equal")
    ph["rate"] = ph["iterations"] / ph["duration_ns"]
    ph["out_share"] = 1 - ph["gap_ns"] / ph["kept_ns"]
    ok = True
    for f, fp in ph.groupby("freq_hz"):
        per_run = []
        for _, rp in fp.groupby("run_id"):
            parts = []
            for _, g in rp.groupby("group"):
                on, off = g[g["sampling"]], g[~g["sampling"]]
                if on.empty or off.empty:
                    continue
                part = lambda c: 100 * (1 - on[c].mean() / off[c].mean())
                parts.append((part("rate"), part("out_share"), part("speed_outside")))
            if parts:
                per_run.append(np.mean(parts, axis=0))
        per_run = np.array(per_run)
        for i, name in enumerate(["total_pct", "in_gaps_pct", "outside_pct"]):
            x = per_run[:, i]
            m, se = x.mean(), stats.sem(x)
            h = stats.t.ppf(0.975, len(x) - 1) * se
            got = want.loc[f, [name, name.replace("_pct", "_lo_pct"), name.replace("_pct", "_hi_pct")]]
            mine = np.array([m, m - h, m + h])
            close = np.allclose(mine, got.to_numpy(dtype=float), rtol=1e-9, atol=1e-12)
            ok &= bool(close)
            print(f"{f} Hz {name}: scipy {m:.6f} [{m - h:.6f}, {m + h:.6f}] vs split.csv "
                  f"{got.iloc[0]:.6f} [{got.iloc[1]:.6f}, {got.iloc[2]:.6f}]: {'same' if close else 'DIFFERENT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
