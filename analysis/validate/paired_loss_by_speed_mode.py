#!/usr/bin/env python3
"""paired group losses split by speed level without selection
bias: 'fast' groups have all four phases >= 0.6 it/ns, 'slow' all four < 0.6,
'mixed' the rest (a mode switch inside the group). Per set and frequency:
n, mean, median, t interval over groups, and over runs (of each run's mean
over its pure groups).   python3 analysis/validate/paired_loss_by_speed_mode.py SET..."""
import os, sys
import numpy as np, pandas as pd
sys.path.insert(0, os.path.dirname(__file__))
from xeon_loss_common import t_int, fmt  # noqa
for d in sys.argv[1:]:
    name = os.path.basename(d.rstrip('/'))
    p = pd.read_csv(f"{d}/phases.csv"); runs = pd.read_csv(f"{d}/runs.csv")
    ok = set(runs[(runs.design == 'paired') & (runs.kind == 'loss') & (runs.status == 'ok')].run_id)
    p = p[p.run_id.isin(ok)].copy(); p['rate'] = p.iterations / (p.end_ns - p.start_ns)
    p['on'] = p.sampling.astype(str).str.lower() == 'true'
    rows = []
    for (rid, grp), g in p.groupby(['run_id', 'group']):
        if len(g) < 4: continue
        lv = 'fast' if g.rate.min() >= 0.6 else ('slow' if g.rate.max() < 0.6 else 'mixed')
        rows.append(dict(run=rid, f=int(g.freq_hz.iloc[0]), lv=lv,
                         loss=100 * (1 - g[g.on].rate.mean() / g[~g.on].rate.mean())))
    df = pd.DataFrame(rows)
    for (f, lv), g in df.groupby(['f', 'lv']):
        byrun = g.groupby('run').loss.mean()
        print(f"{name} {f} Hz {lv:5s}: groups {len(g):3d} mean {g.loss.mean():6.2f} median {g.loss.median():6.2f} "
              f"t over groups {fmt(t_int(g.loss),2)}; runs {len(byrun)} over runs {fmt(t_int(byrun),2)}")
