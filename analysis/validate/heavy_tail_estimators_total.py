#!/usr/bin/env python3
"""total = estimator's direct cost + today's after-effect, per
run (runs in runs.csv order in both inputs), t interval over runs.
    python3 analysis/validate/heavy_tail_estimators_total.py OUTDIR   (after xeon_loss_outside_gaps.py and heavy_tail_estimators.py)"""
import os, sys
import numpy as np, pandas as pd
sys.path.insert(0, os.path.dirname(__file__))
from xeon_loss_common import t_int
o = sys.argv[1]
est = pd.read_csv(f"{o}/estimators.csv"); g = pd.read_csv(f"{o}/gaps_runs.csv")
print("| set | F | estimator | after-effect per run | total per run | total mean [95 % t] | rel. half-width % |")
print("|---|---|---|---|---|---|---|")
for _, r in est.iterrows():
    if not (r.est in ("base", "cap:100us", "med-nosub") or str(r.est).startswith("cap:q99.9")): continue
    a = g[(g.set == r.set) & (g.freq == r.freq)].after_50us_ns.values
    v = np.array([float(x) for x in str(r.runs).split()])
    tot = v + a
    m, lo, hi = t_int(tot)
    print(f"| {r.set} | {r.freq} | {r.est} | {' '.join(f'{x:.0f}' for x in a)} | {' '.join(f'{x:.0f}' for x in tot)} | {m:.0f} [{lo:.0f}, {hi:.0f}] | {100*(hi-lo)/2/abs(m):.1f} |")
