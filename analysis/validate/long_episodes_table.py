#!/usr/bin/env python3
"""table of long (>= 1 ms) and 100 us - 1 ms episodes per set and F
from OUTDIR/gaps_runs.csv (xeon_loss_outside_gaps.py). Rates per s, lengths (excess) in us,
shares in % of the window, mean [95 % t over runs]; excess over 0 Hz per sample
= (share_F(run) - mean share_0) x 1e9 / rate, t over the runs at F.
    python3 analysis/validate/long_episodes_table.py OUTDIR"""
import os, sys
import numpy as np, pandas as pd
sys.path.insert(0, os.path.dirname(__file__))
from xeon_loss_common import t_int, fmt
g = pd.read_csv(f"{sys.argv[1]}/gaps_runs.csv")
g = g[g.long_per_s.notna()]
print("| set | F | runs | >=1 ms per s | length mean / median us (pooled runs' values) | share % | share F-0 pp (Welch) | per sample ns | 100us-1ms per s | share % | per sample ns |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
from xeon_loss_common import welch_diff
for (s, f), a in g.groupby(["set", "freq"], sort=False):
    z = g[(g.set == s) & (g.freq == 0)]
    ps = lambda c: fmt(t_int((a[c] - z[c].mean()) / 100 * 1e9 / a.rate), 0) if f > 0 else ""
    wd = fmt(welch_diff(a.long_share_pct, z.long_share_pct), 2) if f > 0 and a.long_share_pct.std() + z.long_share_pct.std() > 0 else ("0" if f > 0 else "")
    lm = a.long_mean_us.dropna(); lmed = a.long_median_us.dropna()
    print(f"| {s} | {f} | {len(a)} | {fmt(t_int(a.long_per_s),2)} | {lm.mean():.0f} / {lmed.median():.0f} |" if len(lm) else f"| {s} | {f} | {len(a)} | {fmt(t_int(a.long_per_s),2)} | - |", end="")
    print(f" {fmt(t_int(a.long_share_pct),3)} | {wd} | {ps('long_share_pct')} | {fmt(t_int(a.mid_per_s),2)} | {fmt(t_int(a.mid_share_pct),3)} | {ps('mid_share_pct')} |")
