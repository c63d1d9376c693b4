#!/usr/bin/env python3
"""The gaps design checked against `perf record` + `perf script`.

Runs the workload in timeline mode on one CPU while `perf record` samples
that CPU with cpu-clock at F Hz (its own ring, its own wakeups, its own
clock setting: `-k CLOCK_MONOTONIC_RAW`), then matches perf's sample times
to the workload's gaps with an implementation written here, not the Rust
one (join gaps closer than 2 us into episodes, a sample matches the episode
whose [start - 1 us, end + 1 us] holds it).

Prints, per frequency and repetition: samples, matched share, matched
excess per sample, and the background (random timestamps over a run
without perf). Interleaves F runs with 0 Hz runs.

    python3 analysis/validate/gaps_vs_perf_record.py WORKLOAD_BIN [CPU] [SECONDS] [REPS] [FREQS...]

Needs root (perf record -C), perf, numpy. Run it on a quiet machine.
"""
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

JOIN_NS = 2_000
SLACK_NS = 1_000


def read_gaps(path):
    data = open(path, "rb").read()
    return [struct.unpack_from("<QQQ", data, i) for i in range(0, len(data), 24)]


def episodes(gaps):
    eps = []
    for s, e, x in gaps:
        if eps and s <= eps[-1][1] + JOIN_NS:
            eps[-1][1] = max(eps[-1][1], e)
            eps[-1][2] += x
        else:
            eps.append([s, e, x])
    return eps


def match(eps, times):
    """Index of the episode holding each sorted time, or -1."""
    out, k = [], 0
    for t in times:
        while k < len(eps) and eps[k][1] + SLACK_NS < t:
            k += 1
        out.append(k if k < len(eps) and eps[k][0] - SLACK_NS <= t else -1)
    return out


def perf_times(data_file, cpu):
    out = subprocess.run(
        ["perf", "script", "-i", data_file, "-F", "cpu,time", "--ns"],
        capture_output=True, text=True, check=True,
    ).stdout
    times = []
    for line in out.splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) < 2:
            continue
        c = int(parts[0].strip("[]"))
        if c != cpu:
            continue
        sec, ns = parts[1].split(".")
        times.append(int(sec) * 1_000_000_000 + int(ns))
    return sorted(times)


def run(workload, cpu, secs, freq, tmp):
    gaps_file = os.path.join(tmp, "gaps.bin")
    perf = None
    if freq > 0:
        data = os.path.join(tmp, "perf.data")
        perf = subprocess.Popen(
            ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(freq), "-C", str(cpu),
             "-k", "CLOCK_MONOTONIC_RAW", "-o", data, "--", "sleep", str(secs + 1.5)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        # perf record needs a moment to open its events.
        subprocess.run(["sleep", "0.5"])
    rep = json.loads(subprocess.run(
        [workload, "--duration", f"{secs}s", "--cpu", str(cpu), "--json", "--timeline", gaps_file],
        capture_output=True, text=True, check=True,
    ).stdout)
    tl = rep["timeline"]
    eps = episodes(read_gaps(gaps_file))
    times = []
    if perf is not None:
        perf.wait()
        times = [t for t in perf_times(data, cpu) if tl["loop_start_ns"] <= t <= tl["loop_end_ns"]]
    return tl, eps, times


def main():
    workload = sys.argv[1]
    cpu = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    secs = float(sys.argv[3]) if len(sys.argv) > 3 else 5
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    freqs = [int(f) for f in sys.argv[5:]] or [1000, 10000]
    rng = random.Random(2014)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(reps):
            for f in [0] + freqs:
                tl, eps, times = run(workload, cpu, secs, f, tmp)
                window = tl["loop_end_ns"] - tl["loop_start_ns"]
                gap_share = sum(e[2] for e in eps) / window
                if f == 0:
                    n = 200_000
                    rt = sorted(rng.randrange(tl["loop_start_ns"], tl["loop_end_ns"]) for _ in range(n))
                    m = match(eps, rt)
                    hit = {i for i in m if i >= 0}
                    b = sum(eps[i][2] for i in hit) / n
                    print(f"rep {r} 0 Hz: episodes {len(eps)}, gap time {100 * gap_share:.2f}% of the CPU, "
                          f"background per random timestamp {b:.1f} ns")
                    continue
                m = match(eps, times)
                hit = {i for i in m if i >= 0}
                matched = sum(1 for i in m if i >= 0)
                excess = sum(eps[i][2] for i in hit)
                per = sorted(eps[i][2] for i in hit)
                print(f"rep {r} {f} Hz (perf record): samples {len(times)} "
                      f"({len(times) * 1e9 / window:.0f}/s), matched {matched} "
                      f"({100 * matched / max(len(times), 1):.2f}%), matched excess per sample "
                      f"{excess / max(len(times), 1):.0f} ns, median episode {per[len(per) // 2] if per else 0} ns, "
                      f"gap time {100 * gap_share:.2f}% of the CPU")


if __name__ == "__main__":
    main()
