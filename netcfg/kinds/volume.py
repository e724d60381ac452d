"""A block volume served by netcfgd over iSCSI (see target) and/or ublk.

    volume db1
        backing /srv/volumes/db1.img
        size 100G            # creates a sparse file when it is missing
        ublk yes             # also expose it locally as /dev/ublkbN, /dev/netcfg/db1
        ublk-id 7            # /dev/ublkb7 (default: the kernel picks)
        ublk-queues 2        # hardware queues, one netcfgd thread each (default 1)
        ublk-depth 128       # requests in flight per queue (default 128)
        ublk-owner 1000:1000 # owner of the device node, mode 0660 (default root:disk)

Volumes live in no network namespace; targets in any namespace export them
by name with `lun N VOLUME`. A ublk device has no namespace either: a tenant
gets it through its container runtime's device list (docs/ublk.md).
"""

from __future__ import annotations

from netcfg.kinds.base import Kind, repeated
from netcfg.model.errors import quote
from netcfg.model.model import VOLUME, ConfigObject, Model
from netcfg.model.names import volume_name_problem

BACKING, SIZE, UBLK = "backing", "size", "ublk"
UBLK_ID, UBLK_QUEUES, UBLK_DEPTH, UBLK_OWNER = "ublk-id", "ublk-queues", "ublk-depth", "ublk-owner"
UBLK_TUNING = (UBLK_ID, UBLK_QUEUES, UBLK_DEPTH, UBLK_OWNER)
MAX_ID = 4294967294  # (uid_t)-1 means "unchanged" to chown
SECTOR = 512  # the block layer's unit; iSCSI and ublk both count in it
# The largest file Linux can address (off_t), in whole sectors: what the
# data path can serve. A file system may allow less (ext4: 16T); that is
# found when netcfgd creates or grows the file, and reported then.
MAX_SIZE = (1 << 63) - SECTOR


class Volume(Kind):
    name = "volume"
    section = VOLUME
    traits = ()
    # Served by netcfgd, not a kernel network object.
    kernel_bytes = 0

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        why = volume_name_problem(obj.name)
        if why:
            # quote(): the name itself may hold an ESC; label() would print it raw.
            report.error(obj.loc, f"volume {quote(obj.name)}: not a valid volume name: {why} "
                         f"(a name such as db1: it becomes /dev/netcfg/NAME)")
            return
        backing = obj.attrs.get(BACKING)
        if backing is None and BACKING not in obj.locs:
            report.error(obj.loc,
                         f"{obj.label()}: a volume needs '{BACKING} PATH', the file or block "
                         f"device that holds its data", BACKING)
        elif backing is not None and not backing.startswith("/"):
            report.error(obj.where(BACKING),
                         f"{obj.label()}: {BACKING} '{backing}' is a relative path; write an "
                         f"absolute one (/srv/volumes/{obj.name}.img): netcfgd does not run in "
                         f"the directory of the config", BACKING)
        for attr in UBLK_TUNING:
            if attr in obj.attrs and obj.attrs.get(UBLK) is not True:
                report.error(obj.where(attr),
                             f"{obj.label()}: {attr} only applies to a ublk device; add "
                             f"'{UBLK} yes' to the volume or remove {attr}", attr)
        owner = obj.attrs.get(UBLK_OWNER)
        if owner is not None and parse_owner(owner) is None:
            report.error(obj.where(UBLK_OWNER),
                         f"{obj.label()}: {UBLK_OWNER} '{owner}' is not UID:GID; write two "
                         f"numbers from 0 to {MAX_ID} (ublk-owner 1000:1000)", UBLK_OWNER)
        size = obj.attrs.get(SIZE)
        if size is not None and (size <= 0 or size % SECTOR):
            report.error(obj.where(SIZE),
                         f"{obj.label()}: {SIZE} {size} bytes is not a positive multiple of "
                         f"{SECTOR}-byte sectors; use a size like 10G or 512M", SIZE)
        elif size is not None and size > MAX_SIZE:
            report.error(obj.where(SIZE),
                         f"{obj.label()}: {SIZE} {size} bytes is more than a Linux file can "
                         f"hold ({MAX_SIZE} bytes, 8E less one sector); use a size like 10G or "
                         f"2T", SIZE)

    def check_model(self, model: Model, report) -> None:
        for attribute, type_, what, fix in UNIQUE:
            volumes = [v for v in model.volumes.values()
                       if isinstance(v.attrs.get(attribute), type_)]
            for volume, first in repeated(volumes, lambda v: v.attrs[attribute]):
                report.error(volume.where(attribute),
                             f"{volume.label()}: {attribute} {volume.attrs[attribute]} is "
                             f"already the {what} of volume {first.name} (at {first.loc}); "
                             f"{fix}", attribute)

    def create_params(self, obj: ConfigObject) -> dict:
        return {k: obj.attrs[k] for k in (BACKING, SIZE, UBLK, *UBLK_TUNING) if k in obj.attrs}


# What no two volumes may share: (attribute, its type once valid, what it is
# to the volume, the fix). Two volumes on one file would each cache and write
# it independently; a ublk device number names one device.
UNIQUE = (
    (BACKING, str, "backing",
     "export one volume from several targets instead of two volumes on one file"),
    (UBLK_ID, int, "device number",
     f"give each volume its own, or leave {UBLK_ID} out to let the kernel pick"),
)


def parse_owner(text: str) -> tuple[int, int] | None:
    """``UID:GID`` -> (uid, gid), or None when it is not two numbers in range."""
    uid, sep, gid = text.partition(":")
    if not (sep and uid.isdigit() and gid.isdigit() and uid.isascii() and gid.isascii()):
        return None
    ids = int(uid), int(gid)
    return ids if max(ids) <= MAX_ID else None


KIND = Volume()
