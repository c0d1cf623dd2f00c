"""Running the sandbox: in-process as an httpx transport, or as a real server on loopback.

The API and the result files are two origins, as with the real service and its object store:
in-process they are `http://sandbox.localhost` and `http://files.sandbox.localhost` (names
reserved for loopback); served, two ports on 127.0.0.1.
"""

from __future__ import annotations

import secrets
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

import httpx

from placeflow.emulator.app import DROP, SandboxApp
from placeflow.emulator.backend import SandboxBackend
from placeflow.emulator.faults import Gate
from placeflow.emulator.keep import SandboxStore
from placeflow.emulator.responses import Reply
from placeflow.emulator.settings import SandboxConfig

if TYPE_CHECKING:  # the server's modules load only when a sandbox is served
    from http.server import ThreadingHTTPServer

IN_PROCESS_API = "http://sandbox.localhost"
IN_PROCESS_FILES = "http://files.sandbox.localhost"


class Sandbox:
    """A sandbox emulator of the place-data service: state, HTTP layer, and ways to reach it."""

    def __init__(
        self, config: SandboxConfig | None = None, *, store: SandboxStore | None = None
    ) -> None:
        """With `store` (a folder taken by this process: `SandboxStore.acquire`), the sandbox
        starts from the state kept there and keeps every request's changes in it."""
        self.config = config or SandboxConfig()
        self.base_url = IN_PROCESS_API
        self.files_url = IN_PROCESS_FILES
        self.backend = SandboxBackend(self.config, base_url=self.base_url, files_url=self.files_url)
        self.app = SandboxApp(self.backend)
        self.store = store
        self.restored = store.restore(self.backend) if store is not None else False
        """Whether a kept state was taken up (a sandbox started again)."""

    def transport(self, *, own_origins: bool = False) -> SandboxTransport:
        """A sync httpx transport that serves both origins in this process. With `own_origins`
        the origins are named afresh first (`http://api-TOKEN.sandbox.localhost` and its files'
        twin): a client's rate limiter and spend journal are kept per base URL and key, so two
        sandboxes are two services to them, as two served on their own ports are."""
        if own_origins:
            token = secrets.token_hex(6)
            self.base_url = f"http://api-{token}.sandbox.localhost"
            self.files_url = f"http://files-{token}.sandbox.localhost"
            self.backend.base_url, self.backend.files_url = self.base_url, self.files_url
        return SandboxTransport(self)

    @contextmanager
    def serve(
        self, host: str = "127.0.0.1", port: int = 0, files_port: int = 0
    ) -> Iterator[ServedSandbox]:
        """Serve over real HTTP on loopback until the block ends (port 0: any free port)."""
        api = _server(self, host, port, files=False)
        files = _server(self, host, files_port, files=True)
        served = ServedSandbox(
            base_url=f"http://{host}:{api.server_address[1]}",
            files_url=f"http://{host}:{files.server_address[1]}",
        )
        self.base_url, self.files_url = served.base_url, served.files_url
        self.backend.base_url, self.backend.files_url = served.base_url, served.files_url
        # A 50 ms poll: shutdown() waits for the loop's next poll (half a second by default,
        # twice per sandbox stopped).
        threads = [
            threading.Thread(target=s.serve_forever, args=(0.05,), daemon=True, name=f"sandbox-{i}")
            for i, s in enumerate((api, files))
        ]
        for t in threads:
            t.start()
        try:
            yield served
        finally:
            for s in (api, files):
                s.shutdown()
                s.server_close()

    def stats(self) -> dict[str, Any]:
        """What the sandbox itself observed (the same as GET /_sandbox/stats)."""
        return self.backend.stats()

    def inject(self, route: str, kind: str, times: int = 1) -> None:
        """Act out `kind` on the next `times` requests to `route` (e.g. 'POST /v1/jobs/enrich')."""
        self.backend.faults.inject(route, kind, times)

    def hold(self, route: str, after: int = 0) -> Gate:
        """Hold the next request to `route` (or, with `after`, the one after that many more)
        until the returned gate is opened."""
        return self.backend.faults.hold(route, after)

    def reset(self) -> None:
        self.backend.reset()


@dataclass(frozen=True)
class ServedSandbox:
    base_url: str
    files_url: str


def _dispatch(
    sandbox: Sandbox, files: bool, method: str, target: str, headers: dict[str, str], body: bytes
) -> Reply:
    parts = urlsplit(target)
    try:
        if files:
            query = dict(parse_qsl(parts.query))
            reply = sandbox.app.handle_files(method, parts.path, query, headers)
        else:
            reply = sandbox.app.handle_api(method, parts.path, headers, body)
        if sandbox.store is not None:  # kept before the reply goes out: what a client saw stays
            sandbox.store.commit(sandbox.backend)
        return reply
    except Exception:
        # A bug in the sandbox answers 500, as a real service would, and is kept for the stats:
        # tests assert that the sandbox itself never failed.
        sandbox.backend.record_internal_error(traceback.format_exc())
        return Reply(
            500,
            {"success": False, "error": "internal server error", "error_code": "INTERNAL_ERROR"},
        )


class SandboxTransport(httpx.BaseTransport):
    """Routes requests by origin to the sandbox's API or file handler, without sockets."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        origin = f"{request.url.scheme}://{request.url.netloc.decode()}"
        if origin not in (self.sandbox.base_url, self.sandbox.files_url):
            raise httpx.ConnectError(f"no sandbox origin at {origin}", request=request)
        headers = {k.lower(): v for k, v in request.headers.items()}
        target = request.url.raw_path.decode()
        reply = _dispatch(
            self.sandbox,
            origin == self.sandbox.files_url,
            request.method,
            target,
            headers,
            request.read(),
        )
        if reply is DROP:
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            )
        content = reply.content()
        out_headers = {
            "content-type": "application/json",
            **reply.headers,
            "content-length": str(len(content)),
        }
        return httpx.Response(reply.status, headers=out_headers, content=content, request=request)


def _server(sandbox: Sandbox, host: str, port: int, *, files: bool) -> ThreadingHTTPServer:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "placeflow-sandbox"

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = _dispatch(sandbox, files, self.command, self.path, headers, body)
            if reply is DROP:
                self.close_connection = True
                return
            content = reply.content()
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.headers.get("Content-Type", "application/json"))
            for name, value in reply.headers.items():
                if name != "Content-Type":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        do_GET = do_POST = do_DELETE = do_PUT = _handle

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the sandbox reports through its stats, not stderr."""

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
