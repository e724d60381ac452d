"""Lightweight lowering: the same forwarding with far fewer kernel devices.

Two rewrites of the desired model, before it is diffed against the kernel:

* Per-VLAN bridges (``brV`` with ports ``swp1.V swp2.V ...`` and no L3 of
  their own) become one VLAN-aware bridge ``vbrN`` whose ports are the lower
  devices ``swp1 swp2 ...``, each with ``bridge-vids`` = the VLANs it carried.
  A per-VNI vxlan in such a bridge becomes an access port (``bridge-access V``)
  of ``vbrN``.
* Per-VNI vxlans that are access ports of one VLAN-aware bridge and share
  their tunnel settings become one ``vxlan-vnifilter`` device ``vxlanN`` with
  ``bridge-vlan-vni-map V=N`` (kernel ``external vnifilter`` + vlan_tunnel).

For 4094 VLANs on 48 ports that is one bridge instead of 4094 bridges and
196,512 VLAN devices: ~200k fewer netdevs and some 27 GB of kernel memory
(figures from DESIGN.md, "Kernel edge").

Why it is exact (what a frame sees is the same before and after):

1. Per-VLAN, a frame tagged V on P reaches P.V (the vlan device takes it
   before anything else), then bridge brV, whose ports are exactly the P.V.
   VLAN-aware, it reaches vbr with ingress filtering on: allowed iff V is in
   P's bridge-vids, i.e. iff P.V existed. Forwarding, flooding and learning
   are per (MAC, VLAN) in vbr and per bridge before: the same domains, since
   each VLAN is bridged by one bridge of a group (checked). Egress re-tags
   with V exactly as P.V did; the vids are tagged, never untagged.
2. Untagged frames on P and tagged frames of VLANs nobody took were not
   bridged before (P has no address, master or other user, all checked)
   and are dropped by vbr's filter after: vbr has bridge-vlan-default-pvid
   0, so neither it nor a port gets a PVID, and no pvid is written. A VLAN subinterface of P that is
   not lowered (its bridge was refused, or it is routed) keeps its frames:
   the kernel hands a tagged frame to the VLAN device of its VID
   (vlan_do_receive) before the bridge's rx_handler sees it, and sending
   through it does not involve the bridge; and its VID is not among vbr's
   VLANs on P, since a device has one subinterface per VID.
3. Bridge-wide behaviour that a per-VLAN bridge had per VLAN is refused, not
   approximated: STP (one tree for all VLANs), L3 config (it would need a
   VLAN interface), admin state, MTU, MAC and any other per-bridge
   attribute. IGMP/MLD snooping is kept per VLAN: a snooping group becomes a
   bridge with mcast_vlan_snooping, which gives each VLAN its own querier and
   router-port state, as each per-VLAN bridge had. Ageing and snooping are
   bridge-wide settings, so a group must agree on them.
4. A per-VNI vxlan carried untagged frames of the bridge's one VLAN V: as an
   access port of V, or as VNI N in a vnifilter device whose tunnel map says
   V=N, it carries the same frames with the same VNI. Merged vxlans must
   agree on every device attribute (local address, port, learning, MTU) and
   have no remote: per-VNI head-end replication would need per-VNI FDB
   entries, which lowering does not write.
5. Lowering removes only what nothing else names: an object named by
   anything that stays (a route's dev, a macvlan, a bond, another bridge),
   or declared in a file marked ``# netcfg: lower=off``, stops it, and the
   plan says so (a Refusal with file:line).

Not covered, on purpose: what the kernel itself sends from and answers on
the per-VLAN bridges' and the lower ports' IPv6 link-local addresses (DAD,
router solicitations, MLD reports). netcfg configured none of it, and a
bridge or lower port with any address is refused.

References are found through each kind's ``references`` hook (registry),
except for the plain bridges and VLANs indexed directly (see _index);
device sizes are the kinds' kernel_bytes.

One module per rewrite: ``bridges`` (per-VLAN bridges to a VLAN-aware one),
``vxlans`` (per-VNI vxlans to one vnifilter device); ``lowering`` has the entry
point, ``lower()``, with the index both read and the assembly of the result;
``common`` the limits, sizes and helpers they share; ``report`` what the plan
prints about it.
"""
