#!/usr/bin/env python3
"""Recompute report/command.csv (driver sweep --command) from runs.csv with
numpy/scipy, written without looking at the Rust estimator's code paths
beyond docs/methodology.md ("Your own program").

usage: python3 analysis/validate/command_scipy.py RESULTS_DIR
Prints each configuration's figures from both and exits 1 on a mismatch.
"""
import csv
import math
import sys
from collections import defaultdict

import numpy as np
from scipy import stats


def main(d):
    runs = [r for r in csv.DictReader(open(f"{d}/runs.csv"))
            if r["workload"] == "command" and r["kind"] == "loss"]
    ok = [r for r in runs if r["status"] == "ok" and int(r["wall_ns"]) > 0]
    base = {r["block"]: int(r["wall_ns"]) for r in ok if r["freq_hz"] == "0"}
    groups = defaultdict(list)
    for r in ok:
        if r["freq_hz"] != "0":
            groups[(r["sample"], int(r["freq_hz"]))].append(r)
    mine = {}
    for (sample, f), rs in groups.items():
        d_ = np.array([math.log(int(r["wall_ns"]) / base[r["block"]]) for r in rs if r["block"] in base])
        cost = np.array([(int(r["wall_ns"]) - base[r["block"]]) / int(r["samples"])
                         for r in rs if r["block"] in base and int(r["samples"]) > 0])
        lo, hi = stats.t.interval(0.95, len(d_) - 1, loc=d_.mean(), scale=stats.sem(d_))
        to_loss = lambda x: 100 * (1 - math.exp(-x))
        clo, chi = stats.t.interval(0.95, len(cost) - 1, loc=cost.mean(), scale=stats.sem(cost))
        mine[(sample, f)] = (to_loss(d_.mean()), to_loss(lo), to_loss(hi), cost.mean(), clo, chi, len(d_))
    theirs = {(r["sample"], int(r["freq_hz"])): r for r in csv.DictReader(open(f"{d}/report/command.csv"))}
    bad = 0
    for k, v in sorted(mine.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        t = theirs[k]
        tv = tuple(float(t[c]) for c in ["loss_pct", "loss_pct_lo", "loss_pct_hi", "cost_per_sample_ns",
                                          "cost_per_sample_ns_lo", "cost_per_sample_ns_hi"]) + (int(t["blocks"]),)
        same = all(abs(a - b) <= 1e-6 * max(1.0, abs(a)) for a, b in zip(v, tv))
        bad += not same
        print(f"{k[0]} {k[1]} Hz: scipy loss {v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}] %, cost {v[3]:.0f} [{v[4]:.0f}, {v[5]:.0f}] ns, "
              f"{v[6]} blocks; report {'equal' if same else 'DIFFERS: ' + str(tv)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main(sys.argv[1])
