#!/usr/bin/env python3
"""The recommended rate at 0.1, 1 and 5 % from two analysis binaries, set by
set: what a change of the recommendation changed.

    python3 analysis/validate/answers_before_after.py OLD NEW DIR [DIR ...]

Each DIR is a results directory, or a folder searched for them (every
folder with a manifest.json). Prints a Markdown table: old and new rate and
basis per budget, the new answer's gaps-term-alone rate and the outside
term it charged; `*` marks a rate that moved by more than the prime step
(the next prime below or above the old rate).
"""
import json
import pathlib
import subprocess
import sys

BUDGETS = ("0.1", "1", "5")


def answer(binary, d, b):
    p = subprocess.run([binary, "recommend", str(d), "--budget", b + "%", "--json"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)


def is_prime(n):
    return n >= 2 and all(n % k for k in range(2, int(n ** 0.5) + 1))


def step_apart(a, b):
    """More than one prime step apart (two-significant-figure primes)."""
    if a is None or b is None:
        return a != b
    lo, hi = sorted((a, b))
    primes_between = [n for n in range(lo + 1, hi) if is_prime(n)]
    return hi > lo and len(primes_between) > 0 and abs(hi - lo) > max(2, 0.1 * lo)


def sets(args):
    for a in args:
        p = pathlib.Path(a)
        if (p / "manifest.json").exists():
            yield p
        else:
            for m in sorted(p.rglob("manifest.json")):
                if "report" not in m.parts:
                    yield m.parent


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    old, new = sys.argv[1], sys.argv[2]
    print("| set | " + " | ".join(f"{b} %: old -> new" for b in BUDGETS) + " | gaps term alone (1 %) | outside term charged (1 %) |")
    print("|---|" + "---|" * (len(BUDGETS) + 2))
    for d in sets(sys.argv[3:]):
        cells, model_rate, outside = [], "", ""
        for b in BUDGETS:
            o, n = answer(old, d, b), answer(new, d, b)
            ro = o and o.get("rate_hz")
            rn = n and n.get("rate_hz")
            bo = o["basis"] if o else "error"
            bn = n["basis"] if n else "error"
            mark = " *" if step_apart(ro, rn) else ""
            cells.append(f"{ro} ({bo}) -> {rn} ({bn}){mark}")
            if b == "1" and n:
                model_rate = str(n.get("model_rate_hz"))
                on = n.get("outside_ns")
                outside = "none" if not on else f"{on['value']:.0f} ns [{on['lo']:.0f}, {on['hi']:.0f}]"
        print(f"| {d} | " + " | ".join(cells) + f" | {model_rate} | {outside} |")


if __name__ == "__main__":
    main()
