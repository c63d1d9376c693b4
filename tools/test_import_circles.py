#!/usr/bin/env python3
"""The circle checker (tools/import-circles.py) on small fixture crates: a
parent that reaches its child by a relative path (`use row::fill;`) while
the child reaches back by `super::` is a circle (the checker before
2026-11-27 missed it); `self::row::x` is the same; a child importing its
ancestor alone is not; a leaf child is not. Usage:
    python3 tools/test_import_circles.py [CHECKER]
Prints 'N passed, N failed' and exits non-zero on a failure."""
import os, subprocess, sys, tempfile

checker = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "import-circles.py")

def crate(files):
    root = tempfile.mkdtemp()
    os.makedirs(os.path.join(root, "k", "src"))
    open(os.path.join(root, "k", "Cargo.toml"), "w").write("[package]\nname = \"k\"\n")
    for path, text in files.items():
        p = os.path.join(root, "k", "src", path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        open(p, "w").write(text)
    return root

def circles(files):
    out = subprocess.run([sys.executable, checker, crate(files)], capture_output=True, text=True).stdout
    return int(out.strip().splitlines()[-1].split(":")[1])

cases = [
    # config.rs -> config/resolve.rs (its own child, by a relative path)
    # -> plan.rs -> config.rs: the circle the old checker missed.
    ("a parent's `use child::` closes a circle through another module", 1, {
        "lib.rs": "pub mod config;\npub mod plan;\n",
        "config.rs": "mod resolve;\npub use resolve::check;\npub struct Opts;\n",
        "config/resolve.rs": "pub fn check() { crate::plan::build() }\n",
        "plan.rs": "use crate::config::Opts;\npub fn build() {}\n",
    }),
    ("`self::child::` counts too", 1, {
        "lib.rs": "pub mod config;\npub mod plan;\n",
        "config.rs": "mod resolve;\npub fn run() { self::resolve::check() }\npub struct Opts;\n",
        "config/resolve.rs": "pub fn check() { crate::plan::build() }\n",
        "plan.rs": "use crate::config::Opts;\npub fn build() {}\n",
    }),
    ("a child importing its ancestor alone is no circle", 0, {
        "lib.rs": "pub mod exec;\n",
        "exec.rs": "mod row;\nuse row::fill;\npub fn opens() {}\n",
        "exec/row.rs": "pub fn fill() { super::opens() }\n",
    }),
    ("the fix: the count moved to a leaf child of plan", 0, {
        "lib.rs": "pub mod config;\npub mod plan;\n",
        "config.rs": "mod resolve;\npub use resolve::check;\npub struct Opts;\n",
        "config/resolve.rs": "pub fn check() { crate::plan::block::block() }\n",
        "plan.rs": "pub mod block;\nuse crate::config::Opts;\npub fn build() { block::block() }\n",
        "plan/block.rs": "pub fn block() {}\n",
    }),
    ("two files through crate:: paths are a circle", 1, {
        "lib.rs": "pub mod a;\npub mod b;\n",
        "a.rs": "pub fn f() { crate::b::g() }\n",
        "b.rs": "pub fn g() { crate::a::f() }\n",
    }),
]
passed = failed = 0
for what, want, files in cases:
    got = circles(files)
    if got == want:
        passed += 1
        print(f"PASS: {what}")
    else:
        failed += 1
        print(f"FAIL: {what}: {got} circles, expected {want}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
