# netcfg developer entry points. `make demo` and `make test` set up everything
# they need (a venv in .venv, ifupdown2's example files in .cache/).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
NETCFG := $(VENV)/bin/netcfg
STAMP  := $(VENV)/.installed-stamp
EXAMPLE ?= templates/examples/tenants.tmpl

# $(call apt_install,PACKAGES,WHAT FOR,IF NOT ROOT): the recipe line that
# installs those of the Debian PACKAGES that are missing, saying "installing
# Debian packages WHAT FOR". IF NOT ROOT, when given, is the shell run instead
# when not root and something is missing (it sees $$missing); without it apt-get
# is tried anyway.
define apt_install
@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
if [ -z "$$missing" ]; then :; \
$(if $(3),elif [ "$$(id -u)" != 0 ]; then $(3);) \
else \
  echo "installing Debian packages $(2): $$missing"; \
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install \
    -o DPkg::Lock::Timeout=600 -y -qq --no-install-recommends $$missing >/dev/null; \
fi
endef

# $(call apt_unpack,NAME,DEBS,DIR,WHAT): the recipe lines that download Debian's
# DEBS into .cache/deb/NAME and unpack them into DIR, never installing them;
# WHAT names them when the download fails.
define apt_unpack
@rm -rf .cache/deb/$(1) && mkdir -p .cache/deb/$(1) $(3)
@cd .cache/deb/$(1) && { apt-get download $(2) >/dev/null 2>&1 || \
  { apt-get update -qq && apt-get download $(2) >/dev/null 2>&1; }; } \
  || { echo "cannot download Debian's $(4) (apt-get download $(2))"; exit 1; }
for deb in .cache/deb/$(1)/*.deb; do dpkg-deb -x $$deb $(3) || exit 1; done
endef

.PHONY: daemon-deps bench-storm
.PHONY: all venv ifupdown2-examples bench-deps vm-deps kernel-deps test test-kernel test-vm test-unit test-perf demo bench bench-compile clean

all: test

# ifupdown2's own example files, for the compatibility tests: unpacked from its
# .deb into .cache/ and never installed (installing ifupdown2 enables
# networking.service for the next boot, which a test run must not do to a host).
IFUPDOWN2_DIR := .cache/ifupdown2
$(IFUPDOWN2_DIR)/.stamp:
	@mkdir -p .cache/deb $(IFUPDOWN2_DIR)
	@cd .cache/deb && { apt-get download ifupdown2 >/dev/null 2>&1 || \
	  { apt-get update -qq && apt-get download ifupdown2 >/dev/null 2>&1; }; } \
	  || { echo "cannot download Debian's ifupdown2 package (apt-get download ifupdown2)"; exit 1; }
	dpkg-deb -x .cache/deb/ifupdown2_*.deb $(IFUPDOWN2_DIR)
	@touch $@

ifupdown2-examples: $(IFUPDOWN2_DIR)/.stamp

# The compatibility tier (docs/compat.md, tests/compat/): the corpus accepted
# by `netcfg check`, then the same files applied by Debian's ifupdown2 and by
# netcfg in sandboxes (each a private net + mount namespace with /sys
# remounted) and the kernel states compared. ifupdown2 runs from the unpacked
# .deb above; mako (its template engine) is unpacked too, never installed.
# test-compat runs every file; `make test` runs test-compat-quick, a subset
# that leaves out files recorded as slow (none since the harness answers
# DHCP). The harness's DHCP peer is dnsmasq, the clients' dhclient: the
# kernel tier's packages (bare binaries, no service).
COMPAT_PY_DIR := .cache/compat-python
COMPAT_DEBS := python3-mako python3-markupsafe
.PHONY: compat-deps test-compat test-compat-quick
$(COMPAT_PY_DIR)/.stamp:
	$(call apt_unpack,compat,$(COMPAT_DEBS),$(COMPAT_PY_DIR),python3-mako)
	@touch $@
# Debian's ifupdown 0.8 and the packages that hook it (bridge-utils, vlan,
# ifenslave), unpacked, never installed: the peer a file written for ifupdown
# is judged against where ifupdown2's own apply fails on it
# (differential.reference_peer), and peers.py's verdict.
IFUPDOWN_DIR := .cache/ifupdown
IFUPDOWN_HOOKS_DIR := .cache/ifupdown-hooks
$(IFUPDOWN_DIR)/.stamp:
	$(call apt_unpack,ifupdown,ifupdown,$(IFUPDOWN_DIR),ifupdown)
	@touch $@
$(IFUPDOWN_HOOKS_DIR)/.stamp:
	$(call apt_unpack,ifupdown-hooks,bridge-utils vlan ifenslave,$(IFUPDOWN_HOOKS_DIR),bridge-utils/vlan/ifenslave)
	@touch $@
compat-deps: venv ifupdown2-examples $(COMPAT_PY_DIR)/.stamp $(IFUPDOWN_DIR)/.stamp \
		$(IFUPDOWN_HOOKS_DIR)/.stamp
	$(call apt_install,isc-dhcp-client dnsmasq-base,for the compat tier's DHCP peer,:)
	@# ifupdown2 loads its batman_adv addon only where /usr/sbin/batctl exists: without it
	@# the peer makes no mesh at all ("bat0: interface not recognized").
	$(call apt_install,batctl,for ifupdown2's batman_adv addon in the differential,:)
test-compat: compat-deps
	NETCFG_COMPAT_FULL=1 $(PY) -m pytest -q tests/compat
test-compat-quick: compat-deps
	$(PY) -m pytest -q tests/compat

# The differential's VM tier (docs/compat.md "VM tier"): the files the host
# kernel cannot apply (vlan, bond, vrf, dummy, bridge VLAN filtering), in one
# boot of Debian's 6.12 kernel under virtme-ng (TCG), ifupdown2 and netcfg each
# forked warm in the guest (tests/compat/vm_differential.py). Both fail when a
# file's state or takeover got worse than expectation.json's differential_vm
# records; test-compat-vm runs every vm-tier file, test-compat-vm-quick one or
# more per kind (~4 min on an idle host, 25 min loaded: not in `make test`). Root only.
.PHONY: test-compat-vm test-compat-vm-quick test-compat-reload-vm
test-compat-vm: vm-deps compat-deps
	@if [ "$$(id -u)" != 0 ]; then echo "test-compat-vm: skipped (needs root)"; exit 0; fi; \
	$(PY) tests/compat/vm_differential.py --check
# The reload differential's VM-tier pairs (tests/compat/reload_differential.py,
# docs/compat.md "Reload differential"): VLANs, bonds, VLAN-aware bridges
# edited and reloaded by both tools (~10 min: 9 min 43 s measured beside another VM;
# not in `make test`, whose
# tests/compat runs the host pairs).
test-compat-reload-vm: vm-deps compat-deps
	@if [ "$$(id -u)" != 0 ]; then echo "test-compat-reload-vm: skipped (needs root)"; exit 0; fi; \
	$(PY) tests/compat/reload_differential.py --vm --check
# One reload pair per VM-only behaviour (4 min 15 s measured); test-compat-reload-vm runs all 10.
RELOAD_VM_QUICK := vlan-remove vlan-aware-off vlan-aware-guest-veth bond-slave-add dummy-add
.PHONY: test-compat-reload-vm-quick
test-compat-reload-vm-quick: vm-deps compat-deps
	@if [ "$$(id -u)" != 0 ]; then echo "test-compat-reload-vm-quick: skipped (needs root)"; exit 0; fi; \
	$(PY) tests/compat/reload_differential.py --vm --check $(RELOAD_VM_QUICK)
test-compat-vm-quick: vm-deps compat-deps
	@if [ "$$(id -u)" != 0 ]; then echo "test-compat-vm-quick: skipped (needs root)"; exit 0; fi; \
	$(PY) tests/compat/vm_differential.py --subset --check

# The peers' verdict on every corpus file (docs/compat.md "The peers' verdict"):
# Debian's ifupdown2 (ifup -a -s) and, for files written for ifupdown, Debian's
# ifupdown 0.8 (ifup -n), each unpacked and sandboxed; written to
# tests/compat/peer_results.json, which `make test` reads (~4 min). Root only.
.PHONY: compat-peers
compat-peers: compat-deps
	@if [ "$$(id -u)" != 0 ]; then echo "compat-peers: skipped (needs root)"; exit 0; fi; \
	$(PY) tests/compat/peers.py

# The Linux open-iscsi initiator (iscsiadm, iscsid) for the VM tier's iSCSI
# test (tests/vm/test_vm_iscsi.py), unpacked into .cache/ with the two
# libraries it needs and never installed: the package enables iscsid.socket and
# open-iscsi.service, which would start an initiator on the host.
OPEN_ISCSI_DIR := .cache/open-iscsi
OPEN_ISCSI_DEBS := open-iscsi libopeniscsiusr libisns0
.PHONY: iscsi-initiator
$(OPEN_ISCSI_DIR)/.stamp:
	$(call apt_unpack,open-iscsi,$(OPEN_ISCSI_DEBS),$(OPEN_ISCSI_DIR),open-iscsi)
	@LD_LIBRARY_PATH=$(OPEN_ISCSI_DIR)/usr/lib/x86_64-linux-gnu ldd $(OPEN_ISCSI_DIR)/sbin/iscsid \
	  $(OPEN_ISCSI_DIR)/sbin/iscsiadm | grep 'not found' \
	  && { echo "open-iscsi needs libraries this host lacks (above)"; exit 1; } || true
	@touch $@

iscsi-initiator: $(OPEN_ISCSI_DIR)/.stamp

# The benchmarks run Debian's ifupdown2 itself (sandboxed), so they install it:
# do that on a test machine, not a host whose networking you care about (tgt's
# package also enables tgt.service, which listens on every address where
# systemd runs it). bench/iscsi and bench/dataplane/iscsi_ab.py need tgt,
# libiscsi's iscsi-perf and its headers (wperf.c), and strace for --syscalls.
BENCH_PACKAGES := ifupdown2 python3-mako tgt libiscsi-bin libiscsi-dev gcc strace
bench-deps:
	$(call apt_install,$(BENCH_PACKAGES),for the benchmarks)

# netcfgd's systemd integration: systemd-python (sd_notify, journal fields)
# builds against libsystemd; without it netcfgd writes sd_notify datagrams
# itself and logs to stderr.
DAEMON_PACKAGES := libsystemd-dev pkg-config
DAEMON_NOT_ROOT = echo "daemon-deps: not root, not installing $$missing (netcfgd falls back to plain sd_notify)"
daemon-deps: venv
	$(call apt_install,$(DAEMON_PACKAGES),for netcfgd,$(DAEMON_NOT_ROOT))
	@$(PY) -c 'import systemd.daemon' 2>/dev/null || $(PY) -m pip install -q 'systemd-python>=234' \
	  || echo "daemon-deps: systemd-python did not build (needs libsystemd-dev, pkg-config)"

# The extension's build needs libclang (libublk's bindgen, src/ublk.rs).
BUILD_PACKAGES := libclang-dev
BUILD_NOT_ROOT = echo "the data path needs: apt-get install $$missing"; exit 1
$(STAMP): setup.cfg pyproject.toml
	$(call apt_install,$(BUILD_PACKAGES),to build the data path,$(BUILD_NOT_ROOT))
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
	  echo "python3 -m venv failed; installing python3-venv"; \
	  apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

venv: $(STAMP)

test: venv daemon-deps ifupdown2-examples test-kernel test-vm test-dataplane test-compat-quick test-fleet test-perf test-kubernetes
	NETCFG_IFUPDOWN2_EXAMPLES=$(IFUPDOWN2_DIR)/usr/share/doc/ifupdown2/examples \
	  $(PY) -m pytest -q tests/unit tests/golden

# The kernel tier: root only. It runs in a private network + mount namespace so
# nothing the tests create (namespaces, devices, mounts) reaches the host;
# tests/kernel_env.py refuses to run anywhere else. Without root it skips.
# The VM tier: what the host kernel cannot do (8021q, dummy, vrf, bonding,
# bridge VLAN filtering; lowering proved by traffic; the open-iscsi initiator
# against netcfgd's target, which needs iscsi_tcp; ublk devices, ublk_drv;
# fio verifies them), in Debian's 6.12 kernel
# booted with virtme-ng under qemu (TCG: ~40 s to boot). Root only; inside the
# VM the tests run in a private network namespace as on the host.
VM_KERNEL_PKG := linux-image-6.12-amd64
VM_PACKAGES := $(VM_KERNEL_PKG) qemu-system-x86 busybox-static iputils-ping fio kmod
# The two test_read.py tests stay beside the read-back helpers they share.
VM_TESTS := tests/vm \
	tests/kernel/test_read.py::test_vlan_aware_bridge_port_vlans_and_vni_map \
	tests/kernel/test_read.py::test_vlan_vrf_bond_and_dummy
vm-deps: venv
	$(call apt_install,$(VM_PACKAGES),for the VM tier)
	@$(VENV)/bin/vng --version >/dev/null 2>&1 || $(PY) -m pip install -q virtme-ng

test-vm: vm-deps iscsi-initiator ovs-deps
	@if [ "$$(id -u)" != 0 ]; then echo "test-vm: skipped (needs root)"; exit 0; fi; \
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH scripts/vm-run.sh .cache/vm.log 1800 \
	  "unshare --net --mount --propagation private \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider $(VM_TESTS) -rs"; \
	status=$$?; cat .cache/vm.log; \
	grep -E '^[0-9]+ (passed|failed|skipped|error)' .cache/vm.log | tail -n 1 \
	  | grep -Eq '^[0-9]+ passed(, [0-9]+ warnings?)? in ' \
	  || { echo "test-vm: the VM tier did not pass (exit $$status)"; exit 1; }

# The kernel tier's peers: a DHCP server and client for `inet dhcp`, and
# libiscsi's clients for netcfgd's iSCSI target. All are bare binaries
# (dnsmasq-base has no service; the others none either), so installing them
# starts nothing on the host.
KERNEL_PACKAGES := isc-dhcp-client dnsmasq-base libiscsi-bin
# Open vSwitch (ovsdb-server, ovs-vswitchd, ovs-vsctl) for the kernel tier's
# OVS test (tests/kernel/test_ovs.py), unpacked into .cache/ with the library
# it needs and never installed: the package starts openvswitch-switch.service
# on the host. The test runs the daemons inside its sandbox.
OVS_DIR := .cache/openvswitch
OVS_DEBS := openvswitch-switch openvswitch-common libxdp1
.PHONY: ovs-deps
$(OVS_DIR)/.stamp:
	$(call apt_unpack,openvswitch,$(OVS_DEBS),$(OVS_DIR),Open vSwitch)
	@LD_LIBRARY_PATH=$(OVS_DIR)/usr/lib/x86_64-linux-gnu ldd $(OVS_DIR)/usr/sbin/ovsdb-server \
	  $(OVS_DIR)/usr/lib/openvswitch-switch/ovs-vswitchd $(OVS_DIR)/usr/bin/ovs-vsctl \
	  | grep 'not found' && { echo "Open vSwitch needs libraries this host lacks (above)"; exit 1; } || true
	@touch $@

ovs-deps: $(OVS_DIR)/.stamp

kernel-deps: $(OVS_DIR)/.stamp
	$(call apt_install,$(KERNEL_PACKAGES),for the kernel tier,:)

test-kernel: venv kernel-deps
	@if [ "$$(id -u)" = 0 ]; then \
	  unshare --net --mount --propagation private $(PY) -m pytest -q tests/kernel; \
	else echo "test-kernel: skipped (needs root for namespaces)"; fi

# The soundness property (tests/kernel/test_soundness.py, docs/soundness.md):
# check refuses at a line, or apply succeeds and converges. test-kernel runs a
# bounded, derandomized number of generated configs; this runs many more.
SOUNDNESS_EXAMPLES ?= 10000
.PHONY: soundness
soundness: venv
	@if [ "$$(id -u)" = 0 ]; then \
	  NETCFG_SOUNDNESS_EXAMPLES=$(SOUNDNESS_EXAMPLES) unshare --net --mount --propagation private \
	    $(PY) -m pytest -q -s -p no:cacheprovider tests/kernel/test_soundness.py; \
	else echo "soundness: skipped (needs root for namespaces)"; fi

test-unit: venv
	$(PY) -m pytest -q tests/unit tests/golden

# Scale with a loose wall-clock bound (tests/perf): kept out of the unit tier,
# where a loaded machine must not fail a run.
test-perf: venv
	$(PY) -m pytest -q tests/perf

# The data path (daemon/dataplane, docs/dataplane.md): both crates' cargo
# tests, a rebuild of the extension, then (root only, sandboxed like the
# kernel tier) libiscsi's clients and compliance suite against the target.
.PHONY: dataplane-deps test-dataplane
DATAPLANE_PACKAGES := libiscsi-bin
DATAPLANE_NOT_ROOT = echo "dataplane-deps: not root, not installing $$missing (the pytest tier needs root anyway)"
dataplane-deps:
	$(call apt_install,$(DATAPLANE_PACKAGES),for the data path tests,$(DATAPLANE_NOT_ROOT))

test-dataplane: venv dataplane-deps
	cd daemon/dataplane && cargo test -q --no-default-features
	cd daemon/dataplane/scsi && cargo test -q
	$(PY) -m pip install -q -e .
	@if [ "$$(id -u)" = 0 ]; then \
	  unshare --net --mount --propagation private $(PY) -m pytest -q tests/dataplane; \
	else echo "test-dataplane: pytest tier skipped (needs root for namespaces)"; fi

# The fleet path (docs/fleet.md): the Ansible collection fleet/ansible/ run by
# ansible-core against 20 fake hosts, each a network + mount namespace with its
# own netcfgd and sshd. ansible-core and ansible-lint go into their own venv so
# the product's stays small; Debian's sshd is unpacked into .cache/ and never
# installed (the package would start ssh.service on the host).
.PHONY: fleet-deps test-fleet
ANSIBLE_VENV := .cache/ansible-venv
OPENSSH_DIR := .cache/openssh
OPENSSH_DEBS := openssh-server openssh-sftp-server libwrap0
$(ANSIBLE_VENV)/.stamp:
	$(PYTHON) -m venv $(ANSIBLE_VENV)
	$(ANSIBLE_VENV)/bin/python -m pip install -q 'ansible-core>=2.17' ansible-lint
	@touch $@
$(OPENSSH_DIR)/.stamp:
	$(call apt_unpack,openssh,$(OPENSSH_DEBS),$(OPENSSH_DIR),openssh-server)
	@LD_LIBRARY_PATH=$(OPENSSH_DIR)/lib/x86_64-linux-gnu:$(OPENSSH_DIR)/usr/lib/x86_64-linux-gnu \
	  ldd $(OPENSSH_DIR)/usr/sbin/sshd | grep 'not found' \
	  && { echo "Debian's sshd needs libraries this host lacks (above)"; exit 1; } || true
	@touch $@
fleet-deps: venv $(ANSIBLE_VENV)/.stamp $(OPENSSH_DIR)/.stamp
	@command -v ssh >/dev/null || { echo "fleet-deps: the ssh client is missing: apt-get install openssh-client"; exit 1; }

test-fleet: fleet-deps
	@if [ "$$(id -u)" = 0 ]; then \
	  ANSIBLE_VENV=$(CURDIR)/$(ANSIBLE_VENV) SSHD=$(CURDIR)/$(OPENSSH_DIR)/usr/sbin/sshd \
	  unshare --net --mount --propagation private $(PY) -m pytest -q tests/fleet; \
	else echo "test-fleet: skipped (needs root for namespaces)"; fi

# Fuzzing, bounded in time (issue 14): the data path's cargo-fuzz targets
# (pdu, connection, cdb) for FUZZ_SECONDS each when cargo-fuzz and a nightly
# toolchain are there (`cargo install cargo-fuzz`), else the SCSI CDB
# property test for longer; then the hypothesis fuzzer over netcfgd's
# control-socket request parser (the unit tier runs it with 200 examples).
.PHONY: fuzz
FUZZ_SECONDS ?= 60
FUZZ_EXAMPLES ?= 2000
fuzz: venv
	@if cargo +nightly fuzz --version >/dev/null 2>&1; then \
	  for target in pdu connection; do \
	    (cd daemon/dataplane && nice -n 10 cargo +nightly fuzz run $$target -- \
	      -max_total_time=$(FUZZ_SECONDS)) || exit 1; done; \
	  (cd daemon/dataplane/scsi && nice -n 10 cargo +nightly fuzz run cdb -- \
	    -max_total_time=$(FUZZ_SECONDS)) || exit 1; \
	else \
	  echo "fuzz: no cargo-fuzz with a nightly toolchain (cargo install cargo-fuzz):" \
	    "the iSCSI targets are skipped, the CDB property test runs longer"; \
	  (cd daemon/dataplane/scsi && SCSI_FUZZ_CASES=100000 timeout $$(( $(FUZZ_SECONDS) * 3 )) \
	    cargo test -q --test fuzz_cdb) || exit 1; \
	fi
	NETCFG_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -p no:cacheprovider \
	  tests/unit/test_control.py -k fuzz

# The Debian packages (docs/debian.md): netcfg_VERSION_amd64.deb and
# netcfg-ifupdown_VERSION_all.deb (the ifupdown2 stand-in), built from a clean
# copy of the tree with Debian's own toolchain into .cache/deb/. test-deb lints
# them, then installs them with apt into a debootstrapped bookworm booted under
# qemu, twice: the second boot checks netcfg-ifupdown after it replaced Debian's
# ifupdown2 (tests/deb/: ~12 minutes). Root only: it installs build tools with
# apt, never the packages themselves (they go into the test's root filesystem only).
.PHONY: deb-deps deb test-deb
DEB_PACKAGES := debhelper dh-python pybuild-plugin-pyproject python3-all python3-setuptools \
	python3-wheel python3-mako python3-jsonschema cargo-web rustc-web libclang-dev fakeroot git \
	lintian debootstrap qemu-system-x86 $(VM_KERNEL_PKG) e2fsprogs
deb-deps:
	$(call apt_install,$(DEB_PACKAGES),to build and test the .deb)

deb: deb-deps
	tests/deb/build-deb.sh .cache/deb

test-deb: deb-deps
	tests/deb/test-deb.sh

demo: venv kernel-deps
	@echo "== render: $(EXAMPLE)"; $(NETCFG) render -c $(EXAMPLE) | head -30; echo "   ..."
	@echo; echo "== check"; $(NETCFG) check -c $(EXAMPLE)
	@echo; echo "== lowering, on the per-VLAN bridge example"
	@$(NETCFG) plan -c templates/examples/per-vlan-bridges.tmpl | sed -n '1,/^batch/p' | sed '$$d'
	@if [ "$$(id -u)" = 0 ]; then \
	  NETCFG_DEMO_SANDBOXED=1 unshare --net --mount --propagation private \
	    env NETCFG=$(NETCFG) EXAMPLE=$(EXAMPLE) scripts/demo-sandbox.sh; \
	else echo; echo "(apply, show and drift repair need root: run 'sudo make demo')"; fi

bench: bench-compile

bench-compile: bench-deps venv
	$(PY) bench/compile/run.py --netcfg $(NETCFG)

# bench/ublk (docs/benchmarks.md): netcfgd's ublk devices against the loop
# device, libublk's loop example and netcfgd's iSCSI, in the VM tier's kernel
# (the host's has no ublk). Release builds of the data path and of the
# example (its source is the libublk crate cargo already fetched).
LIBUBLK_VERSION := 0.4.8
# Five interleaved rounds of 6 s runs: TCG on a shared host swings 2-5x between runs.
BENCH_UBLK_ARGS ?= --rounds 5 --seconds 6
LIBUBLK_SRC := .cache/libublk-$(LIBUBLK_VERSION)
.PHONY: bench-ublk
bench-ublk: vm-deps iscsi-initiator
	@if [ "$$(id -u)" != 0 ]; then echo "bench-ublk: needs root"; exit 1; fi
	cd daemon/dataplane && nice -n 10 cargo build --release -q
	@test -d $(LIBUBLK_SRC) || cp -a $$(ls -d $${CARGO_HOME:-$$HOME/.cargo}/registry/src/*/libublk-$(LIBUBLK_VERSION) | head -n 1) $(LIBUBLK_SRC)
	cd $(LIBUBLK_SRC) && nice -n 10 cargo build --release -q --example loop
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH scripts/vm-run.sh .cache/bench-ublk.log 1500 \
	  "unshare --mount --propagation private $(CURDIR)/$(PY) bench/ublk/run.py $(BENCH_UBLK_ARGS)"; \
	  status=$$?; cat .cache/bench-ublk.log; exit $$status

# netcfgd: storm passes, CPU per 1000 events, repair latency (root; sandboxed by itself)
bench-storm: venv
	$(PY) bench/storm/run.py

# bench/ifupdown (docs/benchmarks.md): netcfg's ifup/ifquery/ifreload against
# Debian's ifupdown2 on a Proxmox node with 100 SDN vnets and on the 4094-VLAN
# file, each tool in its own private sandbox; also beside a running netcfgd.
.PHONY: bench-ifupdown
bench-ifupdown: bench-deps venv
	$(PY) bench/ifupdown/run.py --netcfgd --profile --commit HEAD

clean:
	rm -rf $(VENV) build *.egg-info bench/out .pytest_cache .hypothesis .cache

# The Kubernetes tier (issue 26, fleet/kubernetes/, docs/fleet.md): a real
# kube-apiserver v1.34.2 and etcd built from Go modules (cached under
# .cache/kubernetes; 958 s cold on this 2-core machine; .ci/run starts that
# build early, beside the other tiers), 10 fake nodes each with its own
# netcfgd and agent. ~90 s once built.
.PHONY: kubernetes-deps test-kubernetes
kubernetes-deps: venv
	$(PY) -m pip install -q 'kubernetes>=34,<35'
	tests/kubernetes/build-control-plane.sh
	@command -v kubectl >/dev/null || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubernetes-client; }
test-kubernetes: kubernetes-deps
	@if [ "$$(id -u)" != 0 ]; then echo "test-kubernetes: skipped (needs root)"; exit 0; fi; \
	unshare --net --mount --propagation private $(PY) -m pytest -q tests/kubernetes
