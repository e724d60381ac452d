#!/usr/bin/env bash
# `make test-deb`: build the .deb from a clean copy of the tree, lint it, then
# install it into a debootstrapped bookworm and boot that under qemu
# (tests/deb/run.sh; systemd-analyze verify runs there, against the unit as
# installed). Prints how long each stage took.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/.cache/deb
mkdir -p "$root/.cache"   # a fresh clone has none when test-deb runs alone
t0=$SECONDS
stage() { echo "== $1 (t+$((SECONDS - t0)) s)"; }

stage "build"
deb=$("$root/tests/deb/build-deb.sh" "$out" 2> "$out.build.log") \
    || { tail -40 "$out.build.log"; echo "test-deb: the package build failed (log: $out.build.log)"; exit 1; }
echo "$deb (build log: $out.build.log)"

stage "lintian"
changes=${deb%.deb}.changes
# Errors fail the test; warnings are listed and each is justified in docs/debian.md.
lintian --profile debian --pedantic --info "$changes" | tee "$out/lintian.log" | grep -E '^[EWIP]:' || true
if grep -q '^E:' "$out/lintian.log"; then
    echo "test-deb: lintian reports errors"; exit 1
fi

stage "booted system test"
"$root/tests/deb/run.sh" "$deb" "$out/src/$(basename "$deb" | cut -d_ -f1)-$(basename "$deb" | cut -d_ -f2)"
stage "done"
