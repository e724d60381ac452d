#!/usr/bin/env bash
# The `make demo` tour, run inside a private network + mount namespace made by
# `make demo` (unshare), so nothing here can touch the host's network:
# render, plan, apply a tree of tenant namespaces, show it, check it, make it
# drift by hand and watch apply repair it.
set -euo pipefail
NETCFG=${NETCFG:-.venv/bin/netcfg}
EXAMPLE=${EXAMPLE:-templates/examples/tenants.tmpl}

# Refuse to run in the host's namespaces: this script changes network state.
if [ "$(stat -Lc %i /proc/self/ns/net)" = "$(stat -Lc %i /proc/$PPID/ns/net 2>/dev/null || echo none)" ] \
   && [ -z "${NETCFG_DEMO_SANDBOXED:-}" ]; then
  echo "demo-sandbox.sh: run me through 'make demo' (inside unshare --net --mount)" >&2
  exit 2
fi
mount -t tmpfs -o mode=755 netcfg-demo /run   # /run/netns, /run/netcfg: ours alone
mount -t sysfs none /sys    # this namespace's devices: no sysfs write reaches the host's
ip link set lo up

step() { printf '\n== %s\n' "$*"; }

step "plan: what apply would do, from nothing"
$NETCFG plan -c "$EXAMPLE" | head -25
echo "   ..."

step "apply"
$NETCFG apply -c "$EXAMPLE"

# A device's operstate follows its carrier through the kernel's linkwatch,
# which runs up to a second after the device was set up: until then a veth
# that apply brought up reads DOWN. Wait for it (at most 3 s) rather than show
# a state that is about to change.
settling() {
  for ns in "" $(ip netns list | cut -d' ' -f1); do
    ip ${ns:+-n "$ns"} -br link | awk '$2 == "DOWN" && $NF ~ /[<,]UP[,>]/ {found=1} END {exit !found}' \
      && return 0
  done
  return 1
}
for _ in $(seq 30); do settling || break; sleep 0.1; done

step "the kernel now (iproute2's view)"
ip netns list
ip -br addr show
for ns in $(ip netns list | cut -d' ' -f1); do
  echo "-- netns $ns"; ip -n "$ns" -br addr show; ip -n "$ns" route show
done

step "netcfg show: running state in the input language (netns alpha)"
$NETCFG show --netns alpha

step "query --check: the kernel matches the config"
$NETCFG query --check -c "$EXAMPLE"

step "drift: delete an address by hand (ip -n beta addr del 10.200.2.2/30 dev eth0)"
ip -n beta addr del 10.200.2.2/30 dev eth0
$NETCFG query --check -c "$EXAMPLE" || echo "(query --check exited $?: drift found, as it should)"

step "apply again repairs exactly that"
$NETCFG apply -c "$EXAMPLE"
$NETCFG query --check -c "$EXAMPLE"

step "netcfgd: the daemon keeps it so, and serves each tenant its volume over iSCSI"
# Volumes go to a tmpfs too: this sandbox has its own mounts, not its own disk.
if [ -d /var/lib/netcfg ]; then mount -t tmpfs netcfg-demo /var/lib/netcfg
else mount -t tmpfs netcfg-demo /var/lib; fi
mkdir -p /var/lib/netcfg/volumes
NETCFGD=${NETCFGD:-$(dirname "$NETCFG")/netcfgd}
$NETCFGD -c "$EXAMPLE" 2>/run/netcfgd.log &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null || true' EXIT
for _ in $(seq 100); do $NETCFG status >/dev/null 2>&1 && break; sleep 0.1; done
$NETCFG status
for tenant in alpha beta; do
  echo "-- discovery from inside $tenant (both tenants use 192.168.100.1):"
  ip netns exec $tenant iscsi-ls -s -i iqn.2026-11.org.example.initiator:$tenant \
    iscsi://192.168.100.1 || echo "(iscsi-ls failed: is libiscsi-bin installed?)"
done
echo "-- the volume, as the tenant's initiator sees it:"
ip netns exec alpha iscsi-inq -i iqn.2026-11.org.example.initiator:alpha \
  iscsi://192.168.100.1/iqn.2026-11.org.example.netcfg:alpha/0 | head -8 || true

step "drift with the daemon running: it repairs by itself"
ip -n gamma addr del 192.168.100.1/24 dev stor0
sleep 0.5
ip -n gamma -br addr show dev stor0
grep -E "applied|pass:" /run/netcfgd.log | tail -2
