"""Shared test helpers: where the shared research data lives, and a loopback HTTP server.

The server lets the real provider SDKs (openai, anthropic, google-genai, botocore) talk to
127.0.0.1 and raise their own exceptions from real HTTP responses, instead of our tests
mocking our own code.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

REPO_ROOT = Path(__file__).resolve().parents[1]

# CI explores the same examples every run (no flaky reds from a new random draw) and does not
# time individual examples on a shared machine; local runs keep drawing new examples.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


def shared_data_dir() -> Path | None:
    """``shared/data`` beside the checkout (``../shared/data`` from the repo root).

    ``CTXBUDGET_SHARED_DATA`` overrides the location. ``None`` when it is not there (a bare
    clone); tests that need it skip with the path they looked at.
    """
    override = os.environ.get("CTXBUDGET_SHARED_DATA")
    candidate = Path(override) if override else REPO_ROOT.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """With ``CTXBUDGET_NO_SKIPS=1`` (set by ``.ci/run``) a skipped test is reported failed.

    A skip means a test dependency or the shared data is missing, and a skipped test must
    not be counted as passing in CI.
    """
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if (
        os.environ.get("CTXBUDGET_NO_SKIPS") == "1"
        and report.skipped
        and not hasattr(report, "wasxfail")
    ):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (CTXBUDGET_NO_SKIPS=1): {report.longrepr}"


def shared_data_hint() -> str:
    return f"shared research data not found at {REPO_ROOT.parent / 'shared' / 'data'}"


def _encode(body: object) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body).encode()


def _json_or_bytes(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


@dataclass
class Reply:
    """What the loopback server answers, to every request, until told otherwise."""

    status: int = 200
    body: bytes = b"{}"
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


class LoopbackServer:
    """A real HTTP server on 127.0.0.1 (port 0) that answers with a configured reply."""

    def __init__(self) -> None:
        self.reply_with = Reply()
        self.queued: list[Reply] = []
        self.paths: list[str] = []
        self.bodies: list[Any] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                server.paths.append(self.path)
                server.bodies.append(_json_or_bytes(raw))
                reply = server.queued.pop(0) if server.queued else server.reply_with
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                self.send_header("content-length", str(len(reply.body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = _answer
            do_POST = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def reply(
        self,
        status: int,
        body: object,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer every following request with ``status`` and ``body`` (JSON unless bytes/str)."""
        self.queued.clear()
        self.reply_with = Reply(status, _encode(body), content_type, dict(headers or {}))

    def queue(self, status: int, body: object) -> None:
        """Answer the next request (after those queued before) with ``status`` and ``body``;
        when the queue is empty, the :meth:`reply` set last answers."""
        self.queued.append(Reply(status, _encode(body)))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@pytest.fixture(scope="session")
def loopback() -> Iterator[LoopbackServer]:
    """A session-wide loopback server; each test sets its reply with ``loopback.reply``."""
    server = LoopbackServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fresh_loopback(loopback: LoopbackServer) -> Iterator[LoopbackServer]:
    """The loopback server with no request recorded yet; what a test queued and did not use
    is dropped after it."""
    loopback.bodies.clear()
    loopback.paths.clear()
    yield loopback
    loopback.queued.clear()
