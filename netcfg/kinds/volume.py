"""A block volume served by netcfgd over iSCSI (see target) and/or ublk.

    volume db1
        backing /srv/volumes/db1.img
        size 100G            # creates a sparse file when it is missing
        ublk yes             # also expose it locally as /dev/ublkbN

Volumes live in no network namespace; targets in any namespace export them
by name with `lun N VOLUME`.
"""

from __future__ import annotations

from netcfg.kinds.base import Kind
from netcfg.model.model import VOLUME, ConfigObject, Model

BACKING, SIZE, UBLK = "backing", "size", "ublk"
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
        if obj.attrs.get(UBLK) is True:
            # Refused until netcfgd serves ublk: an accepted attribute that
            # does nothing would be a silent failure.
            report.error(obj.where(UBLK),
                         f"{obj.label()}: '{UBLK} yes' is not served yet: netcfgd exports "
                         f"volumes over iSCSI only (a target's 'lun N {obj.name}'); remove "
                         f"the line or write '{UBLK} no'", UBLK)
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
        _check_shared_backing(model, report)

    def create_params(self, obj: ConfigObject) -> dict:
        return {k: obj.attrs[k] for k in (BACKING, SIZE, UBLK) if k in obj.attrs}


def _check_shared_backing(model: Model, report) -> None:
    # Two volumes on one file would each cache and write it independently.
    seen: dict[str, ConfigObject] = {}
    volumes = [v for v in model.volumes.values() if isinstance(v.attrs.get(BACKING), str)]
    for volume in sorted(volumes, key=lambda o: o.loc):
        first = seen.setdefault(volume.attrs[BACKING], volume)
        if first is not volume:
            report.error(volume.where(BACKING),
                         f"{volume.label()}: {BACKING} {volume.attrs[BACKING]} is already the "
                         f"backing of volume {first.name} (at {first.loc}); export one volume "
                         f"from several targets instead of two volumes on one file", BACKING)


KIND = Volume()
