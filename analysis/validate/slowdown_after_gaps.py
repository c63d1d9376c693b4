#!/usr/bin/env python3
"""the loop's slowdown after a gap, further out than
the 50 us horizon. Per gaps run, from recovery.csv: the time the ordinary
chunks lost against the loop's asymptotic speed, D = sum_b T_b (1 - s_b / s_inf) / W,
where s_b is the bin's speed (iterations per ns) and s_inf the run's speed in
its farthest populated bin (0.5-1 ms at 0 Hz; 125-250 us at 4 kHz, corrected
by the 0 Hz runs' own ratio bin10/bin12 of the same speed mode). Split into
the part within 50 us (the model's after-effect, roughly) and beyond.
(The speed-over-time part was not done.)
    python3 analysis/validate/slowdown_after_gaps.py OUTDIR SET..."""
import os, sys
import numpy as np, pandas as pd, pyarrow.parquet as pq
sys.path.insert(0, os.path.dirname(__file__))
from xeon_loss_common import t_int, fmt, welch_diff  # noqa

FAST = 0.6  # it/ns: slow/fast mode boundary (Xeon)

def main():
    outdir = sys.argv[1]
    rows = []
    for d in sys.argv[2:]:
        name = os.path.basename(d.rstrip('/'))
        runs = pd.read_csv(f"{d}/runs.csv")
        runs = runs[(runs.design == 'gaps') & (runs.kind == 'loss') & (runs.status == 'ok')]
        if 'workload' in runs:
            runs = runs[runs.workload.fillna('loop') == 'loop']
        tl = pd.read_csv(f"{d}/timeline.csv").drop_duplicates('run_id', keep='last').set_index('run_id')
        rec = pd.read_csv(f"{d}/recovery.csv").drop_duplicates(['run_id', 'bin'], keep='last')
        for rid in runs.run_id:
            t = tl.loc[rid]; ci = float(t.stamp_chunk_iterations)
            g = rec[(rec.run_id == rid) & (rec.to_ns.astype(float) < 1e15)].sort_values('bin')
            g = g[g.chunks > 0]
            sp = g.chunks * ci / g.chunk_ns_sum
            W = float(t.loop_end_ns - t.loop_start_ns)
            far = sp.iloc[-1]
            r = dict(set=name, run_id=rid, freq=int(t.freq_hz), far_bin=int(g.bin.iloc[-1]), far_speed=far,
                     rel10=sp[g.bin == 10].iloc[0] / far if (g.bin == 10).any() else np.nan,
                     samples=int(t.samples), W=W)
            rows.append((r, g, sp))
    # correction for runs whose farthest bin is 10: the 0 Hz runs' bin10/bin12 ratio, same set and mode
    out = []
    for r, g, sp in rows:
        zs = [x for x, _, _ in rows if x['set'] == r['set'] and x['freq'] == 0 and x['far_bin'] >= 12
              and (x['far_speed'] >= FAST) == (r['far_speed'] >= FAST)]
        corr = np.nanmean([x['rel10'] for x in zs]) if (r['far_bin'] == 10 and zs) else 1.0
        s_inf = r['far_speed'] / corr
        lost = g.chunk_ns_sum * (1 - sp / s_inf)
        r['corr'] = corr
        r['D_all_pct'] = lost.sum() / r['W'] * 100
        r['D_lt50us_pct'] = lost[g.to_ns.astype(float) <= 50e3 * 1.01].sum() / r['W'] * 100
        r['D_ge50us_pct'] = lost[g.from_ns.astype(float) >= 48e3].sum() / r['W'] * 100
        r['mode'] = 'fast' if r['far_speed'] >= FAST else 'slow'
        # loop speed over time from the gaps' reference chunks
        out.append(r)
    df = pd.DataFrame(out)
    df.to_csv(f"{outdir}/q1b_recovery_deficit.csv", index=False)
    lines = ["# deficit against the asymptotic speed, % of the window; F - 0 Hz within set and mode"]
    for (s, mode), g in df.groupby(['set', 'mode'], sort=False):
        z = g[g.freq == 0]
        for f in sorted(g.freq.unique()):
            a = g[g.freq == f]
            l = f"{s} {mode} {f} Hz n={len(a)}: all {fmt(t_int(a.D_all_pct),2)} (<50us {fmt(t_int(a.D_lt50us_pct),2)}, >=50us {fmt(t_int(a.D_ge50us_pct),2)}) runs " + " ".join(f"{v:.2f}" for v in a.D_all_pct) + f"; corr {a['corr'].mean():.3f}"
            if f > 0 and len(z):
                l += f"; minus 0 Hz mean: all {a.D_all_pct.mean()-z.D_all_pct.mean():.2f}, >=50us {a.D_ge50us_pct.mean()-z.D_ge50us_pct.mean():.2f}"
            lines.append(l)
    txt = "\n".join(lines); print(txt)
    open(f"{outdir}/q1b_recovery_deficit.txt", "w").write(txt + "\n")

main()
