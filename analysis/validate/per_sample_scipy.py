#!/usr/bin/env python3
"""Recomputes the report's per-sample cost table from the raw files with
numpy/scipy, written apart from the Rust code, and compares it with
report/per_sample.csv.

    python3 analysis/validate/per_sample_scipy.py RESULTS_DIR [--per-run-horizon]

From runs.csv, timeline.csv, recovery.csv, gaps/ and samples/
(docs/results-format.md) and the formulas of docs/methodology.md, "Gaps
design" and "Heavy-tailed backgrounds: the cap" (one sample contents and
workload per set, as every set here has):
- runs: design gaps, kind loss, status ok; a resumed sweep's last
  timeline.csv row per run and last recovery.csv row per (run, bin); a run
  without a loop window (or at F > 0 without samples) left out;
- episodes rebuilt from the gaps' `episode` column; episodes with 1 ms of
  excess or more ("long"), and the samples in them, left out of the matched
  excess, of b and of the sample counts (N' = N - samples in long);
- the cap T at F: the 99.9th percentile (numpy's default, type 7) of the
  0 Hz runs' short episode excess, pooled, or 10 x the median matched
  short episode at F, whichever is larger; each matched episode counts up
  to T per sample it holds, the rest goes to `above_cap`;
- b(F): per 0 Hz run, the exact expectation for a periodic sampler at the
  mean achieved rate at F from a uniform phase (episode hit with
  probability min(1, (len + 2 us) / period), counted once, capped at T per
  timestamp it holds, max(1, window / period); expected timestamps W /
  period less those in long episodes), t interval over the 0 Hz runs;
- direct = capped matched excess / N' - b; above_cap = the rest / N' - b's
  rest; long = (long episodes' excess less the samples inside them at the
  run's matched excess per sample, as a share of W, minus the 0 Hz runs'
  mean share) per sample; above_cap and long charged to the total where
  their interval lies above 0;
- after-effect per sample = E(H) / episodes x matched short episodes / N',
  with the run's reference beyond H (bins from H on) and E(H) over the bins
  that end by H; H = min(50 us, 0.5 / mean achieved rate at F), one horizon
  per frequency as the report's recovery_horizon_ns column states and the
  Rust code uses (methodology.md writes 0.5 / r with r the run's own rate:
  --per-run-horizon computes that instead; at 100 kHz on
  20261125T150001Z-vm the two differ, the runs' own horizons straddling a
  bin edge); where a run has no chunks beyond H ("not measurable") the
  row's after_effect columns are empty and the run is charged the bound
  (after_effect_bound_ns: the largest finite after-effect upper bound of
  the rates whose runs all measured theirs, at least 0; charged at most
  the run's time between samples less its direct cost);
- total = direct + after-effect (or the bound) + the charged parts, its
  95 % prediction interval (total_pred), predicted loss (rate x total) and
  predicted direct loss (rate x (total - after-effect)), each per run; the
  excess gap share over 0 Hz; the remainder (direct - whole interrupt, or
  - handler) and the agreement word from the report's own tracing and
  paired columns;
- 95 % t intervals over runs with scipy.stats.t.
Every column so computed must equal the report's to 1e-6 (relative, or
absolute below 1; empty in the CSV = NaN here). The A/A null control is a
random draw (the Rust code's ChaCha8 stream is not reproduced): drawn here
with numpy's generator the same way (periodic timestamps from random
phases, R = max(8, ceil(200 000 / timestamps per replication)), distinct
episodes per replication, capped) against the exact b of the other 0 Hz
runs, it must lie inside the report's interval. Not checked: the paired
loss, handler and whole-interrupt times (other designs' tables).
Needs numpy, scipy, pyarrow.
"""
import csv
import sys

import numpy as np
import rawfiles
from scipy import stats

LONG = 1_000_000  # ns of excess: the CPU taken away
MIN_REFERENCE_CHUNKS = 10_000  # a run measures its own after-effect only with this many chunks beyond H
SLACK = 1_000  # ns either side of an episode that a timestamp still matches
HORIZON = 50_000.0  # ns, the after-effect's horizon at most
CAP_QUANTILE = 0.999
CAP_MEDIAN_FACTOR = 10.0
STAMPS = 200_000  # A/A draw: timestamps per 0 Hz run, at least
MIN_REPS = 8
REL = 1e-6


def t_interval(v):
    """(mean, lo, hi, se) of a 95 % Student-t interval over the values; NaN
    bounds below two values, NaN throughout if any value is NaN."""
    v = np.asarray(v, dtype=float)
    if len(v) == 0:
        return (np.nan,) * 4
    m = v.mean()
    if len(v) < 2 or not np.isfinite(m):
        return m, np.nan, np.nan, np.nan
    se = v.std(ddof=1) / np.sqrt(len(v))
    hw = stats.t.ppf(0.975, len(v) - 1) * se
    return m, m - hw, m + hw, se


def t_prediction(v):
    """(mean, lo, hi, se) of a 95 % prediction interval for one more value:
    mean +- t s sqrt(1 + 1/n)."""
    v = np.asarray(v, dtype=float)
    m = v.mean()
    if len(v) < 2 or not np.isfinite(m):
        return m, np.nan, np.nan, np.nan
    se = v.std(ddof=1) * np.sqrt(1 + 1 / len(v))
    hw = stats.t.ppf(0.975, len(v) - 1) * se
    return m, m - hw, m + hw, se


def episodes(d, rid):
    """(start, end, excess) of each episode of gaps/run-<rid>, by index."""
    g_start, g_end, g_excess, ep = rawfiles.gaps(d, rid)
    n = ep.max() + 1 if len(ep) else 0
    ex = np.bincount(ep, weights=g_excess.astype(np.float64), minlength=n)
    start = np.full(n, np.iinfo(np.int64).max)
    end = np.zeros(n, dtype=np.int64)
    np.minimum.at(start, ep, g_start)
    np.maximum.at(end, ep, g_end)
    return start, end, ex


def last_rows(path, key):
    """CSV rows by key, the last row of each key winning."""
    out = {}
    for r in csv.DictReader(open(path)):
        out[key(r)] = r
    return out


class Run:
    """One gaps run: timeline row, recovery bins, episodes, and at F > 0 its
    matched short episodes (excess, samples each) and samples in long."""

    def __init__(self, d, row, freq, bins, run=None):
        self.id, self.freq, self.row = row["run_id"], freq, row
        self.lo, self.hi = int(row["loop_start_ns"]), int(row["loop_end_ns"])
        self.w = self.hi - self.lo
        self.n = int(row["samples"])
        # Raw files thinned at dense rates (runs.csv raw_keep_every > 1):
        # they cover raw_kept_ns of the window and hold their own samples.
        every = int((run or {}).get("raw_keep_every") or 1)
        self.thinned = every > 1
        self.raw_w = int(run["raw_kept_ns"]) if self.thinned else self.w
        self.rate = self.n / (self.w * 1e-9) if self.w > 0 else np.nan
        self.bins = bins
        self.start, self.end, self.ex = episodes(d, self.id)
        long = self.ex >= LONG
        self.long_n, self.long_ex = int(long.sum()), float(self.ex[long].sum())
        if freq == 0:
            return
        s_all = rawfiles.sample_episodes(d, self.id)
        s = s_all[(s_all >= 0) & (s_all < len(self.ex))]
        self.in_long = int((self.ex[s] >= LONG).sum())
        u, k = np.unique(s, return_counts=True)
        short = self.ex[u] < LONG
        self.m_ex, self.m_k = self.ex[u][short], k[short]
        n_raw = len(s_all) if self.thinned else self.n
        self.n_short = n_raw - self.in_long  # N'

    def usable(self):
        return self.w > 0 and (self.freq == 0 or self.n > 0)

    def split(self, cap):
        """Matched excess per sample up to the cap (per sample an episode
        holds) and above it, over N'."""
        c = cap * self.m_k
        return (np.minimum(self.m_ex, c).sum() / self.n_short,
                np.maximum(self.m_ex - c, 0).sum() / self.n_short)

    def after(self, rate):
        """After-effect per sample at the horizon of `rate`; NaN when no
        chunk lies beyond it (or the run has no episodes)."""
        h = min(HORIZON, 0.5e9 / rate)
        frm, to, chunks, exs = self.bins
        far = frm >= h
        if chunks[far].sum() < MIN_REFERENCE_CHUNKS or int(self.row["episodes"]) == 0:
            return np.nan
        ref = exs[far].sum() / chunks[far].sum()
        near = to <= h
        e_h = (exs[near] - chunks[near] * ref).sum()
        return e_h / int(self.row["episodes"]) * len(self.m_ex) / self.n_short


def b_exact(z, rate, cap):
    """What a periodic sampler at `rate` with a uniform phase matches on 0 Hz
    run z, per timestamp: (capped, above the cap), ns."""
    period = 1e9 / rate
    win = (z.end - z.start).astype(float) + 2 * SLACK
    long = z.ex >= LONG
    stamps = z.w / period - (win[long] / period).sum()
    p = np.minimum(1.0, win / period)[~long]
    c = cap * np.maximum(1.0, win / period)[~long]
    x = z.ex[~long]
    return (p * np.minimum(x, c)).sum() / stamps, (p * np.maximum(x - c, 0)).sum() / stamps


def b_drawn(z, rate, cap, rng):
    """The same, drawn: periodic timestamps from random phases, the distinct
    short episodes each replication matched (capped per timestamp held),
    over the timestamps outside long episodes."""
    period = 1e9 / rate
    reps = max(MIN_REPS, int(np.ceil(STAMPS / max(z.w * 1e-9 * rate, 1.0))))
    k = np.arange(int(z.w / period) + 2)
    excess, n = 0.0, 0
    for _ in range(reps):
        off = rng.random() * period + k * period
        t = z.lo + np.floor(off[off < z.w]).astype(np.int64)
        i = np.searchsorted(z.end + SLACK, t)  # first episode ending (with slack) at or after t
        ok = i < len(z.start)
        hit = np.zeros(len(t), dtype=bool)
        hit[ok] = z.start[i[ok]] - SLACK <= t[ok]
        m = i[hit]
        long = z.ex[m] >= LONG
        n += len(t) - int(long.sum())
        u, held = np.unique(m[~long], return_counts=True)
        excess += np.minimum(z.ex[u], cap * held).sum()
    return excess / n


def same(a, c):
    a, c = float(a), float(c)
    if np.isnan(a) or np.isnan(c):
        return np.isnan(a) and np.isnan(c)
    return abs(a - c) <= REL * max(abs(c), 1.0)


def num(s):
    return float(s) if s not in ("", None) else np.nan


def welch_t(parts):
    """The 95 % t of a sum or difference of independent estimates, each
    (se, n): Welch-Satterthwaite degrees of freedom (scipy's t)."""
    var = sum(se ** 2 for se, _ in parts)
    den = sum(se ** 4 / (n - 1) for se, n in parts) if all(n >= 2 for _, n in parts) else 0.0
    df = var ** 2 / den if den > 0 else np.inf
    return stats.t.ppf(0.975, df) if np.isfinite(df) else stats.norm.ppf(0.975)


def agreement(pred, paired, upper=False, n_pred=0, n_paired=0):
    """The report's word for the prediction next to the paired loss, both
    (value, lo, hi, se) from n_pred and n_paired runs; empty without a
    paired loss or prediction. They agree when the difference is within t
    combined se, t on the Welch-Satterthwaite degrees of freedom. Where the
    prediction is an upper estimate (the after-effect bound charged),
    one-sided: the paired loss must not lie above it by more than that."""
    if np.isnan(paired[0]) or np.isnan(pred[0]):
        return ""
    if not (np.isfinite(paired[1]) and np.isfinite(paired[2]) and (paired[1] > 0 or paired[2] < 0)):
        return "paired not resolved"
    if not np.isfinite(pred[3]):
        return "prediction has no interval (one run)"
    se = np.hypot(pred[3], paired[3])
    off = max(paired[0] - pred[0], 0.0) if upper else abs(pred[0] - paired[0])
    t = welch_t([(pred[3], n_pred), (paired[3], n_paired)])
    return "agree" if np.isfinite(se) and off <= t * se else "disagree"


def load(d):
    ok = last_rows(f"{d}/runs.csv", lambda r: r["run_id"])
    ok = {k: r for k, r in ok.items()
          if r["design"] == "gaps" and r["kind"] == "loss" and r["status"] == "ok"}
    configs = {(r.get("sample") or "", r.get("workload") or "") for r in ok.values() if int(r["freq_hz"]) > 0}
    if len(configs) > 1:
        sys.exit(f"{d}: gaps runs of {len(configs)} configurations; this script checks a set of one")
    tl = last_rows(f"{d}/timeline.csv", lambda r: r["run_id"])
    rec = {}
    for (rid, _), b in sorted(last_rows(f"{d}/recovery.csv", lambda r: (r["run_id"], int(r["bin"]))).items(),
                              key=lambda kv: (kv[0][0], kv[0][1])):
        rec.setdefault(rid, []).append(b)
    runs = []
    for rid, r in ok.items():
        if rid not in tl or rid not in rec:
            continue
        bins = tuple(np.array([float(b[c]) for b in rec[rid]]) for c in ("from_ns", "to_ns", "chunks", "excess_ns_sum"))
        x = Run(d, tl[rid], int(r["freq_hz"]), bins, r)
        if x.usable():
            runs.append(x)
    return runs


def compute(runs, rng, per_run_horizon=False):
    """Each frequency's columns (name -> value or (value, lo, hi, se))."""
    zero = [z for z in runs if z.freq == 0]
    if not zero:
        sys.exit("no usable 0 Hz gaps runs: the report computes no cost")
    zero_gap = np.mean([int(z.row["gap_time_ns"]) / z.w * 100 for z in zero])
    zero_long = np.mean([z.long_ex / z.w * 100 for z in zero])
    bg = np.concatenate([z.ex[z.ex < LONG] for z in zero])
    bg_cap = np.quantile(bg, CAP_QUANTILE) if len(bg) else np.inf
    rows = {}
    for f in sorted({x.freq for x in runs} - {0}):
        at = [x for x in runs if x.freq == f]
        rates = np.array([x.rate for x in at])
        rate = rates.mean()
        pooled = np.concatenate([x.m_ex for x in at])
        cap = max(bg_cap, CAP_MEDIAN_FACTOR * np.median(pooled)) if len(pooled) else bg_cap
        b_j = np.array([b_exact(z, rate, cap) for z in zero])
        b, b_above = t_interval(b_j[:, 0]), t_interval(b_j[:, 1])
        own = np.array([b_drawn(z, rate, cap, rng) for z in zero])
        loo = own - (b_j[:, 0].sum() - b_j[:, 0]) / (len(zero) - 1) if len(zero) > 1 else []
        split = np.array([x.split(cap) for x in at])
        matched_ps = split.sum(axis=1)
        direct = split[:, 0] - b[0]
        above = split[:, 1] - b_above[0]
        long = np.array([
            (max(x.long_ex - x.in_long * mps, 0) / x.raw_w * 100 - zero_long) / 100 * 1e9 / x.rate
            for x, mps in zip(at, matched_ps)])
        after = np.array([x.after(x.rate if per_run_horizon else rate) for x in at])
        rows[f] = dict(
            runs=len(at), achieved_hz=rate, samples=sum(x.n for x in at),
            samples_in_long=sum(x.in_long for x in at),
            recovery_horizon_ns=min(HORIZON, 0.5e9 / rate),
            matched_episodes=len(pooled),
            matched_median_ns=np.median(pooled) if len(pooled) else np.nan,
            matched_mean_ns=pooled.mean() if len(pooled) else np.nan,
            matched_p99_ns=np.quantile(pooled, 0.99) if len(pooled) else np.nan,
            matched_mean_by_run_ns=t_interval([x.m_ex.mean() for x in at if len(x.m_ex)]),
            background_ns=b, cap_ns=cap,
            above_cap_ns=t_interval(above),
            long_per_s=t_interval([x.long_n / (x.raw_w * 1e-9) for x in at]),
            long_ns=t_interval(long),
            direct_ns=t_interval(direct),
            after_effect_ns=t_interval(after),
            excess_gap_share_pct=t_interval([int(x.row["gap_time_ns"]) / x.w * 100 - zero_gap for x in at]),
            _aa=t_interval(loo) if len(loo) else None,
            _parts=(rates, direct, above, long, after),
        )
    # Rates that measured their after-effect bound those that could not.
    hi = [r["after_effect_ns"][2] for r in rows.values()]
    bound = max([0.0] + [h for h in hi if np.isfinite(h)])
    for r in rows.values():
        rates, direct, above, long, after = r.pop("_parts")
        r["above_cap_charged"] = bool(r["above_cap_ns"][1] > 0)
        r["long_charged"] = bool(r["long_ns"][1] > 0)
        unmeasured = ~np.isfinite(after)
        r["after_effect_bound_ns"] = bound if unmeasured.any() else np.nan
        charged = np.where(unmeasured, np.clip(np.minimum(bound, 1e9 / rates - direct), 0, None), after)
        total = (direct + charged + (above if r["above_cap_charged"] else 0)
                 + (long if r["long_charged"] else 0))
        r["total_ns"] = t_interval(total)
        r["total_pred_ns"] = t_prediction(total)
        r["predicted_loss_pct"] = t_interval(rates * total * 1e-7)
        r["predicted_direct_loss_pct"] = t_interval(rates * (total - charged) * 1e-7)
    return rows


EST = ("matched_mean_by_run_ns", "background_ns", "above_cap_ns", "long_per_s", "long_ns",
       "direct_ns", "after_effect_ns", "total_ns", "total_pred_ns", "predicted_loss_pct",
       "excess_gap_share_pct", "predicted_direct_loss_pct")
SCALARS = ("runs", "achieved_hz", "samples", "samples_in_long", "recovery_horizon_ns",
           "matched_episodes", "matched_median_ns", "matched_mean_ns", "matched_p99_ns",
           "after_effect_bound_ns", "cap_ns")


def est_cols(name):
    base, unit = name.rsplit("_", 1)
    return name, f"{base}_lo_{unit}", f"{base}_hi_{unit}", f"{base}_se_{unit}"


def fmt(e):
    return f"{e[0]:.6g} [{e[1]:.6g}, {e[2]:.6g}]"


def main():
    per_run_horizon = "--per-run-horizon" in sys.argv[1:]
    args = [a for a in sys.argv[1:] if a != "--per-run-horizon"]
    if len(args) != 1:
        sys.exit(__doc__)
    d = args[0]
    report = {int(r["freq_hz"]): r for r in csv.DictReader(open(f"{d}/report/per_sample.csv"))}
    # The paired loss's runs per rate (its interval is over runs).
    paired_runs = {int(r["freq_hz"]): int(r["n_runs"])
                   for r in csv.DictReader(open(f"{d}/report/loss.csv"))
                   if r["design"] == "paired" and r.get("n_runs", "") not in ("", None)}
    rows = compute(load(d), np.random.default_rng(2014), per_run_horizon)
    bad = 0
    if set(rows) != set(report):
        print(f"frequencies here {sorted(rows)}, in the report {sorted(report)}")
        bad += 1
    missing = [c for c in ("cap_ns", "above_cap_ns") if report and c not in next(iter(report.values()))]
    if missing:
        print(f"report/per_sample.csv lacks {', '.join(missing)}: made by an analysis before the cap "
              "(regenerate it with `analysis report` on a copy of the set); comparing what it has")
    for f in sorted(set(rows) & set(report)):
        r, rep = rows[f], report[f]
        diffs, checked = [], 0
        for name in SCALARS + ("above_cap_charged", "long_charged", "remainder_ns", "agreement") + EST:
            if name in EST:
                pairs = [(c, v) for c, v in zip(est_cols(name), r[name]) if c in rep]
            elif name in ("above_cap_charged", "long_charged"):
                if name in rep:
                    checked += 1
                    if str(r[name]).lower() != rep[name]:
                        diffs.append(f"{name} {str(r[name]).lower()} != {rep[name]}")
                continue
            elif name == "remainder_ns":
                if name not in rep:
                    continue
                x = num(rep["interrupt_ns"])
                x = num(rep["handler_ns"]) if np.isnan(x) else x
                pairs = [(name, r["direct_ns"][0] - x)]
            elif name == "agreement":
                if name not in rep or "paired_loss_pct" not in rep:
                    continue
                paired = tuple(num(rep[c]) for c in est_cols("paired_loss_pct"))
                upper = not np.isnan(num(rep.get("after_effect_bound_ns", "")))
                word = agreement(r["predicted_loss_pct"], paired, upper,
                                 int(rep["runs"]), paired_runs.get(f, 0))
                checked += 1
                if word != rep[name]:
                    diffs.append(f"agreement {word!r} != {rep[name]!r}")
                continue
            else:
                pairs = [(name, r[name])] if name in rep else []
            for c, v in pairs:
                checked += 1
                if not same(v, num(rep[c])):
                    diffs.append(f"{c} {v:.10g} != {rep[c] or 'empty'}")
        bad += len(diffs)
        line = [f"{f} Hz: {checked} columns", f"cap {r['cap_ns']:.0f}", f"b {fmt(r['background_ns'])}",
                f"direct {fmt(r['direct_ns'])}"]
        if np.isnan(r["after_effect_bound_ns"]):
            line.append(f"after-effect {fmt(r['after_effect_ns'])}")
        else:
            line.append(f"after-effect not measurable, bound {r['after_effect_bound_ns']:.6g}")
        line += [f"total {fmt(r['total_ns'])}", f"loss {fmt(r['predicted_loss_pct'])} %"]
        line.append("all =" if not diffs else "DIFFERENT: " + "; ".join(diffs))
        aa = r["_aa"]
        if aa is not None and "aa_null_ns" in rep:
            lo, hi = num(rep["aa_null_lo_ns"]), num(rep["aa_null_hi_ns"])
            inside = lo <= aa[0] <= hi
            bad += not inside
            line.append(f"A/A drawn here {aa[0]:.3g} vs report {num(rep['aa_null_ns']):.3g} "
                        f"[{lo:.3g}, {hi:.3g}] {'inside' if inside else 'OUTSIDE'}")
        print("; ".join(line))
    print("all equal" if bad == 0 else f"{bad} differences")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
