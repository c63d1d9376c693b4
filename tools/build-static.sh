#!/usr/bin/env bash
# Build one self-contained driver file to copy onto hosts that have no Rust
# toolchain, perf or Python (deploy/README.md).
#
# glibc static linking (`+crt-static`), not musl: no musl target is installed
# here and none can be fetched. A static glibc binary references no GLIBC_*
# symbol versions at all, so it runs on any x86_64 Linux kernel the driver
# supports, whatever the host's glibc. glibc warns at link time about
# getpwnam & co. (NSS would load shared objects at run time); the driver
# resolves no user or host names, so those warnings are harmless.
#
# `--target` is named explicitly so RUSTFLAGS reach only the target crates,
# not build scripts and proc-macros (which must stay dynamic), and so the
# output lands in $CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release/ without
# disturbing the normal release build.
#
# Usage: tools/build-static.sh        prints the path of the stripped binary
#                                     ($CARGO_TARGET_DIR/dist/driver) last.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/perf-overhead/target}"
target=x86_64-unknown-linux-gnu

RUSTFLAGS='-C target-feature=+crt-static' \
    cargo build --release --locked -p driver --target "$target"

built="$CARGO_TARGET_DIR/$target/release/driver"
dist="$CARGO_TARGET_DIR/dist"
mkdir -p "$dist"
# strip to a temp name, then rename: a reader never sees half a file.
strip -o "$dist/driver.tmp" "$built"
mv -f "$dist/driver.tmp" "$dist/driver"
out="$dist/driver"

echo "== size"
stat -c '%s bytes' "$out"
numfmt --to=iec-i --suffix=B "$(stat -c %s "$out")"
echo "== file"
file "$out"
echo "== ldd"
# ldd exits 1 on a static binary ("not a dynamic executable"): not an error.
ldd "$out" 2>&1 || true
echo "== highest GLIBC symbol version referenced"
versions=$(objdump -T "$out" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV || true)
if [ -z "$versions" ]; then
    echo "none (no dynamic symbol table: statically linked)"
else
    echo "$versions" | tail -1
fi
echo "== binary"
echo "$out"
