"""The check that the external mode measures what our sampler does:
`perf record -e cpu-clock -F F -C CPU -o /dev/null` as --profiler against
our sampler (--sample perf-default, scope cpu, gaps design) at the same
rates, each rate's cost per interruption (per sample) and loss compared
within their combined intervals: |a - b| <= 1.96 sqrt(se_a^2 + se_b^2),
with each se from its 95 % t interval over n runs (scipy's t).

    python3 analysis/validate/profiler_check.py PROFILER_SET BUILTIN_SET
"""
import csv
import sys

from scipy import stats


def se(lo, hi, n):
    return (float(hi) - float(lo)) / 2 / stats.t.ppf(0.975, n - 1)


def main(prof, builtin):
    p = {int(r["freq_hz"]): r for r in csv.DictReader(open(f"{prof}/report/profiler.csv"))}
    b = {int(r["freq_hz"]): r for r in csv.DictReader(open(f"{builtin}/report/per_sample.csv"))}
    ok = True
    for f in sorted(set(p) & set(b)):
        P, B = p[f], b[f]
        n_p, n_b = int(P["blocks"]), int(B["runs"])
        pairs = [
            ("cost ns", P["cost_per_interruption_ns"], P["cost_per_interruption_lo_ns"], P["cost_per_interruption_hi_ns"],
             B["total_ns"], B["total_lo_ns"], B["total_hi_ns"]),
            ("loss %", P["gap_loss_pct"], P["gap_loss_lo_pct"], P["gap_loss_hi_pct"],
             B["predicted_loss_pct"], B["predicted_loss_lo_pct"], B["predicted_loss_hi_pct"]),
        ]
        for name, a, alo, ahi, c, clo, chi in pairs:
            d = float(a) - float(c)
            lim = 1.96 * (se(alo, ahi, n_p) ** 2 + se(clo, chi, n_b) ** 2) ** 0.5
            verdict = "agree" if abs(d) <= lim else "DISAGREE"
            ok &= abs(d) <= lim
            print(f"{f} Hz {name}: profiler {float(a):.4g} [{float(alo):.4g}, {float(ahi):.4g}] vs ours "
                  f"{float(c):.4g} [{float(clo):.4g}, {float(chi):.4g}]: difference {d:+.4g}, limit {lim:.4g}: {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
