#!/usr/bin/env bash
# Build the netcfg .deb from a clean copy of the work tree, as a fresh machine
# would: only the files git tracks or would track (no .venv, no built .so, no
# Rust target/), with Debian's toolchain only (PATH without rustup or pyenv).
#
# dpkg-buildpackage writes its outputs next to the source directory and its
# clean step deletes caches (.pytest_cache, __pycache__) across the tree, so
# it runs in a copy under $OUT, never in the work tree itself.
#
#   tests/deb/build-deb.sh [OUT]      (default .cache/deb; prints the .deb path)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(realpath -m "${1:-$root/.cache/deb}")
version=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
src=$out/src/netcfg-$version

rm -rf "$out/src"
mkdir -p "$src" "$out/cargo-home"
# Tracked and not-ignored files that exist (a file deleted but still tracked
# is skipped).
( cd "$root" && git ls-files -z -co --exclude-standard ) |
    ( cd "$root" && while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done ) |
    tar -C "$root" --null -T - -cf - | tar -C "$src" -xf -
# NETCFG_DEB_FROM_HEAD="PATH..." takes those paths as committed instead (to
# package the rest while someone's edit of, say, daemon/dataplane is half done).
for path in ${NETCFG_DEB_FROM_HEAD:-}; do
    rm -rf "${src:?}/$path"
    ( cd "$root" && git archive HEAD -- "$path" ) | tar -C "$src" -xf -
done

# CARGO_HOME outside the copy keeps downloaded crates between builds.
cd "$src"
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="${HOME:-/root}" LANG=C.UTF-8 \
    CARGO_HOME="$out/cargo-home" DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-}" \
    ${NETCFG_CARGO_LOCKED+NETCFG_CARGO_LOCKED="$NETCFG_CARGO_LOCKED"} \
    dpkg-buildpackage -us -uc -b >&2

rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
arch=$(dpkg --print-architecture)
echo "$out/netcfg_${version}_${arch}.deb"
