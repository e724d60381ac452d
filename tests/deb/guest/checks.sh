#!/bin/bash
# The booted-package checks, run inside the VM by netcfg-deb-test.service.
# Each check prints one line to the second serial port (the host's
# results.log): "RESULT NAME PASS|FAIL|SKIP DETAIL"; tests/deb/run.sh decides
# from those lines. Evidence for failures goes there too as "LOG ..." lines.
#
# No `set -e`: a failed check is reported and the run goes on, so one run
# shows every failure. Every check asserts on state read back from the system
# (systemctl show, ip -n NS ...), never on a command's exit code alone.
set -uo pipefail

# The second boot (tests/deb/run.sh boots again after REBOOT) runs only the
# netcfg-ifupdown checks that need a reboot.
if [ "$(cat /var/lib/netcfg-deb-test/phase 2>/dev/null)" = rebooted ]; then
    exec /usr/local/lib/netcfg-deb-test/ifupdown.sh rebooted
fi

exec 3>/dev/ttyS1
export LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin
EXAMPLE=/usr/share/netcfg/examples/tenants.tmpl
TENANTS=(alpha beta gamma)
UNIT=netcfgd.service

result() { echo "RESULT $1 $2 ${3:-}" >&3; echo "RESULT $1 $2 ${3:-}"; }
log() { sed 's/^/LOG /' >&3; }
prop() { systemctl show -p "$1" --value "$UNIT"; }

# The network as iproute2 reads it back: every namespace's links (name,
# kind, state) and addresses. Compared before and after an action that must
# leave the network alone.
snapshot() {
    {
        echo "== host"; ip -br link | awk '{print $1, $2}'; ip -br addr | awk '{$2=""; print}'
        for ns in $(ip netns list | awk '{print $1}' | sort); do
            echo "== $ns"; ip -n "$ns" -br link | awk '{print $1, $2}'
            ip -n "$ns" -br addr | awk '{$2=""; print}'
            ip -n "$ns" route show
        done
    } | sort
}

# wait_for SECONDS COMMAND...: poll until the command succeeds.
wait_for() {
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 1
    done
}

tenants_configured() {
    local i=1 t
    for t in "${TENANTS[@]}"; do
        ip -n "$t" -br addr show dev eth0 | grep -qw "10.200.$i.2/30" || return 1
        ip -n "$t" -br link show dev eth0 | grep -qw UP || return 1
        ip -n "$t" route show default | grep -q "via 10.200.$i.1" || return 1
        ip -br addr show dev "veth-$t" | grep -qw "10.200.$i.1/30" || return 1
        i=$((i + 1))
    done
}

echo "BEGIN $(uname -r)" >&3
# Booted, and nothing failed on the way (this unit is still running, so the
# system says "starting").
failed=$(systemctl list-units --failed --plain --no-legend | awk '{print $1}' | xargs)
[ -z "$failed" ] && result boot PASS "$(systemctl is-system-running 2>&1), no failed units" \
    || { result boot FAIL "failed units: $failed"; systemctl status --no-pager $failed 2>&1 | log; }

# --- the package as installed --------------------------------------------
status=$(dpkg-query -W -f='${Status} ${Version}' netcfg 2>&1)
[[ $status == "install ok installed "* ]] && result installed PASS "$status" || result installed FAIL "$status"

out=$(python3 -c 'import netcfgd._dataplane as d; print(d.__file__)' 2>&1) \
    && result dataplane-import PASS "$out" || { result dataplane-import FAIL "$out"; }

missing=
for f in /usr/share/man/man8/netcfg.8.gz /usr/share/man/man8/netcfgd.8.gz \
         /usr/share/man/man5/netcfg-interfaces.5.gz /usr/share/bash-completion/completions/netcfg \
         /etc/netcfg/site.tmpl.example "$EXAMPLE" /usr/share/netcfg/schemas/netcfg.schema.json \
         /usr/share/netcfg/schemas/kinds/bridge.json /usr/share/netcfg/templates/lib/netcfg.tmpl; do
    [ -e "$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && result files PASS || result files FAIL "missing:$missing"

# The data is found where Debian puts it (netcfg/data.py): the schemas through
# `netcfg schema`, the templates' defs through an example that uses them.
out=$(python3 -c 'import netcfg.data as d; print(d.data_dir())' 2>&1)
title=$(netcfg schema 2>&1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["title"])' 2>&1)
[ "$out" = /usr/share/netcfg ] && [ -n "$title" ] && result data-dir PASS "$out, schema: $title" \
    || result data-dir FAIL "data_dir=$out schema title=$title"

# Bash completion loads and offers the subcommands.
out=$(bash -c 'source /usr/share/bash-completion/completions/netcfg; COMP_WORDS=(netcfg ap); COMP_CWORD=1; _netcfg; echo "${COMPREPLY[*]}"' 2>&1)
[ "$out" = apply ] && result completion PASS "$out" || result completion FAIL "netcfg ap<TAB> gave: $out"

# --- the autopkgtest kernel tier, when run.sh copied the source in ----------
if [ -d /root/netcfg-src ]; then
    if out=$(cd /root/netcfg-src && AUTOPKGTEST_TMP=/tmp/autopkgtest-kernel timeout 1700 debian/tests/kernel 2>&1); then
        result autopkgtest-kernel PASS "$(echo "$out" | tail -n 1)"
    else
        result autopkgtest-kernel FAIL "$(echo "$out" | tail -n 1)"
        echo "$out" | grep -E '^(FAILED|ERROR)' | head -30 | log
    fi
fi

# --- the unit is enabled but did not start without a config ---------------
have_unit=no
[ -n "$(systemctl list-unit-files --no-legend "$UNIT" 2>/dev/null)" ] && have_unit=yes
if [ $have_unit = yes ]; then
    enabled=$(systemctl is-enabled "$UNIT" 2>&1)
    state="$(prop ActiveState) condition=$(prop ConditionResult)"
    if [ "$enabled" = enabled ] && [ "$(prop ActiveState)" = inactive ] && [ "$(prop ConditionResult)" = no ]; then
        result unit-idle-without-config PASS "$enabled, $state"
    else
        result unit-idle-without-config FAIL "is-enabled=$enabled, $state"
        systemctl status --no-pager "$UNIT" 2>&1 | log
    fi
else
    result unit-idle-without-config SKIP "the package has no $UNIT"
fi

# --- netcfg check / apply of a shipped example ------------------------------
out=$(netcfg check -c "$EXAMPLE" 2>&1) && result check-example PASS "$(echo "$out" | tail -1)" \
    || { result check-example FAIL "exit $?"; echo "$out" | log; }

cp "$EXAMPLE" /etc/netcfg/site.tmpl
if out=$(timeout 300 netcfg apply 2>&1) && tenants_configured; then
    result apply-example PASS "namespaces: $(ip netns list | awk '{print $1}' | sort | xargs)"
else
    result apply-example FAIL "apply: $(echo "$out" | tail -1)"
    { echo "$out"; snapshot; } | log
fi
out=$(netcfg query --check 2>&1) && result query-no-drift PASS \
    || { result query-no-drift FAIL "exit $?"; echo "$out" | log; }

# --- the daemon under systemd ----------------------------------------------
daemon_checks() {
    local pid out before after restarts watchdog_us
    if timeout 180 systemctl start "$UNIT" && [ "$(prop ActiveState)" = active ] \
        && [ "$(prop SubState)" = running ]; then
        result daemon-start PASS "Type=$(prop Type) MainPID=$(prop MainPID) Status=$(prop StatusText)"
    else
        result daemon-start FAIL "$(prop ActiveState)/$(prop SubState) Result=$(prop Result)"
        journalctl -u "$UNIT" --no-pager | tail -40 | log
        systemctl stop "$UNIT"
        for c in daemon-notify daemon-reload daemon-watchdog watchdog-keeps-network \
                 upgrade-no-restart daemon-stop-keeps-network; do
            result "$c" FAIL "not run: the daemon did not start"
        done
        return
    fi
    # Type=notify: "active" was reached only because the daemon said READY=1.
    [ "$(prop Type)" = notify ] && result daemon-notify PASS \
        || result daemon-notify FAIL "Type=$(prop Type)"

    # Reload picks up a changed template: a fourth tenant appears.
    pid=$(prop MainPID)
    cat > /etc/netcfg/zz-delta.tmpl <<'TMPL'
auto veth-delta
iface veth-delta
    link-type veth
    veth-peer-name eth0
    veth-peer-netns delta
    address 10.200.4.1/30

auto eth0
iface eth0
    netns delta
    address 10.200.4.2/30
TMPL
    delta_up() { ip -n delta -br addr show dev eth0 2>/dev/null | grep -qw 10.200.4.2/30; }
    if timeout 120 systemctl reload "$UNIT" && wait_for 90 delta_up \
        && [ "$(prop MainPID)" = "$pid" ] && [ "$(prop ActiveState)" = active ]; then
        result daemon-reload PASS "delta: $(ip -n delta -br addr show dev eth0 | xargs)"
    else
        result daemon-reload FAIL "$(prop ActiveState) MainPID $pid -> $(prop MainPID)"
        { journalctl -u "$UNIT" --no-pager | tail -40; ip netns list; } | log
    fi

    # The watchdog restarts a hung daemon: stop it dead and wait.
    watchdog_us=$(prop WatchdogUSec)
    restarts=$(prop NRestarts)
    pid=$(prop MainPID)
    before=$(snapshot)
    kill -STOP "$pid"
    restarted() {
        local now; now=$(prop MainPID)
        [ "$now" != 0 ] && [ "$now" != "$pid" ] && [ "$(prop ActiveState)" = active ]
    }
    if wait_for 240 restarted && [ "$(prop NRestarts)" -gt "$restarts" ]; then
        result daemon-watchdog PASS "WatchdogUSec=$watchdog_us MainPID $pid -> $(prop MainPID) NRestarts $restarts -> $(prop NRestarts)"
    else
        result daemon-watchdog FAIL "WatchdogUSec=$watchdog_us MainPID $pid -> $(prop MainPID) $(prop ActiveState)/$(prop SubState) NRestarts=$(prop NRestarts)"
        journalctl -u "$UNIT" --no-pager | tail -30 | log
        kill -CONT "$pid" 2>/dev/null
    fi
    after=$(snapshot)
    [ "$before" = "$after" ] && result watchdog-keeps-network PASS \
        || { result watchdog-keeps-network FAIL "the network changed"; diff <(echo "$before") <(echo "$after") | log; }

    # An upgrade (reinstalling the same .deb runs the upgrade paths of every
    # maintainer script) neither restarts the daemon nor touches the network.
    pid=$(prop MainPID)
    before=$(snapshot)
    out=$(dpkg -i /root/netcfg.deb 2>&1)
    after=$(snapshot)
    if [ "$(prop MainPID)" = "$pid" ] && [ "$(prop ActiveState)" = active ] && [ "$before" = "$after" ]; then
        result upgrade-no-restart PASS "MainPID $pid kept"
    else
        result upgrade-no-restart FAIL "MainPID $pid -> $(prop MainPID), $(prop ActiveState)"
        { echo "$out"; diff <(echo "$before") <(echo "$after"); } | log
    fi

    # Stopping the daemon leaves the network as it is.
    before=$(snapshot)
    timeout 120 systemctl stop "$UNIT"
    after=$(snapshot)
    if [ "$(prop ActiveState)" = inactive ] && [ "$before" = "$after" ]; then
        result daemon-stop-keeps-network PASS "$(prop ActiveState), $(echo "$after" | grep -c .) lines of state unchanged"
    else
        result daemon-stop-keeps-network FAIL "$(prop ActiveState)"
        diff <(echo "$before") <(echo "$after") | log
    fi
    # Running again, so that removing the package has a daemon to stop.
    timeout 180 systemctl start "$UNIT"
}
if [ $have_unit = yes ]; then
    daemon_checks
else
    for c in daemon-start daemon-notify daemon-reload daemon-watchdog watchdog-keeps-network \
             upgrade-no-restart daemon-stop-keeps-network; do
        result "$c" SKIP "the package has no $UNIT"
    done
    # The upgrade path of the maintainer scripts still must not touch the network.
    before=$(snapshot); out=$(dpkg -i /root/netcfg.deb 2>&1); after=$(snapshot)
    [ "$before" = "$after" ] && result upgrade-keeps-network PASS \
        || { result upgrade-keeps-network FAIL; { echo "$out"; diff <(echo "$before") <(echo "$after"); } | log; }
fi

# --- remove and purge ------------------------------------------------------
before=$(snapshot)
out=$(DEBIAN_FRONTEND=noninteractive apt-get remove -y netcfg 2>&1)
after=$(snapshot)
status=$(dpkg-query -W -f='${Status}' netcfg 2>&1)
if [ "$status" = "deinstall ok config-files" ] && [ -f /etc/netcfg/site.tmpl ] \
    && [ -f /etc/netcfg/site.tmpl.example ] && [ ! -e /usr/bin/netcfg ] \
    && [ "$before" = "$after" ] && ! pgrep -f 'bin/netcfgd|-m netcfgd' >/dev/null; then
    result remove-keeps-config-and-network PASS "$status; /etc/netcfg: $(ls /etc/netcfg | xargs)"
else
    result remove-keeps-config-and-network FAIL "$status; /etc/netcfg: $(ls /etc/netcfg 2>&1 | xargs); daemon: $(pgrep -af netcfgd | xargs)"
    { echo "$out"; diff <(echo "$before") <(echo "$after"); } | log
fi

before=$(snapshot)
out=$(DEBIAN_FRONTEND=noninteractive apt-get purge -y netcfg 2>&1)
after=$(snapshot)
status=$(dpkg-query -W -f='${Status}' netcfg 2>&1)
left=$(ls -d /etc/netcfg/site.tmpl.example /run/netcfg \
          /etc/systemd/system/multi-user.target.wants/netcfgd.service \
          /var/lib/systemd/deb-systemd-helper-enabled/netcfgd.service* 2>/dev/null | xargs)
if [[ $status != "install ok"* ]] && [[ $status != "deinstall ok config-files" ]] \
    && [ -z "$left" ] && [ "$before" = "$after" ] && [ -f /etc/netcfg/site.tmpl ]; then
    result purge PASS "status '$status'; the admin's /etc/netcfg/site.tmpl and the network kept; /var/lib/netcfg: $(find /var/lib/netcfg -type f 2>/dev/null | xargs)"
else
    result purge FAIL "status '$status'; left: $left"
    { echo "$out"; diff <(echo "$before") <(echo "$after"); } | log
fi

echo "END" >&3

# --- netcfg-ifupdown: ifupdown2 swapped out, then a reboot (guest/ifupdown.sh)
if [ -e /root/netcfg-ifupdown.deb ]; then
    /usr/local/lib/netcfg-deb-test/ifupdown.sh swap-in
fi
