#!/usr/bin/env python3
"""Monte Carlo noise of the Rust b (8 replications = 8 random
phases at >= 4 kHz) against its exact expectation over the phase.
Per 0 Hz run: exact b, and mean/SD over 20 seeds of the 8-replication draw.
    python3 analysis/validate/background_draw_noise.py SET FREQ..."""
import os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from xeon_loss_common import load, LONG
from heavy_tail_estimators import b_exact, own_value, own_draw
import heavy_tail_estimators
d = sys.argv[1]
runs = load(d)
for f in map(int, sys.argv[2:]):
    rate = np.mean([x.rate for x in runs if x.freq == f]); P = 1e9 / rate
    heavy_tail_estimators.MIN_REPS = 8
    for z in [x for x in runs if x.freq == 0]:
        ex = b_exact(z, P, lambda e: e, LONG)
        v = np.array([own_value(z, own_draw(z, P, np.random.default_rng([s, 7])), lambda e: e, LONG) for s in range(20)])
        print(f"{os.path.basename(d)} {f} Hz run {z.id}: exact {ex:.1f}; 8-phase draws mean {v.mean():.1f} SD {v.std(ddof=1):.1f} min {v.min():.1f} max {v.max():.1f}")
