#!/usr/bin/env bash
# Build (or reuse) a Debian bookworm root filesystem for the booted-package test
# and print the path of its cached tarball.
#
# The tarball is keyed by the suite, the package list and this script, so a
# rerun with nothing changed unpacks a cache instead of running debootstrap
# again (cold: ~4-6 min on 2 cores; warm: seconds). The netcfg .deb is NOT in
# it: tests/deb/run.sh installs the fresh .deb on top of an unpacked copy.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${NETCFG_DEB_CACHE:-$here/../../.cache/deb-test}
suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# systemd as PID 1 with udev (device units for /dev/ttyS0 and the root disk),
# iproute2 to read the network back, and netcfg's Debian dependencies so that
# installing the .deb needs no download in the common case.
# python3-pytest and python3-hypothesis are the autopkgtest tiers', iputils-ping
# the kernel tier's.
packages=(systemd systemd-sysv udev dbus kmod iproute2 procps iputils-ping
          python3 python3-mako python3-jsonschema python3-systemd python3-pyroute2
          python3-pytest python3-hypothesis)

key=$( { echo "$suite $mirror ${packages[*]}"; cat "$0"; } | sha256sum | cut -c1-16)
tarball=$cache/rootfs-$suite-$key.tar
if [ -s "$tarball" ]; then
    echo "$tarball"
    exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/debootstrap.XXXXXX")
# Always unmount anything debootstrap left mounted in the chroot before removal.
cleanup() {
    for m in proc sys dev/pts dev; do umount -l "$work/$m" 2>/dev/null || true; done
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT

echo "mkrootfs: debootstrap $suite into $work (cold path: several minutes)" >&2
include=$(IFS=,; echo "${packages[*]}")
debootstrap --variant=minbase --include="$include" "$suite" "$work" "$mirror" \
    > "$cache/debootstrap.log" 2>&1 || { tail -n 30 "$cache/debootstrap.log" >&2; exit 1; }

# Updates from the same snapshot as the host, so the test sees what users get.
cat > "$work/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
SOURCES
# Package lists for those sources, so run.sh can resolve the .deb's dependencies.
cp /etc/resolv.conf "$work/etc/resolv.conf"
# (as root: the fresh lists/partial directory is not yet _apt's)
chroot "$work" apt-get -o APT::Sandbox::User=root update -qq >&2
rm -f "$work/etc/resolv.conf" "$work"/var/cache/apt/archives/*.deb

tar -C "$work" --numeric-owner -cf "$tarball.tmp" .
mv "$tarball.tmp" "$tarball"
echo "$tarball"
