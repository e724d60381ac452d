import os, subprocess, struct, json
from netcfg.kernel.nl import RtnlSocket, Request
from netcfg.kernel.nlmsg import *

def run(name, reqs):
    with RtnlSocket.open() as s:
        r = s.transact(reqs)
        print(name, [str(e) if e else None for e in r.errors])
IFLA_IFALIAS=20
def nl(ifname, extra=b"", li=b""):
    return Request(RTM_NEWLINK, NLM_F_CREATE|NLM_F_EXCL, ifinfomsg()+rtattr_str(IFLA_IFNAME, ifname)+extra+li)
def sh(c):
    print(subprocess.run(c, shell=True, capture_output=True, text=True).stdout[:3000])

def test_explore():
    af = nested(IFLA_AF_SPEC, [nested(AF_INET6, [rtattr(8, bytes([1]))])])
    run("veth alias", [nl("v0", rtattr_str(IFLA_IFALIAS, "hello world"), linkinfo("veth", [rtattr(1, ifinfomsg()+rtattr_str(IFLA_IFNAME,"v0p"))]))])
    sh("ip -d -j link show v0")
    run("bridge afspec", [nl("b0", af, linkinfo("bridge"))])
    run("bridge plain", [nl("b1", b"", linkinfo("bridge"))])
    run("set af by name", [Request(RTM_NEWLINK, 0, ifinfomsg()+rtattr_str(IFLA_IFNAME, "b1")+af)])
    run("set alias by name", [Request(RTM_NEWLINK, 0, ifinfomsg()+rtattr_str(IFLA_IFNAME, "b1")+rtattr_str(IFLA_IFALIAS, "x y"))])
    sh("ip -d -j link show b1")
    sh("ip -d -j link show b0")
    subprocess.run("ip link add b5 addrgenmode none type bridge", shell=True)
    sh("ip -d -j link show b5")
    assert 0
