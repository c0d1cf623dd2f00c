"""A real headless Chromium driven over the DevTools protocol: open a page, record what the
browser itself saw (console errors, requests), measure elements, take a screenshot.

The browser is started here with a throwaway profile and stopped on exit. In CI (`CI` set) a
missing Chromium fails the test; elsewhere it skips it.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect
from websockets.sync.connection import Connection

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
)
STARTUP_SECONDS = 60.0
PAGE_SECONDS = 60.0

CHARTS_JS = """
JSON.stringify(Array.from(document.querySelectorAll('svg')).map(svg => {
  const box = svg.getBoundingClientRect();
  return {name: svg.dataset.chart || '', x: box.left + window.scrollX,
          y: box.top + window.scrollY, width: box.width, height: box.height,
          shapes: svg.querySelectorAll('path, rect, use, text, line').length};
}))
"""


def chromium_path() -> str:
    """Debian's chromium, else fail (in CI) or skip the test."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    message = "chromium is not installed (Debian: apt-get install chromium; .ci/run does it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@dataclass
class PageVisit:
    """What the browser observed while opening one page."""

    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    charts: list[dict[str, Any]] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    scripts: int = 0
    png: bytes = b""


class _Session:
    def __init__(self, ws: Connection, visit: PageVisit) -> None:
        self.ws = ws
        self.visit = visit
        self.ids = itertools.count(1)
        self.events: list[str] = []

    def _record(self, msg: dict[str, Any]) -> None:
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Network.requestWillBeSent":
            self.visit.requests.append(params["request"]["url"])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.visit.errors.append(json.dumps(params.get("args"))[:500])
        elif method == "Runtime.exceptionThrown":
            self.visit.errors.append(json.dumps(params.get("exceptionDetails"))[:500])
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.visit.errors.append(str(params["entry"].get("text"))[:500])
        if method:
            self.events.append(method)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self.ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + PAGE_SECONDS
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv(timeout=PAGE_SECONDS))
            if msg.get("id") == ident:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return dict(msg.get("result", {}))
            self._record(msg)
        raise TimeoutError(method)

    def wait_event(self, method: str) -> None:
        deadline = time.monotonic() + PAGE_SECONDS
        while method not in self.events:
            if time.monotonic() > deadline:
                raise TimeoutError(method)
            self._record(json.loads(self.ws.recv(timeout=PAGE_SECONDS)))

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")


class Chromium:
    """One headless Chromium process with a throwaway profile."""

    def __init__(self, workdir: Path) -> None:
        executable = chromium_path()  # skips (or fails in CI) before anything is opened
        self.profile = workdir / "chromium-profile"
        self.profile.mkdir(parents=True, exist_ok=True)
        self.log = (workdir / "chromium.log").open("wb")
        self.proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.port = self._port()

    def _port(self) -> int:
        marker = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            text = marker.read_text() if marker.exists() else ""
            if text.strip():
                return int(text.splitlines()[0])
            time.sleep(0.05)  # bounded poll for the browser's own port file
        raise TimeoutError("chromium did not open its DevTools port")

    def visit(self, url: str, *, width: int = 1200) -> PageVisit:
        """Open `url` in the browser's page, wait for load, measure, screenshot."""
        pages = httpx.get(f"http://127.0.0.1:{self.port}/json/list", timeout=10).json()
        target = next(p for p in pages if p["type"] == "page")
        visit = PageVisit()
        with connect(target["webSocketDebuggerUrl"], max_size=None) as ws:
            s = _Session(ws, visit)
            for domain in ("Page", "Runtime", "Log", "Network"):
                s.call(f"{domain}.enable")
            s.call("Emulation.setDeviceMetricsOverride", width=width, height=900,
                   deviceScaleFactor=1, mobile=False)  # fmt: skip
            s.call("Page.navigate", url=url)
            s.wait_event("Page.loadEventFired")
            visit.charts = json.loads(s.evaluate(CHARTS_JS))
            visit.sections = list(
                s.evaluate("Array.from(document.querySelectorAll('section')).map(e => e.id)")
            )
            visit.scripts = int(s.evaluate("document.scripts.length"))
            size = s.call("Page.getLayoutMetrics")["cssContentSize"]
            shot = s.call(
                "Page.captureScreenshot",
                format="png",
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": width, "height": size["height"], "scale": 1},
            )
            visit.png = base64.b64decode(shot["data"])
        return visit

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@contextmanager
def chromium(workdir: Path) -> Iterator[Chromium]:
    browser = Chromium(workdir)
    try:
        yield browser
    finally:
        browser.close()
