"""What nginx_latency.py and split_injector.py share: stopping a process
group they started, and the t interval over blocks (scipy)."""
import os
import signal
import subprocess

import numpy as np
from scipy import stats


def stop_group(proc):
    """SIGTERM to the process group of `proc` (started with
    start_new_session), SIGKILL after 10 s; reaped."""
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def t_interval(x):
    """Mean, 95 % t interval (lo, hi) and standard error of `x`; the
    interval and error are NaN for fewer than two values."""
    x = np.asarray(x, dtype=float)
    m = float(np.mean(x))
    if len(x) < 2:
        return m, float("nan"), float("nan"), float("nan")
    se = float(np.std(x, ddof=1) / np.sqrt(len(x)))
    h = float(stats.t.ppf(0.975, len(x) - 1)) * se
    return m, m - h, m + h, se
