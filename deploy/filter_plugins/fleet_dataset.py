"""Jinja filters for deploy/fleet.yml: what the fleet dataset already holds.

They run on the controller, where the dataset lives (docs/results-format.md, "A
fleet dataset"). A set counts as complete when its folder holds
summary.parquet, or a manifest.json whose top-level `status` is `complete`
(docs/results-format.md). Folders named `.partial-*` (a fetch under way or
cut off) and anything unreadable never count: a damaged manifest makes the
host measurable again, it never stops the play.
"""

import json
import os


def fleet_complete_sets(host_dir):
    """Names of the complete result sets in HOST_DIR (host=H/date=D), sorted."""
    try:
        names = os.listdir(host_dir)
    except OSError:
        return []
    sets = []
    for name in sorted(names):
        path = os.path.join(host_dir, name)
        if name.startswith(".") or not os.path.isdir(path):
            continue
        if os.path.isfile(os.path.join(path, "summary.parquet")):
            sets.append(name)
            continue
        try:
            with open(os.path.join(path, "manifest.json"), encoding="utf-8") as f:
                manifest = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(manifest, dict) and manifest.get("status") == "complete":
            sets.append(name)
    return sets


def fleet_manifest_status(set_dir):
    """The top-level `status` of SET_DIR/manifest.json, or '' if unreadable."""
    try:
        with open(os.path.join(set_dir, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return ""
    status = manifest.get("status") if isinstance(manifest, dict) else None
    return status if isinstance(status, str) else ""


def fleet_unfetched(remote_set_dirs, host_root):
    """Those of REMOTE_SET_DIRS (set folders on a host) whose set is not yet
    in the dataset under HOST_ROOT (host=H/date=*/<set name>/), sorted.

    A set an interrupted play left on the host is fetched by the next run,
    but never twice: if the rename into the dataset happened and only the
    host's cleanup was cut off, the set is already there (under any date).
    """
    fetched = set()
    try:
        for date_dir in os.listdir(host_root):
            path = os.path.join(host_root, date_dir)
            if date_dir.startswith("date=") and os.path.isdir(path):
                fetched.update(os.listdir(path))
    except OSError:
        pass
    return sorted(d for d in remote_set_dirs if os.path.basename(d.rstrip("/")) not in fetched)


class FilterModule:
    def filters(self):
        return {
            "fleet_complete_sets": fleet_complete_sets,
            "fleet_manifest_status": fleet_manifest_status,
            "fleet_unfetched": fleet_unfetched,
        }
