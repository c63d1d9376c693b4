#!/usr/bin/env python3
"""SE per minute of running of the paired design at several phase lengths.

    python3 analysis/validate/phase_length.py results/20261124-vm-phase-length

Reads the sweeps made by interleaving `driver sweep --freqs 4000 --design
paired --no-util --reps 1 --duration 10s --phase P` for P = 50, 100, 250 ms
(four rounds) and prints, per phase length and frequency, the mean loss,
the SD of the per-run losses and of the group losses, and each scaled to
one minute of measured running (SD x sqrt(minutes per run or group)).
"""
import csv, glob, math, re, statistics as st, sys
from collections import defaultdict
from scipy import stats
runs = defaultdict(list)      # (phase_ms, freq) -> per-run mean group loss
groups = defaultdict(list)    # (phase_ms, freq) -> group losses
for d in sorted(glob.glob(sys.argv[1] + '/phase-*')):
    ph = int(re.search(r'phase-(\d+)ms', d).group(1))
    rows = list(csv.DictReader(open(d + '/phases.csv')))
    freq = {r['run_id']: int(r['freq_hz']) for r in csv.DictReader(open(d + '/runs.csv')) if r['status'] == 'ok'}
    by = defaultdict(list)
    for p in rows:
        by[p['run_id']].append(p)
    for rid, ps in by.items():
        ps.sort(key=lambda p: int(p['phase']))
        gl = []
        for i in range(0, len(ps) - len(ps) % 4, 4):
            g = ps[i:i+4]
            rate = lambda p: int(p['iterations']) / (int(p['end_ns']) - int(p['start_ns']))
            on = [rate(p) for p in g if p['sampling'] == 'true']
            off = [rate(p) for p in g if p['sampling'] == 'false']
            gl.append(100 * (1 - st.mean(on) / st.mean(off)))
        runs[(ph, freq[rid])].append(st.mean(gl))
        groups[(ph, freq[rid])].extend(gl)
print("phase_ms freq_hz runs groups mean_loss_pct sd_run_pp se_per_minute_run_pp sd_group_pp se_per_minute_group_pp")
for (ph, f) in sorted(runs):
    r = runs[(ph, f)]; g = groups[(ph, f)]
    run_min = (10 - 4 * ph / 1000) / 60  # measured part of a 10 s run (four phases settle)
    sd_r = st.stdev(r) if len(r) > 1 else float('nan')
    sd_g = st.stdev(g)
    grp_min = 4 * ph / 1000 / 60
    print(ph, f, len(r), len(g), round(st.mean(r), 3), round(sd_r, 3), round(sd_r * math.sqrt(run_min), 3), round(sd_g, 3), round(sd_g * math.sqrt(grp_min), 3))
