#!/usr/bin/env bash
# The booted-package test: install the .deb with apt into a debootstrapped
# Debian bookworm, boot that with systemd as PID 1 under qemu (TCG, Debian's
# 6.12 kernel) and read the checks' results (guest/checks.sh) back from the
# VM's second serial port. When netcfg-ifupdown's .deb sits beside the
# netcfg one, the guest installs it over Debian's ifupdown2 and asks for a
# second boot (guest/ifupdown.sh), which this script gives it.
#
#   tests/deb/run.sh PATH/netcfg_VERSION_ARCH.deb [SOURCE-DIR]
#
# SOURCE-DIR is the tree the .deb was built from (its tests/ and debian/tests/
# run against the installed package); default: this work tree.
# Root only (debootstrap, chroot, mkfs). Nothing here configures the host's
# network: the chroot gets a policy-rc.d that forbids starting services and
# only apt runs in it (it shares the host's network namespace for downloads);
# the VM has no network device at all (-nic none).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
deb=$(realpath "${1:?usage: $0 PATH/netcfg_*.deb [SOURCE-DIR]}")
source_dir=$(realpath "${2:-$here/../..}")
cache=${NETCFG_DEB_CACHE:-$here/../../.cache/deb-test}
kernel_pkg=linux-image-6.12-amd64
timeout_s=${NETCFG_DEB_VM_TIMEOUT:-1200}

[ "$(id -u)" = 0 ] || { echo "tests/deb/run.sh: needs root (chroot, mkfs)" >&2; exit 2; }
kver=$(cd /boot && ls vmlinuz-6.12.*-amd64 2>/dev/null | sed 's/^vmlinuz-//' | sort -V | tail -n 1)
[ -n "$kver" ] || { echo "no /boot/vmlinuz-6.12.*: apt-get install $kernel_pkg" >&2; exit 2; }

# One run at a time: every run uses the same directory and image.
mkdir -p "$cache"
exec 9> "$cache/run.lock"
flock -n 9 || { echo "tests/deb/run.sh: another run holds $cache/run.lock" >&2; exit 1; }

tarball=$("$here/mkrootfs.sh")
run=$cache/run
rm -rf --one-file-system "$run"
mkdir -p "$run/root"
root=$run/root
mounted=()
cleanup() {
    local m
    for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done
}
trap cleanup EXIT

step() { echo "[$(date -u +%T)] $*"; }

# copy_source DIR: the source tree as autopkgtest would unpack it, without
# build outputs.
copy_source() {
    mkdir -p "$1"
    tar -C "$source_dir" --exclude=./.git --exclude=./.venv --exclude=./.cache \
        --exclude=./.pybuild --exclude=./debian/netcfg --exclude=./debian/.debhelper \
        --exclude=./debian/.cargo-target --exclude=./debian/.cargo-home --exclude=target \
        --exclude='*.so' -cf - . | tar -C "$1" -xf -
}

step "unpack $(basename "$tarball")"
tar -C "$root" -xf "$tarball"

# --- install the .deb with apt, in a chroot that may start nothing ----------
printf '#!/bin/sh\n# tests/deb: no service starts in the chroot.\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"; mounted+=("$root/proc")
cp "$deb" "$root/root/netcfg.deb"        # also the "upgrade" in guest/checks.sh
in_chroot() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive "$@"; }
# netcfg-ifupdown (built beside the netcfg .deb) is installed in the VM, over
# Debian's ifupdown2 (guest/ifupdown.sh). The VM has no network: ifupdown2's
# .deb is fetched here (its dependencies, python3 and iproute2, are in the
# image); the host's copy from `make ifupdown2-examples` if apt cannot.
ifupdown_deb=$(ls "$(dirname "$deb")"/netcfg-ifupdown_*_all.deb 2>/dev/null | head -n 1 || true)
if [ -n "$ifupdown_deb" ]; then
    cp "$ifupdown_deb" "$root/root/netcfg-ifupdown.deb"
    mkdir -p "$root/root/debs"
    in_chroot sh -c 'cd /root/debs && apt-get -o APT::Sandbox::User=root download ifupdown2' \
        > "$run/apt-download.log" 2>&1 \
        || cp "$here"/../../.cache/deb/ifupdown2_*_all.deb "$root/root/debs/" \
        || { cat "$run/apt-download.log"; echo "cannot get Debian's ifupdown2 .deb" >&2; exit 1; }
    step "ifupdown2 for the VM: $(ls "$root/root/debs")"
fi
step "apt-get install ./$(basename "$deb") (in the chroot)"
if ! in_chroot apt-get install -y --no-install-recommends /root/netcfg.deb > "$run/apt.log" 2>&1; then
    # The cached lists may be older than the archive: refresh once and retry.
    in_chroot apt-get update -qq >> "$run/apt.log" 2>&1
    in_chroot apt-get install -y --no-install-recommends /root/netcfg.deb >> "$run/apt.log" 2>&1 \
        || { tail -30 "$run/apt.log"; echo "apt-get install of the .deb failed" >&2; exit 1; }
fi
grep -E '^(Setting up|Unpacking) ' "$run/apt.log" | sed 's/^/  /'

: > "$run/host-results.log"
# The autopkgtest unit tier against the installed package, in the chroot with
# no network at all (a private network namespace).
if [ "${NETCFG_DEB_AUTOPKGTEST:-1}" = 1 ]; then
    step "autopkgtest 'unit' (debian/tests/unit) in the chroot"
    in_chroot apt-get install -y -qq --no-install-recommends python3-pytest python3-hypothesis \
        > "$run/apt-tests.log" 2>&1 || { tail "$run/apt-tests.log"; exit 1; }
    src=$root/tmp/netcfg-src
    mkdir -p "$src"
    copy_source "$src"
    if unshare --net --mount --propagation private chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        LC_ALL=C.UTF-8 HOME=/root AUTOPKGTEST_TMP=/tmp/autopkgtest sh -c \
        'mkdir -p $AUTOPKGTEST_TMP && cd /tmp/netcfg-src && debian/tests/unit' > "$run/autopkgtest-unit.log" 2>&1; then
        echo "RESULT autopkgtest-unit PASS $(tail -n 1 "$run/autopkgtest-unit.log")" >> "$run/host-results.log"
    else
        echo "RESULT autopkgtest-unit FAIL $(tail -n 1 "$run/autopkgtest-unit.log")" >> "$run/host-results.log"
        grep -E '^(FAILED|ERROR)' "$run/autopkgtest-unit.log" | head -20 | sed 's/^/LOG /' >> "$run/host-results.log"
    fi
    rm -rf "$src" "$root/tmp/autopkgtest"
    tail -n 1 "$run/autopkgtest-unit.log"
fi
# The unit as installed, checked with the image's own systemd units around
# it; any message at all (unknown key, missing binary, bad dependency, a
# Documentation=man: page the package does not ship) fails.
if [ -e "$root/lib/systemd/system/netcfgd.service" ]; then
    out=$(MANPATH="$root/usr/share/man" systemd-analyze verify --root="$root" netcfgd.service 2>&1) && [ -z "$out" ] \
        && echo "RESULT systemd-analyze-verify PASS" >> "$run/host-results.log" \
        || { echo "RESULT systemd-analyze-verify FAIL $(echo "$out" | head -n 1)"; echo "$out" | sed 's/^/LOG /'; } >> "$run/host-results.log"
else
    echo "RESULT systemd-analyze-verify SKIP the package has no netcfgd.service" >> "$run/host-results.log"
fi
umount "$root/proc"; mounted=()
rm -f "$root/usr/sbin/policy-rc.d" "$root/etc/resolv.conf"
rm -f "$root"/var/cache/apt/archives/*.deb

# --- make it bootable ---------------------------------------------------------
step "kernel $kver modules, checks unit, image"
mkdir -p "$root/usr/lib/modules"
cp -a "/usr/lib/modules/$kver" "$root/usr/lib/modules/"
for f in checks.sh ifupdown.sh ipstate.py; do
    install -D -m 0755 "$here/guest/$f" "$root/usr/local/lib/netcfg-deb-test/$f"
done
install -D -m 0644 "$here/guest/netcfg-deb-test.service" "$root/etc/systemd/system/netcfg-deb-test.service"
ln -sf ../netcfg-deb-test.service "$root/etc/systemd/system/multi-user.target.wants/netcfg-deb-test.service"
echo netcfg-deb-test > "$root/etc/hostname"
# NETCFG_DEB_KERNEL_TIER=1: also run the autopkgtest kernel tier in the VM
# (needs-root, isolation-machine: the VM is that machine). Off by default: it
# takes ~1 min natively and several under TCG.
if [ "${NETCFG_DEB_KERNEL_TIER:-0}" = 1 ]; then
    copy_source "$root/root/netcfg-src"
    timeout_s=$((timeout_s + 1800))
fi
echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" > "$root/etc/fstab"
# Nothing but the checks: no login prompts, no timers that run apt.
for unit in getty@tty1.service serial-getty@ttyS0.service apt-daily.timer apt-daily-upgrade.timer \
            e2scrub_all.timer fstrim.timer; do
    ln -sf /dev/null "$root/etc/systemd/system/$unit"
done

size_mb=$(( $(du -sm "$root" | cut -f1) + 512 ))
rm -f "$run/disk.raw"
mkfs.ext4 -q -F -L netcfg-root -d "$root" "$run/disk.raw" "${size_mb}M"

# --- boot ---------------------------------------------------------------------
# boot N: one boot of the image; its checks write to results-N.log. The first
# boot's checks end with REBOOT when they want to see the system come up again
# (netcfg-ifupdown: networking.service at boot); the guest powers off and the
# same disk is booted once more (-no-reboot keeps a kernel panic from looping).
boot() {
    local n=$1 status start=$SECONDS
    step "boot $n under qemu (TCG, no network device; console in $run/console-$n.log)"
    : > "$run/results-$n.log"
    set +e
    timeout "$timeout_s" qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp 2 -m 2048 \
        -kernel "/boot/vmlinuz-$kver" -initrd "/boot/initrd.img-$kver" \
        -append "root=/dev/vda rw console=ttyS0 panic=-1 net.ifnames=0 systemd.show_status=1" \
        -drive "file=$run/disk.raw,format=raw,if=virtio" \
        -nic none -display none -monitor none -no-reboot \
        -serial "file:$run/console-$n.log" -serial "file:$run/results-$n.log"
    status=$?
    set -e
    step "VM exited ($status) after $((SECONDS - start)) s"
}
boot 1
cp "$run/results-1.log" "$run/results.log"
if grep -q '^REBOOT' "$run/results-1.log"; then
    boot 2
    cat "$run/results-2.log" >> "$run/results.log"
fi

# --- verdict ------------------------------------------------------------------
cat "$run/host-results.log" "$run/results.log" 2>/dev/null | tr -d '\r' > "$run/all-results.log" || true
cat "$run/all-results.log"
"$here/verdict.sh" "$deb" "$run/all-results.log"
