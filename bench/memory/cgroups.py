"""The memory benchmark's cgroups: the cgroup v1 ``cpu`` group whose CFS quota holds the worker to
a Lambda size's share of a core (and the ``cpuacct`` group that counts its CPU), whether they can be
set here, the removal of groups a killed run left, and the busy loop that checks a quota holds."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

CPU_ROOT = Path("/sys/fs/cgroup/cpu")
CPUACCT_ROOT = Path("/sys/fs/cgroup/cpuacct")
GROUP_PREFIX = "punctual-bench-memory-"

# ------------------------------------------------------------------------------------- cgroups


def cgroups_unavailable() -> str | None:
    """Why the CPU quota cannot be set here, or None."""
    if not (CPU_ROOT / "cpu.cfs_quota_us").exists():
        return f"no cgroup v1 cpu controller at {CPU_ROOT}"
    if not os.access(CPU_ROOT, os.W_OK):
        return f"{CPU_ROOT} is not writable (run as root)"
    return None


def _owner_alive(name: str) -> bool:
    """Whether the bench that made a group (its pid follows the prefix) still runs."""
    try:
        pid = int(name[len(GROUP_PREFIX) :].split("-", 1)[0])
    except ValueError:
        return True
    return Path(f"/proc/{pid}").exists()


def remove_stale_groups() -> None:
    """Empty groups left by a bench that was killed (SIGKILL skips the clean-up)."""
    for root in (CPU_ROOT, CPUACCT_ROOT):
        if not root.exists():
            continue
        for path in root.glob(GROUP_PREFIX + "*"):
            if not _owner_alive(path.name):
                with contextlib.suppress(OSError):
                    path.rmdir()


class Group:
    """A cgroup v1 group of one controller (``cpu`` with a CFS quota, or ``cpuacct``)."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.path = root / name
        self.path.mkdir()

    def set_quota(self, period_us: int, quota: int) -> None:
        (self.path / "cpu.cfs_period_us").write_text(f"{period_us}\n")
        (self.path / "cpu.cfs_quota_us").write_text(f"{quota}\n")

    def add(self, pid: int) -> None:
        """Move the process, every thread of it (``cgroup.procs``), and its children."""
        (self.path / "cgroup.procs").write_text(f"{pid}\n")
        for child in _children(pid):
            with contextlib.suppress(OSError):
                (self.path / "cgroup.procs").write_text(f"{child}\n")

    def holds(self, pid: int) -> bool:
        """Whether every thread of ``pid`` is in this group."""
        controller = self.root.name
        relative = "/" + self.path.name
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return False
        for tid in tids:
            try:
                lines = Path(f"/proc/{pid}/task/{tid}/cgroup").read_text().splitlines()
            except OSError:
                continue  # the thread ended
            for line in lines:
                _, controllers, path = line.split(":", 2)
                if controller in controllers.split(",") and path != relative:
                    return False
        return True

    def read(self, name: str) -> str:
        return (self.path / name).read_text()

    def throttling(self) -> dict[str, int]:
        """``cpu.stat``: periods, throttled periods, throttled time (ns)."""
        stat: dict[str, int] = {}
        for line in self.read("cpu.stat").splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                stat[key] = int(value)
        return stat

    def usage_ns(self) -> int:
        return int(self.read("cpuacct.usage"))

    def remove(self) -> None:
        """Move what is left to the root group, then remove the group."""
        with contextlib.suppress(OSError):
            for tid in self.read("tasks").split():
                with contextlib.suppress(OSError):
                    (self.root / "tasks").write_text(f"{tid}\n")
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                out += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
    return out


_BUSY = (
    "import os, sys, time\n"
    "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "t, c = time.monotonic(), time.process_time()\n"
    "while time.monotonic() - t < float(sys.argv[2]): pass\n"
    "print((time.process_time() - c) / (time.monotonic() - t))\n"
)


def check_quota(group: Group, seconds: float = 0.6) -> float:
    """The share of a core a busy loop gets in ``group`` (it should be about quota / period)."""
    answer = subprocess.run(
        [sys.executable, "-c", _BUSY, str(group.path / "cgroup.procs"), str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    )
    return round(float(answer.stdout.strip()), 3)
