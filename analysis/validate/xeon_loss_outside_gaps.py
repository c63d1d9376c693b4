#!/usr/bin/env python3
"""where the Xeon host's missing loss goes.

    python3 analysis/validate/xeon_loss_outside_gaps.py OUTDIR SET...

Per gaps run: loop speed overall and outside gaps (iterations / (window -
gap time)), against the run's own unsampled calibration (stamp_chunk_
iterations / stamp_chunk_ns); ordinary-chunk speed by distance from the
last gap (recovery bins); after-effect with horizons 50 us .. 250 us;
episodes >= 1 ms and 100 us - 1 ms (rate, length, time share). Per paired
run: group losses (mean, median, trimmed), speed level, toggle transients.
Writes OUTDIR/gaps_runs.csv, paired_groups.csv, loss_summary.txt."""
import os
import sys

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, os.path.dirname(__file__))
from xeon_loss_common import LONG, load, t_int, fmt, welch_diff  # noqa: E402


def after_per_sample(x, h):
    """After-effect per sample with horizon h (methodology), NaN w/o chunks beyond."""
    b = x.rec
    far = b[b.from_ns.astype(float) >= h]
    if far.chunks.sum() == 0:
        return np.nan
    ref = far.excess_ns_sum.sum() / far.chunks.sum()
    near = b[b.to_ns.astype(float) <= h]
    e_h = (near.excess_ns_sum - near.chunks * ref).sum()
    ex = x.ex
    m = x.s_ep[x.s_ep >= 0]
    in_long = (ex[m] >= LONG).sum()
    u = np.unique(m)
    u = u[ex[u] < LONG]
    n = x.n - in_long
    return e_h / int(x.tl.episodes) * len(u) / n


def gaps_rows(name, d, workload="loop"):
    parquet = os.path.isdir(f"{d}/gaps")
    runs = load(d, workload, need_parquet=parquet)
    rows = []
    for x in runs:
        r = dict(set=name, run_id=x.id, freq=x.freq, rate=x.rate, W_s=x.W * 1e-9)
        it = float(x.runrow.iterations)
        gt = float(x.tl.gap_time_ns)
        r["it_per_ns"] = it / x.W
        r["gap_share_pct"] = gt / x.W * 100
        r["out_speed"] = it / (x.W - gt)
        r["calib_speed"] = float(x.tl.stamp_chunk_iterations) / float(x.tl.stamp_chunk_ns)
        r["out_over_calib"] = r["out_speed"] / r["calib_speed"]
        b = x.rec
        ci = float(x.tl.stamp_chunk_iterations)
        # bin 13 (open, from ~1 ms) also holds the chunks before the first gap: left out
        bb = b[b.to_ns.astype(float) < 1e15]
        r["ord_speed"] = bb.chunks.sum() * ci / bb.chunk_ns_sum.sum()
        for lab, lo, hi in [("lt1us", 0, 1e3), ("1_16us", 1e3, 16e3), ("16_125us", 16e3, 125e3),
                            ("125us_1ms", 125e3, 1.1e6)]:
            s = bb[(bb.from_ns.astype(float) >= lo * 0.97) & (bb.to_ns.astype(float) <= hi)]
            r[f"speed_{lab}"] = s.chunks.sum() * ci / s.chunk_ns_sum.sum() if s.chunks.sum() else np.nan
            r[f"chunkshare_{lab}"] = s.chunks.sum() / bb.chunks.sum()
        if parquet:
            ex = x.ex
            ln = ex[ex >= LONG]
            md = ex[(ex >= 100e3) & (ex < LONG)]
            sm = ex[(ex >= 20e3) & (ex < 100e3)]
            r["long_per_s"] = len(ln) / (x.W * 1e-9)
            r["long_mean_us"] = ln.mean() / 1e3 if len(ln) else np.nan
            r["long_median_us"] = np.median(ln) / 1e3 if len(ln) else np.nan
            r["long_share_pct"] = ln.sum() / x.W * 100
            r["mid_per_s"] = len(md) / (x.W * 1e-9)
            r["mid_share_pct"] = md.sum() / x.W * 100
            r["mid_mean_us"] = md.mean() / 1e3 if len(md) else np.nan
            r["s20_100_per_s"] = len(sm) / (x.W * 1e-9)
            r["s20_100_share_pct"] = sm.sum() / x.W * 100
            r["short_share_pct"] = ex[ex < 20e3].sum() / x.W * 100
            r["episodes_per_s"] = len(ex) / (x.W * 1e-9)
            if x.freq > 0:
                for h in (50e3, 125e3, 250e3):
                    hh = min(h, 0.5e9 / x.rate) if h == 50e3 else h
                    r[f"after_{int(h/1e3)}us_ns"] = after_per_sample(x, hh)
        rows.append(r)
    return pd.DataFrame(rows)


def paired_groups(name, d):
    p = pd.read_csv(f"{d}/phases.csv")
    runs = pd.read_csv(f"{d}/runs.csv")
    ok = set(runs[(runs.design == "paired") & (runs.kind == "loss") & (runs.status == "ok")
                  & (runs.get("workload", pd.Series("loop", index=runs.index)).fillna("loop") == "loop")].run_id)
    p = p[p.run_id.isin(ok)].copy()
    p["rate"] = p.iterations / (p.end_ns - p.start_ns)
    p["sampling"] = p.sampling.astype(str).str.lower() == "true"
    rows, phase_rows = [], []
    for rid, g in p.groupby("run_id"):
        g = g.sort_values("phase")
        prev_state = None
        for _, ph in g.iterrows():
            phase_rows.append(dict(set=name, run_id=rid, freq=int(ph.freq_hz), group=int(ph.group),
                                   pos=int(ph.phase) % 4, on=bool(ph.sampling), rate=ph.rate,
                                   after_toggle=(prev_state is not None and prev_state != ph.sampling),
                                   first=prev_state is None))
            prev_state = ph.sampling
        for grp, gg in g.groupby("group"):
            if len(gg) < 4:
                continue
            on = gg[gg.sampling].rate.mean()
            off = gg[~gg.sampling].rate.mean()
            rows.append(dict(set=name, run_id=rid, freq=int(gg.freq_hz.iloc[0]), group=grp,
                             order=gg.order.iloc[0], loss=100 * (1 - on / off), level=off,
                             spread=100 * (gg.rate.max() / gg.rate.min() - 1)))
    return pd.DataFrame(rows), pd.DataFrame(phase_rows)


def toggle_model(ph):
    """log rate ~ group fixed effects + on + after_toggle (per state):
    the transient right after switching, in %."""
    ph = ph[~ph.first].copy()
    ph["key"] = ph.run_id.astype(str) + ":" + ph.group.astype(str)
    keys = {k: i for i, k in enumerate(ph.key.unique())}
    X = np.zeros((len(ph), len(keys) + 3))
    X[np.arange(len(ph)), ph.key.map(keys).values] = 1
    X[:, -3] = ph.on.values
    X[:, -2] = (ph.on & ph.after_toggle).values
    X[:, -1] = (~ph.on & ph.after_toggle).values
    y = np.log(ph.rate.values)
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    res = y - X @ beta
    dof = len(y) - X.shape[1]
    s2 = res @ res / dof
    cov = s2 * np.linalg.pinv(X.T @ X)
    t = stats.t.ppf(0.975, dof)
    out = {}
    for name, j in [("on", -3), ("on_after_toggle", -2), ("off_after_toggle", -1)]:
        se = np.sqrt(cov[j, j])
        out[name] = (100 * beta[j], 100 * (beta[j] - t * se), 100 * (beta[j] + t * se))
    return out, dof


def main():
    outdir = sys.argv[1]
    sets = sys.argv[2:]
    os.makedirs(outdir, exist_ok=True)
    G, P, PH = [], [], []
    for s in sets:
        name = os.path.basename(s.rstrip("/"))
        G.append(gaps_rows(name, s))
        if os.path.exists(f"{s}/phases.csv"):
            a, b = paired_groups(name, s)
            P.append(a)
            PH.append(b)
    G = pd.concat(G)
    P = pd.concat(P)
    PH = pd.concat(PH)
    G.to_csv(f"{outdir}/gaps_runs.csv", index=False)
    P.to_csv(f"{outdir}/paired_groups.csv", index=False)
    out = []
    pr = out.append
    pr("# gaps runs: per set and frequency, mean [95 % t over runs]; diff = F - 0 Hz (Welch)")
    cols = ["it_per_ns", "gap_share_pct", "out_speed", "calib_speed", "out_over_calib", "ord_speed",
            "speed_lt1us", "speed_1_16us", "speed_16_125us", "speed_125us_1ms",
            "long_per_s", "long_mean_us", "long_median_us", "long_share_pct", "mid_per_s", "mid_mean_us",
            "mid_share_pct", "s20_100_per_s", "s20_100_share_pct", "short_share_pct", "episodes_per_s",
            "after_50us_ns", "after_125us_ns", "after_250us_ns"]
    for name, g in G.groupby("set", sort=False):
        pr(f"\n## {name}")
        z = g[g.freq == 0]
        for f in sorted(g.freq.unique()):
            a = g[g.freq == f]
            pr(f"-- {f} Hz ({len(a)} runs; rate {a.rate.mean():.0f} Hz)")
            for c in cols:
                if c not in a or a[c].isna().all():
                    continue
                line = f"   {c:18s} {fmt(t_int(a[c]), 3)}   runs: " + " ".join(f"{v:.3f}" for v in a[c])
                if f > 0 and c in z and len(z) > 1 and len(a) > 1 and not z[c].isna().all():
                    dd = welch_diff(a[c].dropna(), z[c].dropna()) if a[c].notna().sum() > 1 and z[c].notna().sum() > 1 else (np.nan,) * 3
                    line += f"   diff {fmt(dd, 3)}"
                    if c.endswith("share_pct") and np.isfinite(dd[0]):
                        perS = (a[c] - z[c].mean()) / 100 * 1e9 / a.rate
                        line += f"  per sample ns {fmt(t_int(perS), 0)}"
                pr(line)
    pr("\n# paired design: group losses (%)")
    for (name, f), g in P.groupby(["set", "freq"], sort=False):
        runmeans = g.groupby("run_id").loss.mean()
        runmed = g.groupby("run_id").loss.median()
        tm = stats.trim_mean(g.loss, 0.2)
        rho, pval = stats.spearmanr(g.loss, np.log(g.level))
        # bootstrap over groups of the pooled median, for an interval
        rng = np.random.default_rng(19)
        bs = [np.median(rng.choice(g.loss.values, len(g))) for _ in range(4000)]
        pr(f"{name} {f} Hz: groups {len(g)}; mean over groups {g.loss.mean():.2f}; runs' means "
           f"{' '.join(f'{v:.2f}' for v in runmeans)} -> {fmt(t_int(runmeans), 2)}; runs' medians "
           f"{' '.join(f'{v:.2f}' for v in runmed)} -> {fmt(t_int(runmed), 2)}; pooled median "
           f"{g.loss.median():.2f} [boot {np.percentile(bs, 2.5):.2f}, {np.percentile(bs, 97.5):.2f}]; "
           f"20% trimmed mean {tm:.2f}; min/max {g.loss.min():.1f}/{g.loss.max():.1f}; skew {stats.skew(g.loss):.2f}; "
           f"Spearman(loss, log level) {rho:.2f} p={pval:.3f}; within-group spread median {g.spread.median():.1f}%")
        slow = g[g.level < 0.6]
        fast = g[g.level >= 0.6]
        pr(f"    by speed level: slow (<0.6 it/ns) n={len(slow)} mean {slow.loss.mean():.2f} median "
           f"{slow.loss.median():.2f}; fast n={len(fast)} mean {fast.loss.mean():.2f} median {fast.loss.median():.2f}")
    pr("\n# paired toggle transient: log-rate model with group fixed effects, % [95 %]")
    for (name, f), ph in PH.groupby(["set", "freq"], sort=False):
        try:
            o, dof = toggle_model(ph)
        except Exception as e:  # noqa: BLE001
            pr(f"{name} {f}: {e}")
            continue
        pr(f"{name} {f} Hz (dof {dof}): on {fmt(o['on'], 2)}; extra on right after toggle "
           f"{fmt(o['on_after_toggle'], 2)}; extra off right after toggle {fmt(o['off_after_toggle'], 2)}")
    txt = "\n".join(out)
    open(f"{outdir}/loss_summary.txt", "w").write(txt + "\n")
    print(txt)


if __name__ == "__main__":
    main()
