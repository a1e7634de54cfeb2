"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages ending in a NUL byte on file descriptors 3 and 4), for tests that open pages,
follow links and type into them. Nothing but the standard library: no websocket client, no
driver binary.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
SKIP_REASON = "no chromium binary found (make system-deps installs Debian's chromium)"


class Browser:
    """One headless Chromium and one page in it; ``errors`` collects every console error,
    uncaught exception and failed load the page reports."""

    def __init__(self, profile: Path, timeout: float = 60.0) -> None:
        assert CHROMIUM is not None, SKIP_REASON
        self.timeout = timeout
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def to_fds_3_and_4() -> None:  # the child's ends at the numbers Chromium reads
            high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        cmd = [CHROMIUM, "--headless", "--disable-gpu", "--no-first-run"]
        cmd += [
            f"--user-data-dir={profile}",
            "--remote-debugging-pipe",
            "--no-default-browser-check",
        ]
        if os.geteuid() == 0:
            cmd.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=to_fds_3_and_4,
            close_fds=False,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict] = []
        self.errors: list[str] = []
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})
        self._session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def close(self) -> None:
        with contextlib.suppress(Exception):  # it may be gone already
            self._call("Browser.close")
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for fd in (self._to_browser, self._from_browser):
            os.close(fd)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # the protocol
    def _send(self, method: str, params: dict | None, session: str | None) -> int:
        self._next_id += 1
        message: dict = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _read(self, deadline: float) -> dict | None:
        """The next message, or None when the deadline passes first."""
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                return None
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message = json.loads(raw)
        if "method" in message:
            self._event(message)
        return message

    def _event(self, message: dict) -> None:
        self._events.append(message)
        method, p = message["method"], message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = p["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            self.errors.append(f"exception: {text}")
        elif method == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
            self.errors.append(f"console.{p['type']}: {args}")
        elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
            entry = p["entry"]
            self.errors.append(f"log: {entry['text']} {entry.get('url', '')}".strip())

    def _call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._read(deadline)
            if message is None:
                raise TimeoutError(f"chromium did not answer {method} in {self.timeout} s")
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def call(self, method: str, params: dict | None = None) -> dict:
        return self._call(method, params, self._session)

    # what tests use
    def open(self, url: str, settle: float = 0.3) -> None:
        """Load ``url`` and wait for its load event, then ``settle`` seconds for late errors."""
        self._events.clear()
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + self.timeout
        while not any(e["method"] == "Page.loadEventFired" for e in self._events):
            if self._read(deadline) is None:
                raise TimeoutError(f"{url}: no load event in {self.timeout} s")
        end = time.monotonic() + settle
        while self._read(end) is not None:
            pass

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}...: {result['exceptionDetails']}")
        return result["result"].get("value")
