"""The config's ``ublk yes`` volumes as local block devices (docs/ublk.md).

    service = UblkService(dataplane, log)
    service.remove_dropped(model, out)  # before the volumes go: frees what may go
    ...                                 # TargetService.apply(model, pinned=service.pinned())
    service.add_wanted(model, out)      # after the volumes exist

``out`` (a netcfgd.dataplane.Outcome) collects what was done and what was
refused, each a line for the operator, as TargetService.apply's do.

The data path (``Dataplane.add_ublk``) makes /dev/ublkbN, or adopts the one
an earlier netcfgd left (USER_RECOVERY); this module gives the node its
owner and mode, keeps the stable link /dev/netcfg/NAME, and never pulls a
device from under a user: a device the config dropped while it is mounted
(in any mount namespace) or open stays, and ``status_json`` says what holds
it, until a later pass finds it free.

A kernel without ublk (no /dev/ublk-control after ``modprobe ublk_drv``)
gets one status line and an error in the log; iSCSI is not affected.
"""

from __future__ import annotations

import errno
import grp
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from netcfg.model.model import Model

LINK_DIR = "/dev/netcfg"
# udev's runtime rules: read before /etc's and /lib's, and gone at reboot with
# the devices. Named to sort after 50-udev-default.rules (GROUP="disk" on
# every block device) so that our OWNER, GROUP and MODE are the last word.
UDEV_RULES = "/run/udev/rules.d/99-netcfgd-ublk.rules"
DEFAULT_QUEUES, DEFAULT_DEPTH = 1, 64
DEVICE_MODE = 0o660


@dataclass(frozen=True)
class UblkSpec:
    volume: str
    id: int | None = None
    queues: int = DEFAULT_QUEUES
    depth: int = DEFAULT_DEPTH
    owner: tuple[int, int] | None = None

    # The volume under the device: a new backing, block size or size
    # re-creates the device (the driver here cannot resize one: UPDATE_SIZE
    # is 6.16+).
    backing: str = ""
    size: int | None = None
    block_size: int = 512

    def device_settings(self) -> tuple:
        """What the kernel fixes at ADD_DEV: changing it re-creates the device."""
        return self.id, self.queues, self.depth, self.backing, self.size, self.block_size


def ublk_specs(model: Model) -> dict[str, UblkSpec]:
    from netcfg.kinds.volume import parse_owner

    specs = {}
    for name, obj in model.volumes.items():
        a = obj.attrs
        if a.get("ublk") is True:
            owner = a.get("ublk-owner")
            specs[name] = UblkSpec(name, a.get("ublk-id"), a.get("ublk-queues", DEFAULT_QUEUES),
                                   a.get("ublk-depth", DEFAULT_DEPTH),
                                   parse_owner(owner) if owner else None,
                                   a.get("backing", ""), a.get("size"))
    return specs


def node_owner(spec: UblkSpec) -> tuple[int, int]:
    """Who owns the device node: the volume's ublk-owner, else root:disk, as
    udev's default rules give every block device. Set each time, so that
    removing ublk-owner gives the device back (issue 24, M9: the old owner
    kept it)."""
    if spec.owner is not None:
        return spec.owner
    try:
        disk = grp.getgrnam("disk").gr_gid
    except KeyError:    # no disk group in this system's database: root's
        disk = 0
    return 0, disk


def device_path(dev_id: int) -> str:
    return f"/dev/ublkb{dev_id}"


def holders(dev_id: int, proc: str = "/proc") -> list[str]:
    """What keeps /dev/ublkbN busy: mounts of it in any mount namespace
    (each namespace once) and processes that have it open, as `fuser -m`
    would find them, e.g. ``mounted on /mnt (mount namespace of pid 812)``,
    ``open by fio (pid 901)``."""
    try:
        rdev = os.stat(device_path(dev_id)).st_rdev
    except OSError:
        return []
    majmin = f"{os.major(rdev)}:{os.minor(rdev)}"
    found: list[str] = []
    seen_ns: set[str] = set()
    try:
        pids = sorted((p for p in os.listdir(proc) if p.isdigit()), key=int)
    except OSError:
        return []
    for pid in pids:
        if pid == str(os.getpid()):
            continue
        try:
            ns = os.readlink(f"{proc}/{pid}/ns/mnt")
            if ns not in seen_ns:
                seen_ns.add(ns)
                with open(f"{proc}/{pid}/mountinfo") as f:
                    for line in f:
                        fields = line.split()
                        if len(fields) > 4 and fields[2] == majmin:
                            found.append(f"mounted on {fields[4]} (mount namespace of pid {pid})")
            for fd in os.listdir(f"{proc}/{pid}/fd"):
                try:
                    st = os.stat(f"{proc}/{pid}/fd/{fd}")
                except OSError:
                    continue
                if st.st_rdev == rdev and (st.st_mode & 0o170000) == 0o060000:
                    with open(f"{proc}/{pid}/comm") as f:
                        found.append(f"open by {f.read().strip()} (pid {pid})")
                    break
        except OSError:
            continue    # the process went away while we looked
    return found


def _why(e: Exception) -> str:
    """The data path's message, without Python's "[Errno N]" prefix."""
    return (e.strerror if isinstance(e, OSError) else None) or str(e)


def _link(name: str, dev_id: int) -> None:
    """/dev/netcfg/NAME -> ../ublkbN, replaced atomically."""
    os.makedirs(LINK_DIR, mode=0o755, exist_ok=True)
    link = os.path.join(LINK_DIR, name)
    tmp = f"{link}.netcfg-tmp"
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    os.symlink(f"../ublkb{dev_id}", tmp)
    os.replace(tmp, link)


def _unlink(name: str) -> None:
    try:
        os.unlink(os.path.join(LINK_DIR, name))
    except FileNotFoundError:
        pass


class UblkService:
    """The ublk devices one Dataplane serves, kept in step with a model."""

    def __init__(self, dataplane: Any, log: logging.Logger, udev_rules: str = UDEV_RULES):
        self.dp = dataplane
        self.log = log
        self.udev_rules = udev_rules
        self.served: dict[str, tuple[UblkSpec, int, bool]] = {}   # name -> (spec, N, adopted)
        self.kept: dict[str, str] = {}        # dropped but held: name -> what holds it
        self.errors: dict[str, str] = {}      # name -> why it is not served
        self.unavailable: str | None = None   # why this kernel has no ublk
        self._probed = False
        self._load_refused: str | None = None   # modprobe's own words when it failed

    def pinned(self) -> set[str]:
        """Volumes that must stay open: their device is served or kept."""
        return set(self.served)

    def busy(self) -> bool:
        """Whether a later pass has work even if nothing changes: a kept
        device may be freed, a failed one may succeed."""
        return bool(self.kept or self.errors)

    def remove_dropped(self, model: Model, out: Any) -> None:
        """Remove the devices the model drops or changes, unless in use."""
        wanted = ublk_specs(model)
        for name, (spec, dev_id, _) in sorted(self.served.items()):
            new = wanted.get(name)
            if new is not None and new.device_settings() == spec.device_settings():
                self.kept.pop(name, None)
                continue
            held = holders(dev_id)
            if held:
                what = "; ".join(held)
                if self.kept.get(name) != what:
                    self.log.warning(f"ublk: volume {name}: {device_path(dev_id)} is kept, the "
                                     f"config no longer asks for it as it is but it is in use: "
                                     f"{what}")
                self.kept[name] = what
                continue
            try:
                self.dp.remove_ublk(name)
            except OSError as e:
                if e.errno == errno.EBUSY:
                    self.kept[name] = "mounted or held open exclusively"
                    continue
                self.errors[name] = f"ublk: volume {name}: cannot remove {device_path(dev_id)}: " \
                                    f"{_why(e)}"
                out.errors.append(self.errors[name])
                continue
            del self.served[name]
            self.kept.pop(name, None)
            self.errors.pop(name, None)
            _unlink(name)
            try:
                self._write_udev_rules()
            except OSError as e:
                out.errors.append(f"ublk: cannot rewrite {self.udev_rules} without "
                                  f"{device_path(dev_id)}: {_why(e)}")
            out.changes.append(f"ublk: volume {name}: {device_path(dev_id)} removed")

    def add_wanted(self, model: Model, out: Any) -> None:
        """Serve the model's ublk volumes that have no device yet (their
        volumes are open by now)."""
        wanted = ublk_specs(model)
        self.errors = {n: e for n, e in self.errors.items() if n in wanted}
        todo = {n: s for n, s in wanted.items() if n not in self.served}
        for name, spec in wanted.items():
            if name in self.served and name not in self.kept and self.served[name][0] != spec:
                self._set_node(name, spec, self.served[name][1])   # only the owner changed
        if not todo:
            return
        if not self._driver():
            out.errors.append(f"ublk: {self.unavailable}; not served as local devices: volume "
                              f"{', '.join(sorted(todo))}")
            return
        for name, spec in sorted(todo.items()):
            try:
                dev_id, adopted = self.dp.add_ublk(name, id=spec.id, queues=spec.queues,
                                                   depth=spec.depth)
                self.served[name] = (spec, dev_id, adopted)
                self._set_node(name, spec, dev_id)
            except (OSError, ValueError) as e:
                self.errors[name] = f"ublk: {_why(e)}"
                out.errors.append(self.errors[name])
                continue
            self.errors.pop(name, None)
            how = "adopted from the previous netcfgd" if adopted else "added"
            out.changes.append(f"ublk: volume {name}: {device_path(dev_id)} {how} "
                               f"({LINK_DIR}/{name})")

    def _set_node(self, name: str, spec: UblkSpec, dev_id: int) -> None:
        """The node's owner and mode, now and for good: udev re-applies its
        rules on every event of the device (a `change` from blkid, a
        partition rescan, `udevadm trigger`), and its default rules give a
        block device root:disk. So the owner goes into a udev rule too, and
        is also set here directly (a host, or a container, without udevd)."""
        path = device_path(dev_id)
        self.served[name] = (spec, dev_id, self.served[name][2])
        udevadm = shutil.which("udevadm")
        if udevadm:
            self._write_udev_rules()
            # Rules are re-read on reload only; then let udev finish the new
            # node's `add` (it may still be applying the old rules to it).
            for args in (("control", "--reload"), ("settle", "--timeout=10")):
                subprocess.run([udevadm, *args], capture_output=True, check=False, timeout=30)
        os.chown(path, *node_owner(spec))
        os.chmod(path, DEVICE_MODE)
        _link(name, dev_id)

    def udev_rules_text(self) -> str:
        """One line per served device: KERNEL=="ublkbN", its OWNER and GROUP
        when the volume has a ublk-owner, MODE 0660."""
        lines = ["# Written by netcfgd (daemon/netcfgd/ublk.py) for the ublk devices it serves:",
                 "# the owner and mode of each, kept through every udev event. Rewritten",
                 "# as devices come and go; do not edit."]
        for name, (spec, dev_id, _) in sorted(self.served.items(), key=lambda kv: kv[1][1]):
            owner = (f'OWNER="{spec.owner[0]}", GROUP="{spec.owner[1]}", '
                     if spec.owner is not None else "")
            lines.append(f'# volume {name}\nSUBSYSTEM=="block", KERNEL=="ublkb{dev_id}", '
                         f'{owner}MODE="{DEVICE_MODE:04o}"')
        return "\n".join(lines) + "\n"

    def _write_udev_rules(self) -> None:
        """Replace the rules file atomically (udev never reads half of it).
        Only where udev is installed: elsewhere nothing would read it."""
        if not shutil.which("udevadm"):
            return
        os.makedirs(os.path.dirname(self.udev_rules), mode=0o755, exist_ok=True)
        tmp = f"{self.udev_rules}.netcfg-tmp"
        with open(tmp, "w") as f:
            f.write(self.udev_rules_text())
        os.replace(tmp, self.udev_rules)

    def _driver(self) -> bool:
        """Whether the kernel has ublk; loads ublk_drv once when it is missing."""
        try:
            self.dp.ublk_features()
            self.unavailable = None
            return True
        except OSError as e:
            if not self._probed:
                self._probed = True
                try:
                    loaded = subprocess.run(["modprobe", "-q", "ublk_drv"], capture_output=True,
                                            text=True, check=False)
                    if loaded.returncode != 0:
                        self._load_refused = loaded.stderr.strip() or f"exit {loaded.returncode}"
                except OSError as err:
                    self._load_refused = f"modprobe: {_why(err)}"
                return self._driver()
            # A module that could not be loaded is not a kernel without ublk: under
            # a unit without CAP_SYS_MODULE the load itself is what was refused.
            self.unavailable = (f"{_why(e)}; loading ublk_drv failed ({self._load_refused})"
                                if self._load_refused else _why(e))
            return False

    def status_json(self, exported: set[str]) -> dict[str, Any]:
        """``exported``: volumes some target serves over iSCSI too."""
        devices = []
        for name, (spec, dev_id, adopted) in sorted(self.served.items()):
            entry: dict[str, Any] = {"volume": name, "device": device_path(dev_id),
                                     "link": f"{LINK_DIR}/{name}", "adopted": adopted,
                                     "state": "kept" if name in self.kept else "serving"}
            if name in self.kept:
                entry["held_by"] = self.kept[name]
            if name in exported:
                entry["warning"] = ("also exported over iSCSI: SCSI reservations do not "
                                    "fence this local writer")
            devices.append(entry)
        for name, why in sorted(self.errors.items()):
            if name not in self.served:
                devices.append({"volume": name, "state": "error", "error": why})
        return {"unavailable": self.unavailable, "devices": devices}
