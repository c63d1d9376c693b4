"""Issue 32's proof: the split design's outside part recovers a slowdown
that is known, lies outside every gap, and switches with sampling.

    python3 analysis/validate/split_injector.py OUT [--cpu 1] [--companion-cpu 0]

The injector (a test fixture, not in the measured path) is a companion on
another CPU that streams memory while sampling is on: it reads the measured
CPU's local timer interrupts (/proc/interrupts, LOC) every 2 ms, and while
their rate is above --on-hz (cpu-clock's hrtimer at 4 kHz raises it from a
few hundred per second) it copies a 64 MiB buffer in 4 MiB pieces, which
slows a memory-bound loop on the measured CPU (--work memory:64M)
between the interrupts, not in them. --duty sets the share of each 2 ms
poll it streams for: two duties, two injection sizes.

1. Sizing, without sampling: 1 s runs of the workload binary (the same
   loop in timeline mode, memory:64M, on the measured CPU, no sampler) with the companion
   forced on (streaming at the duty all the time) and off, in blocks of
   both in alternating order: the slowdown = 1 - on-rate / off-rate per
   block, t interval over blocks (scipy).
2. The split design at 4 kHz (cpu scope, 100 ms phases) with the companion
   keyed to sampling, at each duty, and with no companion (the control):
   split.csv's outside part against the sized slowdown, and the in-gap
   part against the control's.

Writes OUT/injector.md and prints it. About 12 minutes.
"""
import argparse
import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from validate_common import stop_group, t_interval

POLL_S = 0.002
CHUNK = 4 << 20
BUFFER = 64 << 20


def loc_count(cpu):
    for line in open("/proc/interrupts"):
        if line.split(":")[0].strip() == "LOC":
            return int(line.split()[1 + cpu])
    raise SystemExit("/proc/interrupts has no LOC line")


def companion(cpu, on_hz, duty, forced, log):
    """Runs until SIGTERM: streams while the measured CPU's LOC rate is
    above on_hz (or always, when forced). With `log`, writes each burst's
    CLOCK_MONOTONIC_RAW start and end, ns (phases.csv's clock)."""
    bursts = []
    src = np.ones(BUFFER, dtype=np.uint8)
    dst = np.empty_like(src)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    last, t_last = loc_count(cpu), time.monotonic()
    off = 0
    while not stop:
        now = time.monotonic()
        n = loc_count(cpu)
        rate = (n - last) / max(now - t_last, 1e-6)
        last, t_last = n, now
        if forced or rate > on_hz:
            until = now + POLL_S * duty
            b0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
            while time.monotonic() < until:
                np.copyto(dst[off:off + CHUNK], src[off:off + CHUNK])
                off = (off + CHUNK) % BUFFER
            bursts.append((b0, time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)))
            rest = POLL_S - (time.monotonic() - now)
            if rest > 0:
                time.sleep(rest)
        else:
            time.sleep(POLL_S)
    if log:
        np.savetxt(log, np.array(bursts, dtype=np.int64).reshape(-1, 2), fmt="%d")


def start_companion(args, duty, forced, log=None):
    cmd = [sys.executable, __file__, "--companion", "--cpu", str(args.cpu), "--on-hz", str(args.on_hz),
           "--duty", str(duty)] + (["--forced"] if forced else []) + (["--log", str(log)] if log else [])
    return subprocess.Popen(["taskset", "-c", str(args.companion_cpu)] + cmd, start_new_session=True)


def sweep(args, out, extra):
    subprocess.run([args.driver, "sweep", "--cpu", str(args.cpu), "--work", "memory:64M",
                    "--scope", "cpu", "--no-util", "--no-host-look", "--out", str(out)] + extra, check=True)


def size(args, duty):
    """The slowdown the companion causes at `duty` without sampling:
    blocks of a workload run with it off and one with it forced on."""
    workload = str(Path(args.driver).with_name("workload"))
    losses = []
    for b in range(args.size_blocks):
        rates = {}
        for forced in ([False, True] if b % 2 == 0 else [True, False]):
            p = start_companion(args, duty, True) if forced else None
            try:
                time.sleep(0.2)
                # The loop the split runs measure: timeline mode, whose
                # stamping makes it less memory-bound than the plain loop
                # (the companion slowed the plain loop ~23 %, this one ~7 %).
                with tempfile.TemporaryDirectory() as tmp:
                    n = subprocess.run([workload, "--duration", f"{args.size_seconds}s", "--cpu", str(args.cpu), "--work",
                                        "memory:64M", "--timeline", str(Path(tmp) / "gaps")],
                                       check=True, capture_output=True, text=True).stdout.split()[-1]
            finally:
                stop_group(p)
            rates[forced] = int(n) / args.size_seconds
        losses.append(100 * (1 - rates[True] / rates[False]))
    return t_interval(losses)[:3]


def coverage(d, log, freq):
    """The share of the on and of the off phases' time (kept phases at
    `freq`) the companion streamed in."""
    bursts = np.loadtxt(log, dtype=np.int64, ndmin=2)
    phases = [r for r in csv.DictReader(open(d / "report" / "split_phases.csv")) if int(r["freq_hz"]) == freq]
    raw = {(int(r["run_id"]), int(r["phase"])): (int(r["start_ns"]), int(r["end_ns"]))
           for r in csv.DictReader(open(d / "phases.csv"))}
    cover = {True: [0, 0], False: [0, 0]}
    for r in phases:
        lo, hi = raw[(int(r["run_id"]), int(r["phase"]))]
        inside = np.clip(np.minimum(bursts[:, 1], hi) - np.maximum(bursts[:, 0], lo), 0, None).sum()
        c = cover[r["sampling"] == "true"]
        c[0] += int(inside)
        c[1] += hi - lo
    return cover[True][0] / cover[True][1], cover[False][0] / cover[False][1]


def split_row(d, freq):
    for r in csv.DictReader(open(d / "report" / "split.csv")):
        if int(r["freq_hz"]) == freq:
            return {k: float(r[k]) for k in r if k != "freq_hz"}
    raise SystemExit(f"{d}: no split row at {freq} Hz")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, nargs="?")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--companion-cpu", type=int, default=0)
    ap.add_argument("--on-hz", type=float, default=2000.0)
    ap.add_argument("--duty", type=float, default=1.0)
    ap.add_argument("--duties", default="1.0,0.5")
    ap.add_argument("--freq", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--size-blocks", type=int, default=30)
    ap.add_argument("--size-seconds", type=float, default=1.0,
                    help="each sizing run; short, so that the host's slow drift differs little within a block")
    ap.add_argument("--companion", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--forced", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--log", type=Path, help=argparse.SUPPRESS)
    target = Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "release"
    ap.add_argument("--driver", default=str(target / "driver"))
    a = ap.parse_args()
    if a.companion:
        companion(a.cpu, a.on_hz, a.duty, a.forced, a.log)
        return 0
    if a.out is None or a.out.exists():
        sys.exit("give a new folder OUT (nothing measured is overwritten)")
    a.out.mkdir(parents=True)
    split = ["--design", "split", "--freqs", str(a.freq), "--duration", "10s", "--phase", "100ms",
             "--reps", str(a.reps)]
    lines = [f"split design at {a.freq} Hz, cpu scope, workload memory:64M, {a.reps} runs; "
             f"companion on CPU {a.companion_cpu} streaming while CPU {a.cpu}'s LOC rate > {a.on_hz:.0f}/s", "",
             "| injection | sized slowdown % (no sampling) | outside % | in the gaps % | total % |",
             "|---|---|---|---|---|"]
    # Total minus the control's total is the injection's whole effect on
    # the paired loss; the outside part should hold it.
    fmt = lambda m, lo, hi: f"{m:.3f} [{lo:.3f}, {hi:.3f}]"
    cover_lines = []
    sweep(a, a.out / "control", split)
    c = split_row(a.out / "control", a.freq)
    part = lambda r, k: fmt(r[k], r[k.replace("_pct", "_lo_pct")], r[k.replace("_pct", "_hi_pct")])
    lines.append(f"| none (control) | - | {part(c, 'outside_pct')} | {part(c, 'in_gaps_pct')} | {part(c, 'total_pct')} |")
    z = split_row(a.out / "control", 0)
    lines.append(f"| none, 0 Hz (A/A) | - | {part(z, 'outside_pct')} | {part(z, 'in_gaps_pct')} | {part(z, 'total_pct')} |")
    for duty in [float(x) for x in a.duties.split(",")]:
        sized = size(a, duty)
        log = a.out / f"companion-d{duty}.txt"
        p = start_companion(a, duty, False, log)
        try:
            sweep(a, a.out / f"inject-d{duty}", split)
        finally:
            stop_group(p)
        on_cover, off_cover = coverage(a.out / f"inject-d{duty}", log, a.freq)
        cover_lines.append(f"duty {duty:g}: the companion streamed {100 * on_cover:.1f} % of the on phases' time "
                           f"and {100 * off_cover:.1f} % of the off phases' at {a.freq} Hz; sized x (on - off) = "
                           f"{sized[0] * (on_cover - off_cover) / duty:.3f} % expected outside")
        r = split_row(a.out / f"inject-d{duty}", a.freq)
        lines.append(f"| duty {duty:g} | {fmt(*sized)} | {part(r, 'outside_pct')} | {part(r, 'in_gaps_pct')} | "
                     f"{part(r, 'total_pct')} |")
        z = split_row(a.out / f"inject-d{duty}", 0)
        lines.append(f"| duty {duty:g}, 0 Hz (never on) | - | {part(z, 'outside_pct')} | {part(z, 'in_gaps_pct')} | "
                     f"{part(z, 'total_pct')} |")
    lines += [""] + cover_lines
    lines += ["", "Injected = outside - the control's outside at the same rate (sampling's own after-effect on "
              "this memory-bound loop lies outside the gaps too); it must hold the sized slowdown."]
    text = "\n".join(lines) + "\n"
    (a.out / "injector.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
