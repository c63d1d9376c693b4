#!/usr/bin/env python3
"""The driver's handler time against perf record's, interleaved.

    python3 analysis/validate/handler_vs_perf_record.py SOAK CPU SECONDS REPS FREQ

SOAK is the driver's soak example (target/release/examples/soak). Each
repetition runs, in a shuffled order, on CPU with a busy loop pinned there
(the soak binary's own `--spin`):

- driver/time:                 the driver's sampler, samples carrying only
                               IDENTIFIER|TIME (the old default);
- driver/perf-default:         samples as perf record writes them
                               (IP|TID|TIME|CPU|PERIOD|IDENTIFIER);
- driver/perf-default+perf-trace: the same, and the tracepoint records
                               with perf record's fields too;
- perf record:                 `perf record -e cpu-clock/freq=F/
                               -e timer:hrtimer_expire_entry
                               -e timer:hrtimer_expire_exit -C CPU`, its
                               handler intervals parsed here from
                               `perf script` (entry with
                               function=perf_swevent_hrtimer, paired with
                               the next exit of the same hrtimer on the CPU);
- perf record, entry twice:    the same with hrtimer_expire_entry opened
                               twice: the time between the two entry
                               records of one expiry is what writing one
                               tracepoint record costs (the instrument).

All handler tracing is hrtimer only (no irq_vectors), as in perf record.
Prints every run's mean and, per condition, the mean over repetitions.
"""
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

ENTRY = re.compile(
    r"\[(\d+)\]\s+(\d+)\.(\d+):\s+timer:hrtimer_expire_entry:\s+hrtimer=(0x[0-9a-f]+).*function=(\S+)"
)
EXIT = re.compile(r"\[(\d+)\]\s+(\d+)\.(\d+):\s+timer:hrtimer_expire_exit:\s+hrtimer=(0x[0-9a-f]+)")


def ns(sec, frac):
    return int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


def driver(soak, cpu, secs, freq, extra):
    out = subprocess.run(
        [soak, str(secs), str(freq), str(cpu), "no-irq", *extra],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    m = re.search(r"hrtimer_intervals\s+(\d+) \(median (\d+) ns, mean ([\d.]+) ns\)", out)
    return float(m.group(3)), int(m.group(1))


def perf_record(soak, cpu, secs, freq, twice):
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "perf.data")
        events = ["-e", f"cpu-clock/freq={freq}/", "-e", "timer:hrtimer_expire_entry"]
        if twice:
            events += ["-e", "timer:hrtimer_expire_entry"]
        events += ["-e", "timer:hrtimer_expire_exit"]
        subprocess.run(
            ["perf", "record", "-q", "-o", data, *events, "-C", str(cpu), "-k", "CLOCK_MONOTONIC_RAW",
             "--", soak, "--spin", str(cpu), str(secs)],
            check=True,
            capture_output=True,
        )
        script = subprocess.run(
            ["perf", "script", "-i", data, "--ns", "-F", "cpu,time,event,trace"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    open_entry = {}
    durations = []
    record_costs = []
    for line in script.splitlines():
        m = ENTRY.search(line)
        if m:
            cpu_, s, f, timer, func = m.groups()
            if func != "perf_swevent_hrtimer":
                continue
            t = ns(s, f)
            key = (cpu_, timer)
            if key in open_entry and twice and open_entry[key][1] is None:
                first = open_entry[key][0]
                record_costs.append(t - first)
                open_entry[key] = (first, t)
            else:
                open_entry[key] = (t, None)
            continue
        m = EXIT.search(line)
        if m:
            cpu_, s, f, timer = m.groups()
            key = (cpu_, timer)
            if key in open_entry:
                durations.append(ns(s, f) - open_entry.pop(key)[0])
    mean = statistics.fmean(durations) if durations else float("nan")
    rec = statistics.fmean(record_costs) if record_costs else float("nan")
    return mean, len(durations), rec


def main():
    soak, cpu, secs, reps, freq = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    conds = {
        "driver/time": lambda: driver(soak, cpu, secs, freq, ["sample=time"]),
        "driver/perf-default": lambda: driver(soak, cpu, secs, freq, ["sample=perf-default"]),
        "driver/perf-default+perf-trace": lambda: driver(
            soak, cpu, secs, freq, ["sample=perf-default", "perf-trace"]
        ),
        "perf record": lambda: perf_record(soak, cpu, secs, freq, False)[:2],
    }
    means = {c: [] for c in conds}
    rec_costs = []
    rng = random.Random(1)
    for rep in range(reps):
        order = list(conds)
        rng.shuffle(order)
        for c in order:
            mean, n = conds[c]()
            means[c].append(mean)
            print(f"rep {rep} {c:32s} handler mean {mean:7.1f} ns over {n} intervals", flush=True)
        mean, n, rec = perf_record(soak, cpu, secs, freq, True)
        rec_costs.append(rec)
        print(
            f"rep {rep} {'perf record, entry twice':32s} handler mean {mean:7.1f} ns over {n} intervals; "
            f"one tracepoint record {rec:.1f} ns",
            flush=True,
        )
    print()
    ref = statistics.fmean(means["perf record"])
    for c, v in means.items():
        m = statistics.fmean(v)
        print(f"{c:32s} mean over reps {m:7.1f} ns  ({(m / ref - 1) * 100:+.1f}% vs perf record)  runs {['%.0f' % x for x in v]}")
    print(f"{'one tracepoint record (perf)':32s} mean over reps {statistics.fmean(rec_costs):7.1f} ns  runs {['%.0f' % x for x in rec_costs]}")


if __name__ == "__main__":
    main()
