"""The proof that the split design's outside part recovers a slowdown
that is known, lies outside every gap, and switches with sampling.

    python3 analysis/validate/split_injector.py OUT [--cpu 1] [--companion-cpu 0]
    python3 analysis/validate/split_injector.py OUT --analyse-only

The injector (a test fixture, not in the measured path) is a companion on
another CPU that streams memory while sampling is on: it reads the measured
CPU's local timer interrupts (/proc/interrupts, LOC) every 2 ms, and while
their rate is above --on-hz (cpu-clock's hrtimer at 4 kHz raises it from a
few hundred per second) it copies a 64 MiB buffer in 4 MiB pieces, which
slows a memory-bound loop on the measured CPU (--work memory:64M)
between the interrupts, not in them. --duty sets the share of each 2 ms
poll it streams for: two duties, two injection sizes.

The companion's slowdown of the other vCPU moves with the host's memory
traffic (2.4 to 5.7 % between sizings minutes apart), so the sizing is
done inside the same blocks as the runs it is compared with. Each of
--reps blocks (the duties' order alternating) holds:

1. the control: a split sweep (one run at --freq and one at 0 Hz, cpu
   scope, 100 ms phases) with no companion;
2. per duty, the sizing, without sampling: --size-blocks pairs of 1 s
   runs of the workload binary (the same loop in timeline mode,
   memory:64M, on the measured CPU, no sampler) with the companion forced
   on (streaming at the duty all the time) and off, in alternating order,
   slowdown = 1 - on-rate / off-rate; then the same split sweep with the
   companion keyed to sampling.

Per block and duty: expected = sized x (the share of on-phase time it
streamed - that of off-phase time) / duty; recovered = outside - the
control's outside (sampling's own after-effect on this memory-bound loop
lies outside the gaps too). Over blocks, a t interval (scipy) of each and
of recovered - expected, which holds 0 where the slowdown is recovered;
the in-gap part's change against the control; and the 0 Hz runs (the
companion never on): null in every part.

Writes OUT/injector.md and prints it; --analyse-only recomputes it from
OUT's folders and sizing.csv. About 12 minutes.
"""
import argparse
import csv
import gzip
import json
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


def size(args, duty, sampled=False):
    """The slowdown the companion causes at `duty` without sampling (with
    `sampled`, under perf record at --freq on the measured CPU): pairs of
    a workload run with it off and one with it forced on."""
    workload = str(Path(args.driver).with_name("workload"))
    perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(args.freq), "-C", str(args.cpu),
                             "-o", "/dev/null"], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if sampled else None
    try:
        return size_pairs(args, duty, workload)
    finally:
        stop_group(perf)


def size_pairs(args, duty, workload):
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
    return losses


def coverage(d, log, freq):
    """The share of the on and of the off phases' time (kept phases at
    `freq`) the companion streamed in."""
    if not log.exists():
        # A committed set keeps the log gzipped.
        log = log.with_name(log.name + ".gz")
    bursts = np.loadtxt(log, dtype=np.int64, ndmin=2)
    phases = [r for r in csv.DictReader(opened(d / "report" / "split_phases.csv")) if int(r["freq_hz"]) == freq]
    raw = {(int(r["run_id"]), int(r["phase"])): (int(r["start_ns"]), int(r["end_ns"]))
           for r in csv.DictReader(opened(d / "phases.csv"))}
    cover = {True: [0, 0], False: [0, 0]}
    for r in phases:
        lo, hi = raw[(int(r["run_id"]), int(r["phase"]))]
        inside = np.clip(np.minimum(bursts[:, 1], hi) - np.maximum(bursts[:, 0], lo), 0, None).sum()
        c = cover[r["sampling"] == "true"]
        c[0] += int(inside)
        c[1] += hi - lo
    return cover[True][0] / cover[True][1], cover[False][0] / cover[False][1]


def opened(path):
    """`path`, or `path`.gz where a committed set keeps it gzipped."""
    if path.exists():
        return open(path)
    return gzip.open(path.with_name(path.name + ".gz"), "rt")


def split_row(d, freq):
    for r in csv.DictReader(opened(d / "report" / "split.csv")):
        if int(r["freq_hz"]) == freq:
            return {k: float(r[k]) if r[k] else float("nan") for k in r if k != "freq_hz"}
    raise SystemExit(f"{d}: no split row at {freq} Hz")


def measure(a, duties):
    """The blocks: control, then per duty sizing and the keyed sweep."""
    split = ["--design", "split", "--freqs", str(a.freq), "--duration", a.duration, "--phase", a.phase, "--reps", "1"]
    with open(a.out / "sizing.csv", "w") as f:
        f.write("block,duty,pair,slowdown_pct\n")
    for b in range(a.reps):
        sweep(a, a.out / f"block-{b}" / "control", split)
        for duty in (duties if b % 2 == 0 else duties[::-1]):
            for pair, loss in enumerate(size(a, duty)):
                with open(a.out / "sizing.csv", "a") as f:
                    f.write(f"{b},{duty:g},{pair},{loss!r}\n")
            log = a.out / f"block-{b}" / f"companion-d{duty:g}.txt"
            p = start_companion(a, duty, False, log)
            try:
                sweep(a, a.out / f"block-{b}" / f"inject-d{duty:g}", split)
            finally:
                stop_group(p)


def sizing_check(a, duties):
    """The sizing without and with sampling, in alternating blocks: does
    the companion slow a sampled loop as much as an unsampled one?"""
    rows = []
    for b in range(a.reps):
        for duty in duties:
            for sampled in ([False, True] if b % 2 == 0 else [True, False]):
                rows += [(b, duty, sampled, x) for x in size(a, duty, sampled)]
    with open(a.out / "sizing-check.csv", "w") as f:
        f.write("block,duty,sampled,slowdown_pct\n")
        f.writelines(f"{b},{d:g},{str(s).lower()},{x!r}\n" for b, d, s, x in rows)
    fmt = lambda e: f"{e[0]:.3f} [{e[1]:.3f}, {e[2]:.3f}]"
    lines = [f"The companion's slowdown of the memory:64M timeline loop, forced on against off, {a.size_blocks} "
             f"pairs of 1 s runs per block and state, {a.reps} blocks; sampled = under perf record -e cpu-clock "
             f"-F {a.freq} -C {a.cpu}. %, mean [95 % t interval over blocks].", "",
             "| duty | without sampling | with sampling | with - without |", "|---|---|---|---|"]
    for d in duties:
        per = {s: [np.mean([x for b2, d2, s2, x in rows if b2 == b and d2 == d and s2 == s]) for b in range(a.reps)]
               for s in (False, True)}
        diff = [y - x for x, y in zip(per[False], per[True])]
        lines.append(f"| {d:g} | {fmt(t_interval(per[False])[:3])} | {fmt(t_interval(per[True])[:3])} | "
                     f"{fmt(t_interval(diff)[:3])} |")
    text = "\n".join(lines) + "\n"
    (a.out / "sizing-check.md").write_text(text)
    print(text)


def analyse(a, duties):
    fmt = lambda e: f"{e[0]:.3f} [{e[1]:.3f}, {e[2]:.3f}]"
    sizing = list(csv.DictReader(open(a.out / "sizing.csv")))
    blocks = sorted({int(r["block"]) for r in sizing})
    per = {d: {k: [] for k in ("sized", "cover_on", "cover_off", "expected", "recovered", "diff", "in_change",
                                "outside", "in_gaps", "total", "aa_outside", "aa_in", "aa_total")} for d in duties}
    control = {k: [] for k in ("outside", "in_gaps", "total", "aa_outside", "aa_in", "aa_total")}
    for b in blocks:
        c = split_row(a.out / f"block-{b}" / "control", a.freq)
        z = split_row(a.out / f"block-{b}" / "control", 0)
        for k, v in (("outside", c["outside_pct"]), ("in_gaps", c["in_gaps_pct"]), ("total", c["total_pct"]),
                     ("aa_outside", z["outside_pct"]), ("aa_in", z["in_gaps_pct"]), ("aa_total", z["total_pct"])):
            control[k].append(v)
        for d in duties:
            x = a.out / f"block-{b}" / f"inject-d{d:g}"
            sized = float(np.mean([float(r["slowdown_pct"]) for r in sizing
                                   if int(r["block"]) == b and float(r["duty"]) == d]))
            on, off = coverage(x, a.out / f"block-{b}" / f"companion-d{d:g}.txt", a.freq)
            r, z = split_row(x, a.freq), split_row(x, 0)
            e = per[d]
            e["sized"].append(sized)
            e["cover_on"].append(100 * on)
            e["cover_off"].append(100 * off)
            e["expected"].append(sized * (on - off) / d)
            e["recovered"].append(r["outside_pct"] - c["outside_pct"])
            e["diff"].append(e["recovered"][-1] - e["expected"][-1])
            e["in_change"].append(r["in_gaps_pct"] - c["in_gaps_pct"])
            for k, v in (("outside", r["outside_pct"]), ("in_gaps", r["in_gaps_pct"]), ("total", r["total_pct"]),
                         ("aa_outside", z["outside_pct"]), ("aa_in", z["in_gaps_pct"]), ("aa_total", z["total_pct"])):
                e[k].append(v)
    ti = lambda x: t_interval(x)[:3]
    manifest = json.load(open(a.out / f"block-{blocks[0]}" / "control" / "manifest.json"))
    phase_ms = manifest["options"]["phase_ns"] / 1e6
    run_s = manifest["options"]["duration_ns"] / 1e9
    lines = [f"split design at {a.freq} Hz, cpu scope, {phase_ms:g} ms phases in {run_s:g} s runs, workload "
             f"memory:64M; {len(blocks)} blocks, each a control "
             f"sweep and, per duty, the sizing ({a.size_blocks} on/off pairs of 1 s runs, no sampling) then the "
             f"keyed sweep; companion on CPU {a.companion_cpu} streaming while CPU {a.cpu}'s LOC rate > "
             f"{a.on_hz:.0f}/s. Figures in %, mean [95 % t interval over blocks].", "",
             "| injection | outside | in the gaps | total | 0 Hz outside | 0 Hz in the gaps | 0 Hz total |",
             "|---|---|---|---|---|---|---|",
             f"| none (control) | {fmt(ti(control['outside']))} | {fmt(ti(control['in_gaps']))} | "
             f"{fmt(ti(control['total']))} | {fmt(ti(control['aa_outside']))} | {fmt(ti(control['aa_in']))} | "
             f"{fmt(ti(control['aa_total']))} |"]
    for d in duties:
        e = per[d]
        lines.append(f"| duty {d:g} | {fmt(ti(e['outside']))} | {fmt(ti(e['in_gaps']))} | {fmt(ti(e['total']))} | "
                     f"{fmt(ti(e['aa_outside']))} | {fmt(ti(e['aa_in']))} | {fmt(ti(e['aa_total']))} |")
    lines += ["", "The injection against its sizing, block by block (recovered = outside - the block's control "
              "outside; expected = sized x (on - off coverage) / duty):", "",
              "| duty | sized, no sampling | coverage on / off | expected | recovered | recovered - expected | "
              "in the gaps - control |", "|---|---|---|---|---|---|---|"]
    verdicts = []
    for d in duties:
        e = per[d]
        diff = ti(e["diff"])
        lines.append(f"| {d:g} | {fmt(ti(e['sized']))} | {np.mean(e['cover_on']):.1f} / {np.mean(e['cover_off']):.1f} | "
                     f"{fmt(ti(e['expected']))} | {fmt(ti(e['recovered']))} | {fmt(diff)} | {fmt(ti(e['in_change']))} |")
        held = diff[1] <= 0 <= diff[2]
        verdicts.append(f"duty {d:g}: recovered - expected {fmt(diff)}: "
                        + ("holds 0, the injected slowdown is recovered" if held else "excludes 0, NOT recovered"))
    lines += [""] + verdicts
    lines += ["", "Within the phases (the driver's read halfway): the second half's speed outside the gaps over the "
              "first's, %, in phases that follow one of the other state; mean [95 % t interval over blocks]. Above 0 "
              "in off phases: the slowdown outlasts the on phase before it; below 0 in on phases: it builds up.", "",
              "| injection | on phases | off phases |", "|---|---|---|"]
    for name in ["control"] + [f"inject-d{d:g}" for d in duties]:
        halves = {True: [], False: []}
        for b in blocks:
            ph = list(csv.DictReader(opened(a.out / f"block-{b}" / name / "report" / "split_phases.csv")))
            ph = [r for r in ph if int(r["freq_hz"]) == a.freq and r.get("speed_first")]
            ph.sort(key=lambda r: (int(r["run_id"]), int(r["phase"])))
            for on in (True, False):
                x = [100 * (float(r["speed_second"]) / float(r["speed_first"]) - 1)
                     for prev, r in zip(ph, ph[1:]) if r["sampling"] == str(on).lower() != prev["sampling"]
                     and prev["run_id"] == r["run_id"]]
                if x:
                    halves[on].append(np.mean(x))
        if all(len(v) > 1 for v in halves.values()):
            lines.append(f"| {name} | {fmt(ti(halves[True]))} | {fmt(ti(halves[False]))} |")
    text = "\n".join(lines) + "\n"
    (a.out / "injector.md").write_text(text)
    print(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, nargs="?")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--companion-cpu", type=int, default=0)
    ap.add_argument("--on-hz", type=float, default=2000.0)
    ap.add_argument("--duty", type=float, default=1.0)
    ap.add_argument("--duties", default="1.0,0.5")
    ap.add_argument("--freq", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=6, help="blocks")
    ap.add_argument("--size-blocks", type=int, default=8, help="on/off sizing pairs per block and duty")
    ap.add_argument("--size-seconds", type=float, default=1.0,
                    help="each sizing run; short, so that the host's slow drift differs little within a pair")
    ap.add_argument("--phase", default="100ms", help="the split runs' phase length")
    ap.add_argument("--duration", default="10s", help="the split runs' length")
    ap.add_argument("--analyse-only", action="store_true", help="recompute OUT/injector.md from OUT")
    ap.add_argument("--sizing-check", action="store_true",
                    help="only the sizing, without and with sampling (perf record), into OUT/sizing-check.md")
    ap.add_argument("--companion", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--forced", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--log", type=Path, help=argparse.SUPPRESS)
    target = Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "release"
    ap.add_argument("--driver", default=str(target / "driver"))
    a = ap.parse_args()
    if a.companion:
        companion(a.cpu, a.on_hz, a.duty, a.forced, a.log)
        return 0
    duties = [float(x) for x in a.duties.split(",")]
    if a.out is None:
        sys.exit("give a folder OUT")
    if not a.analyse_only:
        if a.out.exists():
            sys.exit(f"{a.out} exists: give a new folder OUT (nothing measured is overwritten), or --analyse-only")
        a.out.mkdir(parents=True)
        if a.sizing_check:
            sizing_check(a, duties)
            return 0
        measure(a, duties)
    analyse(a, duties)
    return 0


if __name__ == "__main__":
    sys.exit(main())
