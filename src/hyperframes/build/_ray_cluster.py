"""Joining a Ray cluster, or starting one on this machine that ends with the build.

:func:`connect` joins the cluster at an address (or ``RAY_ADDRESS``), else starts a local Ray
instance, and gives back whether the build must shut it down. A local instance ends with the
driver however the driver ends: its processes are started in the process group of a small
reaper that stops the group when the driver's pipe to it closes
(:mod:`hyperframes.build._ray_reaper`; on Linux Ray ties only its direct children to the
driver, and its dashboard and runtime-env agents outlived a kill -9 by about a minute).
Ctrl-C reaches the driver meanwhile: while Ray starts, the terminal is given to that group,
whose Ray processes block SIGINT. The build's own SIGINT and SIGTERM handlers are kept (Ray's
core installs its own).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from .._core._errors import ConfigError, install_command

__all__ = ["connect", "import_ray"]


def import_ray():
    """The ``ray`` module, or a ConfigError saying how to install it."""
    try:
        import ray  # optional (hyperframes-video[ray]), and slow to import: only for engine "ray"
    except ImportError:
        raise ConfigError(
            f"engine 'ray' needs Ray, which is not installed: {install_command('ray')}"
        ) from None
    return ray


class _Reaper:
    """The process that ends the local Ray instance a build started once the driver is gone
    (:mod:`hyperframes.build._ray_reaper`): started before ``ray.init``, its process group
    joined by the driver while Ray starts (so every Ray process is in it), left after.
    :meth:`start` gives None where this cannot be done (not Linux, where Ray has its own
    reaper; a driver that leads its session and so cannot change group)."""

    def __init__(self, proc: subprocess.Popen, own_group: int) -> None:
        self.proc, self.own_group = proc, own_group
        self.tty: int | None = None  # the terminal whose foreground the driver's group was

    @classmethod
    def start(cls, *, terminal: bool) -> _Reaper | None:
        """The reaper, its group joined (``terminal``: with the terminal, see below)."""
        if not sys.platform.startswith("linux") or os.getsid(0) == os.getpid():
            return None
        script = Path(__file__).with_name("_ray_reaper.py")
        proc = subprocess.Popen(
            [sys.executable, "-I", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=os.setpgrp,  # its own group, which the driver joins
        )
        own = os.getpgrp()
        reaper = cls(proc, own)
        try:
            os.setpgid(0, proc.pid)
        except OSError:
            reaper.close()
            return None
        if terminal:
            reaper._follow_terminal(proc.pid)
        return reaper

    def _follow_terminal(self, group: int) -> None:
        """When the driver's group had the terminal, give it to ``group`` meanwhile, so that
        Ctrl-C still reaches the driver while Ray starts (Ray's processes block SIGINT, the
        reaper ignores it)."""
        with contextlib.suppress(OSError, ValueError, AttributeError):
            fd = sys.stdin.fileno()
            if os.isatty(fd) and os.tcgetpgrp(fd) == self.own_group:
                os.tcsetpgrp(fd, group)
                self.tty = fd

    def leave(self) -> None:
        """Go back to the driver's own process group (and give it the terminal back)."""
        try:
            os.setpgid(0, self.own_group)
        except OSError:  # that group has gone meanwhile: one of our own
            os.setpgid(0, 0)
        if self.tty is not None:
            with contextlib.suppress(OSError):
                os.tcsetpgrp(self.tty, os.getpgrp())
            self.tty = None

    def close(self) -> None:
        """Tell the reaper the build is over: it ends what is left of the instance."""
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _start_local(ray) -> _Reaper | None:
    """``ray.init`` of a Ray instance on this machine whose processes end with the driver."""
    main = threading.current_thread() is threading.main_thread()
    # changing groups and the terminal's foreground may raise SIGTTOU, which stops a process
    before = signal.signal(signal.SIGTTOU, signal.SIG_IGN) if main else None
    reaper = _Reaper.start(terminal=main)
    try:
        ray.init(address="local", include_dashboard=False, logging_level=logging.WARNING)
    except BaseException:
        if reaper is not None:
            reaper.leave()
            reaper.close()
        raise
    else:
        if reaper is not None:
            reaper.leave()
    finally:
        if before is not None:
            signal.signal(signal.SIGTTOU, before)
    return reaper


def connect(ray, address: str | None) -> tuple[bool, _Reaper | None]:
    """Join the cluster at ``address`` (or ``RAY_ADDRESS``), else start a Ray instance on this
    machine; (True when this call started or joined it, and so must shut it down; the reaper
    of the instance it started, to close after ``ray.shutdown``). A process already connected
    (its own ``ray.init``) keeps its connection, whatever ``address`` says."""
    if ray.is_initialized():
        return False, None
    reaper = None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no report home from a build
    address = address or os.environ.get("RAY_ADDRESS") or None
    # Ray's core installs its own SIGTERM handler (log and exit); the build's own, which stops
    # it like Ctrl-C (finished videos kept, exit status 143), must stay in charge
    handlers = _signal_handlers()
    try:
        if address:
            ray.init(address=address, logging_level=logging.WARNING)
        else:
            reaper = _start_local(ray)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = f"at {address}" if address else "on this machine"
        hint = ""
        if address and os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
            # Ray turns token authentication on for the clusters it starts, but never for a
            # driver joining one by its address: that takes RAY_AUTH_MODE=token and the token
            hint = (
                "; if the cluster uses token authentication (Ray's default), set "
                "RAY_AUTH_MODE=token and give this machine the head's token "
                "(~/.ray/auth_token, or RAY_AUTH_TOKEN)"
            )
        raise ConfigError(
            f"ray_address: cannot start or join a Ray cluster {where}: {e}{hint}"
        ) from None
    finally:
        _restore(handlers)
    return True, reaper


def _signal_handlers() -> dict:
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


def _restore(handlers: dict) -> None:
    for sig, handler in handlers.items():
        if handler is not None:
            signal.signal(sig, handler)
