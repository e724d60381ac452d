#!/usr/bin/env bash
# Decide the booted test from its RESULT lines: every expected check must have
# reported, and passed. The daemon checks may be SKIP only while the package
# has no netcfgd.service.
#
#   tests/deb/verdict.sh PATH/netcfg.deb RESULTS-FILE
set -euo pipefail
deb=$1 results=$2

checks=(autopkgtest-unit boot installed dataplane-import files data-dir completion check-example
        apply-example query-no-drift remove-keeps-config-and-network purge)
daemon=(systemd-analyze-verify unit-idle-without-config daemon-start daemon-notify daemon-reload daemon-watchdog
        watchdog-keeps-network upgrade-no-restart daemon-stop-keeps-network)
[ "${NETCFG_DEB_AUTOPKGTEST:-1}" = 1 ] || checks=("${checks[@]:1}")
[ "${NETCFG_DEB_KERNEL_TIER:-0}" = 1 ] && checks+=(autopkgtest-kernel)

# (grep -q would close the pipe early and fail dpkg-deb under pipefail)
if [ "$(dpkg-deb -c "$deb" | grep -c '/netcfgd\.service$')" -gt 0 ]; then
    checks+=("${daemon[@]}")
    may_skip=()
else
    echo "note: the package has no netcfgd.service: daemon checks may be skipped"
    checks+=(upgrade-keeps-network)
    may_skip=("${daemon[@]}")
fi

# netcfg-ifupdown, when it was built beside netcfg: checks over two boots
# (guest/ifupdown.sh), the second of which must also have finished.
ifupdown=(ifupdown2-installed ifupdown-swap-in ifupdown-install-keeps-network ifupdown-units-verify
          boot-networking ifquery-check-json version-proxmox ifreload-edit reload-networking
          stop-networking swap-back-ifupdown2)
have_ifupdown=no
if ls "$(dirname "$deb")"/netcfg-ifupdown_*_all.deb >/dev/null 2>&1; then
    have_ifupdown=yes
    checks+=("${ifupdown[@]}")
fi

passed=0 failed=0 skipped=0
for c in "${checks[@]}" "${may_skip[@]}"; do
    line=$(grep -m1 "^RESULT $c " "$results" || true)
    verdict=$(echo "$line" | awk '{print $3}')
    optional=no
    for s in "${may_skip[@]}"; do [ "$s" = "$c" ] && optional=yes; done
    case "$verdict" in
        PASS) passed=$((passed + 1)) ;;
        SKIP) if [ $optional = yes ]; then skipped=$((skipped + 1));
              else failed=$((failed + 1)); echo "FAILED: $c was skipped"; fi ;;
        FAIL) failed=$((failed + 1)); echo "FAILED: $line" ;;
        *)    failed=$((failed + 1)); echo "FAILED: $c did not report (VM hung or died?)" ;;
    esac
done
grep -q '^END$' "$results" || { echo "FAILED: the checks did not finish"; failed=$((failed + 1)); }
if [ $have_ifupdown = yes ] && ! grep -q '^END ifupdown$' "$results"; then
    echo "FAILED: the netcfg-ifupdown checks of the second boot did not finish"; failed=$((failed + 1))
fi
echo "booted package test: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
