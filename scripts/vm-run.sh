#!/usr/bin/env bash
# Run one command inside Debian's 6.12 kernel, booted with virtme-ng under
# qemu (TCG), with this host's root file system read-only over 9p.
#
#   scripts/vm-run.sh LOG TIMEOUT_S COMMAND
#
# Writes everything the VM printed to LOG and exits with the command's status.
#
# vng exits 255 when qemu ends before the guest reported the command's status:
# the VM died (a panic, qemu killed) before or while the command ran. CI saw
# this once, on a fresh machine, with nothing in the log (stop 18: the same
# commit passed twice here). That says nothing about the tests, so the boot is
# tried once more, with the kernel's console in the log this time, so a second
# failure shows why. Any other status is the command's own and is final.
set -u
log=$1 timeout_s=$2 command=$3
kernel=$(ls /boot/vmlinuz-6.12.*-amd64 2>/dev/null | sort -V | tail -n 1)
if [ -z "$kernel" ]; then
  echo "vm-run: no /boot/vmlinuz-6.12.*-amd64 (make vm-deps installs it)" >"$log"
  exit 1
fi

boot() {
  timeout "$timeout_s" vng --run "$kernel" --disable-kvm --memory 2G --cpus 2 \
    "$@" --exec "$command"
}

boot >"$log" 2>&1
status=$?
if [ "$status" = 255 ]; then
  {
    echo "vm-run: the VM ended before the command reported (vng exit 255);"
    echo "vm-run: booting once more with the kernel console shown"
  } >>"$log"
  boot --verbose >>"$log" 2>&1
  status=$?
fi
exit "$status"
