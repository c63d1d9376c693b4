"""The raw Parquet files of a results directory, in either stored form
(docs/results-format.md): the current one stores each timestamp and
episode index as its step from the row before (`X_step_ns`, `episode_step`,
and a gap's end as `length_ns`); the earlier one (sets before 2026-11-26)
stores them as they are. Written independently of the Rust reader: numpy's
cumsum undoes the steps."""

import numpy as np
import pyarrow.parquet as pq


def _cumsum(col):
    # The steps wrap in 64 bits; numpy's int64 cumsum wraps the same way.
    return np.cumsum(np.asarray(col, dtype=np.int64), dtype=np.int64)


def gaps(d, rid):
    """(start_ns, end_ns, excess_ns, episode) arrays of gaps/run-<rid>."""
    t = pq.read_table(f"{d}/gaps/run-{rid}.parquet")
    if "start_step_ns" in t.column_names:
        start = _cumsum(t["start_step_ns"])
        end = start + np.asarray(t["length_ns"], dtype=np.int64)
        episode = _cumsum(t["episode_step"])
    else:
        start = np.asarray(t["start_ns"], dtype=np.int64)
        end = np.asarray(t["end_ns"], dtype=np.int64)
        episode = np.asarray(t["episode"], dtype=np.int64)
    return start, end, np.asarray(t["excess_ns"], dtype=np.int64), episode


def sample_episodes(d, rid):
    """The episode of each sample of samples/run-<rid> (-1: none)."""
    t = pq.read_table(f"{d}/samples/run-{rid}.parquet")
    if "episode_step" in t.column_names:
        return _cumsum(t["episode_step"])
    return np.asarray(t["episode"], dtype=np.int64)
