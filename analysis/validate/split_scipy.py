"""report/split.csv (the split design) recomputed from
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

What outlasts a phase: per block (runs.csv), 1 - the mean speed outside
the gaps of a rate's off (on) phases / that of all the block's 0 Hz
phases, the carry-over (outside against 0 Hz), with scipy's t interval
over blocks. Speed-mode changes: each phase's halves (phases.csv
`mid_ns`, `mid_iterations`) recomputed from the raw gaps, a change where
they differ by 1.5x or more; the counts per rate must match split.csv's.
"""
import sys
import warnings
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


def half_speeds(root, phr, runs):
    """Each phase's speed outside the gaps in its two halves, from the raw
    gaps files (NaN where the driver did not read halfway)."""
    first, second = [], []
    for run_id, ph in phr.groupby("run_id", sort=False):
        k = runs.loc[run_id, "raw_keep_every"] if "raw_keep_every" in runs else 1
        keep = 1 if pd.isna(k) else int(k)
        g = pd.read_parquet(root / "gaps" / f"run-{run_id}.parquet")
        start = np.cumsum(g["start_step_ns"].to_numpy(dtype=np.int64))
        excess = g["excess_ns"].to_numpy()
        kept = (start // SLICE_NS) % keep == 0

        def speed(lo, hi, it):
            # The kept time of [lo, hi): the 10 ms slices k (absolute
            # time) with k % keep == 0, as in gap_check.
            kept_ns = sum(min((k + 1) * SLICE_NS, hi) - max(k * SLICE_NS, lo)
                          for k in range(lo // SLICE_NS, (hi - 1) // SLICE_NS + 1) if k % keep == 0)
            gap = int(excess[(start >= lo) & (start < hi) & kept].sum())
            out = (hi - lo) * (1 - gap / kept_ns) if kept_ns else float("nan")
            return it / out if out > 0 else float("nan")

        for idx, p in ph.iterrows():
            mid = p.get("mid_ns", 0)
            if not (p["start_ns"] < mid < p["end_ns"]):
                first.append((idx, float("nan")))
                second.append((idx, float("nan")))
                continue
            first.append((idx, speed(p["start_ns"], mid, p["mid_iterations"])))
            second.append((idx, speed(mid, p["end_ns"], p["iterations"] - p["mid_iterations"])))
    return pd.Series(dict(first)), pd.Series(dict(second))


def outlasting(ph, runs, want):
    """Carry-over and outside against 0 Hz, per block, t over blocks."""
    ok = True
    ph = ph.join(runs["block"], on="run_id")
    zero = ph[ph["freq_hz"] == 0].groupby("block")["speed_outside"].mean()
    for f, fp in ph[ph["freq_hz"] > 0].groupby("freq_hz"):
        for name, on in (("carryover_pct", False), ("outside_vs_zero_pct", True)):
            s = fp[fp["sampling"] == on].groupby("block")["speed_outside"].mean()
            x = (100 * (1 - s / zero)).dropna().to_numpy()
            if len(x) < 2:
                continue
            m, h = x.mean(), stats.t.ppf(0.975, len(x) - 1) * stats.sem(x)
            if name not in want:
                print(f"{f} Hz {name}: scipy {m:.6f} [{m - h:.6f}, {m + h:.6f}] over {len(x)} blocks "
                      "(split.csv has no such column: a report from before it existed)")
                continue
            got = want.loc[f, [name, name.replace("_pct", "_lo_pct"), name.replace("_pct", "_hi_pct")]]
            close = np.allclose([m, m - h, m + h], got.to_numpy(dtype=float), rtol=1e-9, atol=1e-12, equal_nan=True)
            ok &= bool(close)
            print(f"{f} Hz {name}: scipy {m:.6f} [{m - h:.6f}, {m + h:.6f}] vs split.csv "
                  f"{got.iloc[0]:.6f} [{got.iloc[1]:.6f}, {got.iloc[2]:.6f}]: {'same' if close else 'DIFFERENT'}")
    return ok


def off_recovery(ph, want):
    """Off phases right after an on phase of the same run: 100 (second
    half / first half - 1), mean per run, scipy's t over runs."""
    ok = True
    if "speed_first" not in ph or "off_recovery_pct" not in want:
        return ok
    ph = ph.sort_values(["run_id", "phase"])
    for f, fp in ph[ph["freq_hz"] > 0].groupby("freq_hz"):
        prev = fp.shift(1)
        m = ((prev["run_id"] == fp["run_id"]) & (prev["phase"] + 1 == fp["phase"])
             & (prev["sampling"] == True) & (fp["sampling"] == False))  # noqa: E712
        x = (100 * (fp["speed_second"] / fp["speed_first"] - 1))[m].dropna()
        per_run = x.groupby(fp["run_id"][m]).mean().to_numpy()
        if len(per_run) < 2:
            continue
        mm, h = per_run.mean(), stats.t.ppf(0.975, len(per_run) - 1) * stats.sem(per_run)
        got = want.loc[f, ["off_recovery_pct", "off_recovery_lo_pct", "off_recovery_hi_pct"]]
        close = np.allclose([mm, mm - h, mm + h], got.to_numpy(dtype=float), rtol=1e-9, atol=1e-12, equal_nan=True)
        ok &= bool(close)
        print(f"{f} Hz off_recovery_pct: scipy {mm:.6f} [{mm - h:.6f}, {mm + h:.6f}] vs split.csv "
              f"{got.iloc[0]:.6f} [{got.iloc[1]:.6f}, {got.iloc[2]:.6f}]: {'same' if close else 'DIFFERENT'}")
    return ok


def main(root):
    root = Path(root)
    ph = pd.read_csv(root / "report" / "split_phases.csv")
    want = pd.read_csv(root / "report" / "split.csv").set_index("freq_hz")
    runs = pd.read_csv(root / "runs.csv").set_index("run_id")
    raw = pd.read_csv(root / "phases.csv")
    cols = [c for c in ["run_id", "phase", "start_ns", "end_ns", "mid_ns", "mid_iterations"] if c in raw]
    phr = ph.merge(raw[cols], on=["run_id", "phase"])
    ok = True
    if (root / "gaps").is_dir():
        bad = gap_check(root, phr, runs)
        print(f"gap time per phase from the raw gaps files: {len(phr) - bad} of {len(phr)} equal")
        ok &= bad == 0
        if "mid_ns" in phr and "mode_changes_on" in want:
            a, b = half_speeds(root, phr, runs)
            ratio = np.maximum(a, b) / np.minimum(a, b)
            phr["change"] = (ratio >= 1.5).to_numpy()
            phr["halved"] = (a.notna() & b.notna()).to_numpy()
            for f, fp in phr[phr["freq_hz"] > 0].groupby("freq_hz"):
                mine = (int(fp["halved"].sum()), int((fp["change"] & fp["sampling"]).sum()),
                        int((fp["change"] & ~fp["sampling"]).sum()))
                got = tuple(int(want.loc[f, c]) for c in ("halved", "mode_changes_on", "mode_changes_off"))
                ok &= mine == got
                print(f"{f} Hz phases read halfway, mode changes on / off: from the raw gaps {mine}, "
                      f"split.csv {got}: {'same' if mine == got else 'DIFFERENT'}; halves differ by "
                      f"{100 * (np.nanmedian(ratio[fp.index]) - 1):.2f} % at the median, {np.nanmax(ratio[fp.index]):.3f}x at most")
    ok &= outlasting(ph, runs, want)
    ok &= off_recovery(ph, want)
    ph["rate"] = ph["iterations"] / ph["duration_ns"]
    ph["out_share"] = 1 - ph["gap_ns"] / ph["kept_ns"]
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
            close = np.allclose(mine, got.to_numpy(dtype=float), rtol=1e-9, atol=1e-12, equal_nan=True)
            ok &= bool(close)
            print(f"{f} Hz {name}: scipy {m:.6f} [{m - h:.6f}, {m + h:.6f}] vs split.csv "
                  f"{got.iloc[0]:.6f} [{got.iloc[1]:.6f}, {got.iloc[2]:.6f}]: {'same' if close else 'DIFFERENT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    # A one-run set has no interval: scipy's NaN, as split.csv's.
    warnings.filterwarnings("ignore", message="One or more sample arguments is too small")
    sys.exit(main(sys.argv[1]))
