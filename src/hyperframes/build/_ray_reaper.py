"""Ends the local Ray instance a build started, when the build's driver ends (even by kill -9).

Run by path (``python -I .../_ray_reaper.py``, importing nothing of hyperframes) as the leader of
a process group of its own, which the driver joins while ``ray.init`` starts the instance, so
that every Ray process (GCS, raylet, the dashboard and runtime-env agents, the workers the
raylet starts later) is in this group; the driver then goes back to its own group. The reaper
reads its stdin, a pipe whose other end only the driver holds: end of file means the driver
has closed it (after ``ray.shutdown``) or is gone. It then stops the rest of its group: SIGTERM,
and SIGKILL for what is still there after a second.

Why: on Linux Ray ties the processes it starts to the driver with a parent-death signal, but
the agents are the raylet's children, not the driver's; once the raylet is gone they wait for
it and then try for about a minute to report to a GCS that is gone too (``ray
_private/process_watcher.py``). Ray's own reaper, which does this, runs only where the kernel
has no parent-death signal.
"""

from __future__ import annotations

import os
import signal
import sys
import time

#: how long the group has to end on SIGTERM before SIGKILL
GRACE_SECONDS = 1.0


def others() -> list[int]:
    """The live processes of this process group but this one (zombies excluded)."""
    me, group = os.getpid(), os.getpgrp()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state, _, pgrp = f.read().rsplit(b")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(pgrp) == group and state != b"Z":
            found.append(int(name))
    return found


def reap() -> None:
    """Stop every other process of the group: SIGTERM, then SIGKILL after the grace period."""
    if not others():
        return
    os.killpg(0, signal.SIGTERM)  # this process ignores it
    deadline = time.monotonic() + GRACE_SECONDS
    while others() and time.monotonic() < deadline:
        time.sleep(0.05)
    if others():
        os.killpg(0, signal.SIGKILL)  # this process too


def main() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):
        pass
    reap()


if __name__ == "__main__":
    main()
