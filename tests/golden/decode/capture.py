"""Capture decode golden cases from the real kernel (run as root, sandboxed):

    unshare --net --mount --propagation private \
        .venv/bin/python tests/golden/decode/capture.py [CASE...]

Each case builds a scene with `ip` in the sandbox's namespaces, reads them
with netcfg's own sockets and read_model() (recording every dump reply),
and writes tests/golden/decode/<case>/: <netns>.dumps, nsids.json and
model.json (`netcfg show -o json`'s form). /run/netns is a tmpfs mounted in
the sandbox's own mount namespace, so nothing is left on the host.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE), str(HERE.parents[2])]

from replay import RecordingSocket, file_name, write_dumps  # noqa: E402

from netcfg.compile.jsonform import model_to_json  # noqa: E402
from netcfg.kernel.read import netns_ids, read_model  # noqa: E402
from netcfg.kernel.session import KernelSession  # noqa: E402

P = "proto 110"   # RTPROT_NETCFG: the routes read_namespace() reads

SCENES = {
    "decode-bridge-ports-knobs": [
        "ip link add br0 type bridge forward_delay 400 stp_state 0 hello_time 300 "
        "max_age 2500 ageing_time 10000 priority 4096",
        "ip link add d0 type veth peer name d0p", "ip link add d1 type veth peer name d1p",
        "ip link set d0 master br0", "ip link set d1 master br0",
        "ip link set dev d1 type bridge_slave cost 50 priority 20",
        "ip link set br0 mtu 1400",
        "ip address add 192.0.2.1/24 dev br0", "ip address add 2001:db8::1/64 dev br0 nodad",
        "ip link set d0 up", "ip link set d1 up", "ip link set br0 up",
        f"ip route add 198.51.100.0/24 via 192.0.2.254 dev br0 {P}",
    ],
    "decode-veth-across-namespaces": [
        "ip netns add tenant1",
        "ip link add vh1 type veth peer name vt1 netns tenant1",
        "ip address add 10.1.0.1/30 dev vh1", "ip link set vh1 up",
        "ip -n tenant1 address add 10.1.0.2/30 dev vt1",
        "ip -n tenant1 address add 2001:db8:1::2/64 dev vt1 nodad",
        "ip -n tenant1 link set vt1 up", "ip -n tenant1 link set lo up",
        f"ip -n tenant1 route add default via 10.1.0.1 dev vt1 {P}",
        f"ip -n tenant1 route add 2001:db8:99::/48 via 2001:db8:1::1 dev vt1 {P}",
        f"ip route add 10.100.0.0/16 via 10.1.0.2 dev vh1 metric 50 {P}",
        "ip link add va type veth peer name vb",
        "ip address add 10.2.0.1/31 dev va", "ip link set va mtu 9000",
    ],
    "decode-vxlan-macvlan": [
        "ip link add up0 type veth peer name up0p", "ip link set up0 up",
        "ip address add 203.0.113.1/24 dev up0",
        "ip link add vx100 type vxlan id 100 local 203.0.113.1 dstport 4789 dev up0 "
        "ttl 64 nolearning",
        # Head-end replication remotes (vxlan-remoteip): forwarding entries.
        "bridge fdb append 00:00:00:00:00:00 dev vx100 dst 203.0.113.2",
        "bridge fdb append 00:00:00:00:00:00 dev vx100 dst 203.0.113.3",
        "ip link add mv0 link up0 type macvlan mode bridge",
        "ip link add mv1 link up0 type macvlan mode private",
        "ip address add 203.0.113.10/24 dev mv0",
        "ip link set vx100 up", "ip link set mv0 up",
        f"ip route add 100.64.0.0/10 dev mv0 {P}",
    ],
}


def sh(command: str) -> None:
    subprocess.run(command.split(), check=True)


def capture(case: str, commands: list[str]) -> None:
    for command in commands:
        sh(command)
    with KernelSession() as session:
        names = ["", *sorted(session.existing_namespaces())]
        session.open_sockets(names)
        fds = {n: session.netns(n).fd for n in names}
        nsids = {view: netns_ids(session.socket(view), {n: fd for n, fd in fds.items()
                                                          if n != view})
                 for view in names}
        sockets = {n: RecordingSocket(session.socket(n)) for n in names}
        model, _states = read_model(sockets, nsids)
    out = HERE / case
    out.mkdir(exist_ok=True)
    for old in out.glob("*.dumps"):
        old.unlink()
    for netns, sock in sockets.items():
        write_dumps(out / file_name(netns), sock.dumps)
    (out / "nsids.json").write_text(json.dumps(
        {view: {str(k): v for k, v in ids.items()} for view, ids in nsids.items()},
        indent=2, sort_keys=True) + "\n")
    (out / "model.json").write_text(json.dumps(model_to_json(model), indent=2) + "\n")
    (out / "scene.sh").write_text("".join(f"{c}\n" for c in commands))
    print(f"{case}: {', '.join(file_name(n) for n in names)}")
    # Clean the scene for the next case.
    for netns in names[1:]:
        sh(f"ip netns delete {netns}")
    for line in subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        name = line.split(": ")[1].split("@")[0]
        if name != "lo":
            subprocess.run(["ip", "link", "delete", name], capture_output=True)


def main() -> None:
    if os.getuid() != 0:
        sys.exit("capture.py: run as root inside `unshare --net --mount --propagation private`")
    os.makedirs("/run/netns", exist_ok=True)
    sh("mount -t tmpfs netcfg-capture /run/netns")
    sh("ip link set lo up")
    for case in sys.argv[1:] or sorted(SCENES):
        capture(case, SCENES[case])


if __name__ == "__main__":
    main()
