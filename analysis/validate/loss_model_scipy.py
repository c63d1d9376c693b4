#!/usr/bin/env python3
"""The loss model of `analysis recommend` refitted with statsmodels and scipy
from a report's CSVs, to 1e-6.

    python3 analysis/validate/loss_model_scipy.py DIR [DIR ...]

Each DIR is a results directory whose report/ holds loss_model.json
(`analysis report DIR` writes it where a gaps design has a cost per
sample). For each:

1. the evidence points are rebuilt from report/per_sample.csv,
   report/cost_by_run.csv, report/loss.csv and report/split.csv
   (docs/methodology.md,
   "Recommendation: one model of the loss"): paired total minus the gaps
   term; the long episodes' extra time over the 0 Hz runs; split outside
   the gaps within runs, and against the 0 Hz runs, times the time outside
   the gaps, less the after-effect; rates above 50 % total loss left out;
2. each class's slope is refitted (through the origin within runs; with
   an intercept per source of three or more rates between runs):
   DerSimonian-Laird tau^2 for a meta-regression from a fixed-effect
   statsmodels WLS, the random-effects WLS, the Knapp-Hartung factor,
   Satterthwaite degrees of freedom otherwise; Holm over the classes
   (statsmodels multipletests), each class tested one-sided against the
   materiality margin (5 % of the paired and split totals' cost per
   sample, refitted here); the heterogeneity t test (scipy) and the term
   (the resolved class with the larger upper bound);
3. every figure is compared with loss_model.json, and the highest rate
   within 0.1, 1 and 5 % on the model's curve with summary.parquet's
   budget_*_max_hz.

Pass: every figure to 1e-6 (relative, or absolute below 1e-6). Prints one
line per set and exits 1 on any difference.
"""
import json
import math
import pathlib
import sys

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.multitest import multipletests

LINEAR_LOSS_MAX_PCT = 50.0
ALPHA = 0.05
MATERIAL_SHARE = 0.05


def se_of(value, lo, hi, n, se):
    hw = 0.5 * (hi - lo)
    if n >= 2 and math.isfinite(hw):
        return hw / stats.t.ppf(0.975, n - 1)
    return se


def part(r, name, which):
    """`total_ns`'s `lo` is column `total_lo_ns` (value, lo, hi, se)."""
    base, unit = name.rsplit("_", 1)
    return r[f"{base}_{which}_{unit}"]


def est(r, name, n):
    """value and the standard error behind a CSV estimate's interval."""
    return r[name], se_of(r[name], part(r, name, "lo"), part(r, name, "hi"), n, part(r, name, "se"))


def num(x):
    return float("nan") if x is None or (isinstance(x, str) and x == "") else float(x)


def evidence(report, model):
    """The points, rebuilt from the CSVs; n where no CSV holds it from the
    JSON (split's blocks)."""
    ps = pd.read_csv(report / "per_sample.csv")
    runs = pd.read_csv(report / "cost_by_run.csv")
    json_n = {(e["source"], e["freq_hz"]): e["n"] for e in model["evidence"]}
    pts = []
    loss = pd.read_csv(report / "loss.csv") if (report / "loss.csv").exists() else None
    for _, r in ps.iterrows():
        if not (math.isfinite(part(r, "total_pred_ns", "lo")) and math.isfinite(part(r, "total_pred_ns", "hi"))):
            continue
        if loss is None or not math.isfinite(r.total_ns):
            continue
        p = loss[(loss.design == "paired") & (loss.freq_hz == r.freq_hz)]
        if p.empty:
            continue
        p = p.iloc[0]
        by_run = math.isfinite(num(p.loss_lo_by_run_pct)) and math.isfinite(num(p.loss_hi_by_run_pct))
        lo, hi, n = ((p.loss_lo_by_run_pct, p.loss_hi_by_run_pct, int(p.n_runs)) if by_run
                     else (p.loss_lo_pct, p.loss_hi_pct, int(p.n)))
        # The interval over runs is a t interval around the mean of the
        # runs' losses (its midpoint), which loss.csv does not list apart.
        value = 0.5 * (lo + hi) if by_run else p.loss_pct
        if not value <= LINEAR_LOSS_MAX_PCT:
            continue
        rate = p.achieved_hz if p.achieved_hz > 0 else r.achieved_hz
        # The gaps term: each run's total less its long episodes where the
        # table charged them (cost_by_run.csv), mean and t standard error.
        tot = runs[runs.freq_hz == r.freq_hz]
        tot = (tot.total_ns - (tot.long_ns if r.long_charged else 0.0)).to_numpy()
        g_mean = float(tot.mean())
        g_se = float(tot.std(ddof=1) / math.sqrt(len(tot))) if len(tot) >= 2 else float("nan")
        model_pct = rate * g_mean * 1e-7
        model_se = rate * g_se * 1e-7
        pts.append(dict(source="paired", freq_hz=int(r.freq_hz), achieved_hz=rate,
                        excess_pct=value - model_pct,
                        se_pct=math.hypot(se_of(value, lo, hi, n, float("nan")), model_se), n=n))
    for _, r in ps.iterrows():
        if not (math.isfinite(part(r, "total_pred_ns", "lo")) and math.isfinite(part(r, "total_pred_ns", "hi"))):
            continue
        if not math.isfinite(r.long_ns) or not r.predicted_loss_pct <= LINEAR_LOSS_MAX_PCT:
            continue
        v, s = est(r, "long_ns", int(r.runs))
        pts.append(dict(source="long_episodes", freq_hz=int(r.freq_hz), achieved_hz=r.achieved_hz,
                        excess_pct=r.achieved_hz * v * 1e-7, se_pct=r.achieved_hz * s * 1e-7, n=int(r.runs)))
    split_csv = report / "split.csv"
    if split_csv.exists():
        sp = pd.read_csv(split_csv)
        for _, r in sp[sp.freq_hz > 0].iterrows():
            if not r.total_pct <= LINEAR_LOSS_MAX_PCT:
                continue
            g = ps[ps.freq_hz == r.freq_hz]
            if g.empty:
                continue
            g = g.iloc[0]
            if math.isfinite(num(g.after_effect_bound_ns)):
                after, after_se = g.after_effect_bound_ns, 0.0
            elif math.isfinite(g.after_effect_ns):
                after, s = est(g, "after_effect_ns", int(g.runs))
                after_se = s if math.isfinite(s) and s > 0 else 0.0
            else:
                continue
            rate = r.achieved_hz if r.achieved_hz > 0 else r.freq_hz
            # A loss of speed outside the gaps, to the total loss's scale.
            scale = 1 - r.in_gaps_pct / 100
            if not (math.isfinite(scale) and scale > 0):
                continue
            for source, col in (("split", "outside_pct"), ("split_vs_zero", "outside_vs_zero_pct")):
                n = int(r.runs) if source == "split" else json_n.get((source, int(r.freq_hz)), 0)
                e_se = est(r, col, n)[1]
                pts.append(dict(source=source, freq_hz=int(r.freq_hz), achieved_hz=rate,
                                excess_pct=r[col] * scale - rate * after * 1e-7,
                                se_pct=math.hypot(e_se * scale, rate * after_se * 1e-7), n=n))
    ok = [p for p in pts if all(math.isfinite(p[k]) for k in ("excess_pct", "se_pct"))
          and p["se_pct"] > 0 and p["achieved_hz"] > 0]
    return ok


def material_ns(report):
    """The materiality margin: 5 % of the slope through the origin (weights
    1 / se^2) of the paired loss and the split total against the rate, over
    the rates at or below 50 % loss; 0 where neither design ran."""
    xs = []
    if (report / "loss.csv").exists():
        loss = pd.read_csv(report / "loss.csv")
        for _, p in loss[(loss.design == "paired") & (loss.freq_hz > 0)].iterrows():
            by_run = math.isfinite(num(p.loss_lo_by_run_pct)) and math.isfinite(num(p.loss_hi_by_run_pct))
            lo, hi, n = ((p.loss_lo_by_run_pct, p.loss_hi_by_run_pct, int(p.n_runs)) if by_run
                         else (p.loss_lo_pct, p.loss_hi_pct, int(p.n)))
            value = 0.5 * (lo + hi) if by_run else p.loss_pct
            xs.append((p.achieved_hz, value, se_of(value, lo, hi, n, float("nan"))))
    if (report / "split.csv").exists():
        sp = pd.read_csv(report / "split.csv")
        for _, r in sp[sp.freq_hz > 0].iterrows():
            v, se = est(r, "total_pct", int(r.runs))
            xs.append((r.achieved_hz, v, se))
    sxx = sxy = 0.0
    for rate, v, se in xs:
        x = rate * 1e-7
        if not (v <= LINEAR_LOSS_MAX_PCT and x > 0 and math.isfinite(se) and se > 0):
            continue
        sxx += x * x / se ** 2
        sxy += x * v / se ** 2
    return MATERIAL_SHARE * max(0.0, sxy / sxx) if sxx > 0 else 0.0


def design(cls, pts):
    """The dose, and for the between-run class an intercept per source with
    three or more rates (its 0 Hz reference is common to all its rates)."""
    cols = [[p["achieved_hz"] * 1e-7 for p in pts]]
    if cls == "between_runs":
        for s in ("split_vs_zero", "long_episodes"):
            if sum(p["source"] == s for p in pts) >= 3:
                cols.append([1.0 if p["source"] == s else 0.0 for p in pts])
    return np.array(cols).T


def fit_class(cls, pts, margin):
    X = design(cls, pts)
    y = np.array([p["excess_pct"] for p in pts])
    v = np.array([p["se_pct"] ** 2 for p in pts])
    own_df = np.array([max(p["n"], 2) - 1 for p in pts], dtype=float)
    n, k = X.shape
    fe = sm.WLS(y, X, weights=1 / v).fit()
    tau2 = 0.0
    if n - k >= 1:
        w = 1 / v
        q = float(np.sum(w * fe.resid ** 2))
        inv = np.linalg.inv(X.T @ (w[:, None] * X))
        c = w.sum() - np.trace(inv @ (X.T @ ((w ** 2)[:, None] * X)))
        tau2 = max(0.0, (q - (n - k)) / c) if c > 0 else 0.0
    ws = 1 / (v + tau2)
    re = sm.WLS(y, X, weights=ws).fit()
    b = float(re.params[0])
    inv = np.linalg.inv(X.T @ (ws[:, None] * X))
    se_re = math.sqrt(inv[0, 0])
    scale = float(np.sum(ws * re.resid ** 2) / (n - k)) if n - k >= 1 else 0.0
    if tau2 > 0 or scale > 1:
        se, df = se_re * math.sqrt(max(1.0, scale)), float(n - k)
    else:
        c_i = (inv @ (X.T * ws))[0]
        parts = c_i ** 2 * v
        den = np.sum(parts ** 2 / own_df)
        se, df = se_re, (parts.sum() ** 2 / den if den > 0 else own_df[0])
    h = stats.t.ppf(0.975, df) * se
    return dict(value=b, lo=b - h, hi=b + h, se=se, df=df, tau2=tau2, p=float(stats.t.sf((b - margin) / se, df)))


def close(a, b, what, errs):
    if a is None or b is None:
        if not (a is None and b is None):
            errs.append(f"{what}: {a} vs {b}")
        return
    if math.isnan(a) and math.isnan(b):
        return
    if not (abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))):
        errs.append(f"{what}: {a!r} vs {b!r}")


def max_rate(points, budget):
    """The search's highest rate (docs/methodology.md): the largest upper bound at
    or below a rate charged there."""
    fs = [p[0] for p in points]
    def at(r):
        g = points[0][1]
        for f, hi in points:
            if f <= r:
                g = max(g, hi)
        return g
    for k, f in enumerate(fs):
        start = 0.0 if k == 0 else f
        c = at(f)
        rb = budget / (c * 1e-7) if c > 0 else math.inf
        if rb < start:
            return start
        if k == len(fs) - 1:
            return min(rb, f)
        if rb < fs[k + 1]:
            return rb
    return 0.0


def check(d):
    report = d / "report"
    model = json.loads((report / "loss_model.json").read_text())
    errs = []
    pts = evidence(report, model)
    js = model["evidence"]
    key = lambda p: (p["source"], p["freq_hz"])
    if sorted(map(key, pts)) != sorted(map(key, js)):
        errs.append(f"points differ: {sorted(map(key, pts))} vs {sorted(map(key, js))}")
    else:
        mine = {key(p): p for p in pts}
        for e in js:
            for k in ("achieved_hz", "excess_pct", "se_pct"):
                close(mine[key(e)][k], e[k], f"{key(e)} {k}", errs)
    classes = {"within_runs": ("paired", "split"), "between_runs": ("split_vs_zero", "long_episodes")}
    margin = material_ns(report)
    close(margin, model["material_ns"], "materiality margin", errs)
    fits = {c: fit_class(c, [p for p in js if p["source"] in s], margin) for c, s in classes.items()
            if any(p["source"] in s for p in js)}
    for f in fits.values():
        pass
    names = list(fits)
    if names:
        holm = multipletests([fits[c]["p"] for c in names], method="holm")[1]
        for c, ph in zip(names, holm):
            fits[c]["p_holm"] = float(ph)
    jf = {f["class"]: f for f in model["fits"]}
    if sorted(jf) != sorted(fits):
        errs.append(f"classes {sorted(jf)} vs {sorted(fits)}")
    for c, f in fits.items():
        if c not in jf:
            continue
        g = jf[c]
        for k in ("value", "lo", "hi", "se"):
            close(f[k], g["cost_ns"][k], f"{c} {k}", errs)
        for k in ("df", "tau2", "p", "p_holm"):
            close(f[k], g[k], f"{c} {k}", errs)
    het = None
    if len(fits) == 2:
        a, b = fits["within_runs"], fits["between_runs"]
        t = abs(a["value"] - b["value"]) / math.hypot(a["se"], b["se"])
        het = float(2 * stats.t.sf(t, min(a["df"], b["df"])))
        close(het, model["heterogeneity_p"], "heterogeneity p", errs)
    resolved = [c for c in names if fits[c]["p_holm"] < ALPHA]
    term = None
    if resolved:
        # The resolved class with the larger upper bound (never pooled).
        c = max(resolved, key=lambda c: fits[c]["hi"])
        term = (fits[c]["value"], fits[c]["hi"] - fits[c]["value"])
    jo = model["outside"]
    if (term is None) != (jo is None):
        errs.append(f"outside term: {term} vs {jo}")
    elif term is not None:
        close(term[0], jo["cost_ns"]["value"], "outside value", errs)
        close(term[0] + term[1], jo["cost_ns"]["hi"], "outside hi", errs)
    # The curve and the rates within budget, against summary.parquet.
    gaps = [(p["freq_hz"], p["cost_ns"]["value"], p["cost_ns"]["hi"]) for p in model["gaps"]]
    pts_hi = [(f, (v + term[0] + math.hypot(hi - v, term[1])) if term else hi) for f, v, hi in gaps]
    summ = d / "summary.parquet"
    if summ.exists():
        s = pd.read_parquet(summ)
        s = s[s.config_primary] if "config_primary" in s else s
        for b, col in ((0.1, "budget_0p1_max_hz"), (1.0, "budget_1_max_hz"), (5.0, "budget_5_max_hz")):
            if col in s and s[col].notna().any():
                close(max_rate(pts_hi, b), float(s[col].dropna().iloc[0]), f"{col}", errs)
    return errs, len(js), term


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    bad = 0
    for arg in sys.argv[1:]:
        d = pathlib.Path(arg)
        if not (d / "report" / "loss_model.json").exists():
            print(f"skip {d}: no report/loss_model.json (no gaps term)")
            continue
        errs, n, term = check(d)
        charged = "none" if term is None else f"{term[0]:.0f} ns +- {term[1]:.0f}"
        if errs:
            bad += 1
            print(f"DIFF {d}: {n} points; " + "; ".join(errs[:6]))
        else:
            print(f"same {d}: {n} points, outside term {charged}, every figure to 1e-6")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
