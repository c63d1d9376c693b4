#!/usr/bin/env python3
"""The `--command` loss checked with perf's own sampler: the same command
timed alone, with `perf record -e cpu-clock -F F -C CPU` sampling its CPU
(perf pinned to another CPU, started before and stopped after the
command), in randomised blocks, loss = 1 - exp(-mean ln(wall_F / wall_0))
with scipy's t interval over blocks: the driver's estimator, but none of
its code, sampler or timing.

usage: python3 analysis/validate/command_vs_perf_record.py CPU BLOCKS FREQ... -- CMD ARGS
"""
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy import stats


def timed(cmd, cpu):
    t0 = time.perf_counter_ns()
    subprocess.run(["taskset", "-c", str(cpu)] + cmd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter_ns() - t0


def main():
    sep = sys.argv.index("--")
    cpu, blocks = int(sys.argv[1]), int(sys.argv[2])
    freqs = [int(f) for f in sys.argv[3:sep]]
    cmd = sys.argv[sep + 1:]
    other = 0 if cpu != 0 else 1
    out = tempfile.mkdtemp()
    timed(cmd, cpu)  # warm-up
    walls = {f: [] for f in [0] + freqs}
    for b in range(blocks):
        order = [0] + freqs
        random.shuffle(order)
        for f in order:
            if f == 0:
                walls[0].append(timed(cmd, cpu))
                continue
            p = subprocess.Popen(
                ["taskset", "-c", str(other), "perf", "record", "-q", "-e", "cpu-clock", "-F", str(f),
                 "-C", str(cpu), "-o", os.path.join(out, "perf.data")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            walls[f].append(timed(cmd, cpu))
            p.send_signal(signal.SIGINT)
            p.wait()
    w0 = np.array(walls[0], dtype=float)
    print(f"0 Hz: wall {w0.mean() * 1e-9:.4f} +- {w0.std(ddof=1) * 1e-9:.4f} s ({blocks} runs)")
    for f in freqs:
        wf = np.array(walls[f], dtype=float)
        d = np.log(wf / w0)
        lo, hi = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
        loss = lambda x: 100 * (1 - math.exp(-x))
        print(f"{f} Hz (perf record): wall {wf.mean() * 1e-9:.4f} +- {wf.std(ddof=1) * 1e-9:.4f} s, "
              f"loss {loss(d.mean()):.3f} [{loss(lo):.3f}, {loss(hi):.3f}] % over {len(d)} blocks")


if __name__ == "__main__":
    main()
