"""The ```python examples of README.md run as written.

Each block runs on its own, in a fresh namespace, in a temporary working directory that holds
the files the examples open (``write_example_files``). The openai and anthropic SDKs find a
loopback server through ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``; it answers as the provider
would, with the usage a provider reports, so ``OpenAI()`` and ``anthropic.Anthropic()`` in the
examples work unchanged and nothing leaves the machine. A block that shows overflow handling
(it calls ``classify_overflow``) gets one "context too long" answer first, so its recovery runs.

Two markers, an HTML comment on the line right above a block's opening fence, change that:

- ``<!-- example: continues -->``: the block is the next part of the example above it and runs
  in the namespace the block before it left (the two are one program, split by prose).
- ``<!-- example: not run (why) -->``: the block is not run. ``EXCLUDED`` is their exact number,
  so an exclusion cannot be added unnoticed.
"""

from __future__ import annotations

import json
import struct
import threading
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ctxbudget.request import estimate_request

README = Path(__file__).resolve().parent.parent / "README.md"
CONTINUES = "<!-- example: continues -->"
NOT_RUN = "<!-- example: not run"

#: Blocks marked not run; change it only together with the markers in README.md.
EXCLUDED = 0


@dataclass(frozen=True, slots=True)
class Block:
    """One ```python block: where it starts, its code, and the marker above it, if any."""

    line: int
    code: str
    marker: str


def readme_blocks(text: str) -> list[Block]:
    """The ```python blocks of a markdown text, in order, each with the marker above it."""
    lines = text.splitlines()
    blocks: list[Block] = []
    above = ""  # the last non-blank line before the current one
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```python":
            end = lines.index("```", index + 1)
            marker = above if above.startswith("<!-- example:") else ""
            blocks.append(Block(index + 2, "\n".join(lines[index + 1 : end]), marker))
            index = end
        if lines[index].strip():
            above = lines[index].strip()
        index += 1
    return blocks


def programs(blocks: list[Block]) -> list[list[Block]]:
    """The blocks that run, grouped into programs: a ``continues`` block joins the one before."""
    grouped: list[list[Block]] = []
    for block in blocks:
        if block.marker.startswith(NOT_RUN):
            continue
        if block.marker == CONTINUES:
            assert grouped, f"README.md:{block.line}: 'continues' with no block before it"
            grouped[-1].append(block)
        else:
            assert not block.marker, f"README.md:{block.line}: unknown marker {block.marker!r}"
            grouped.append([block])
    return grouped


# The files the examples open


def png(width: int, height: int) -> bytes:
    """A valid greyscale PNG of the given size."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = zlib.compress(b"".join(b"\0" + b"\x80" * width for _ in range(height)))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")
    )


def pdf(pages: int) -> bytes:
    """A PDF of blank pages with a valid cross-reference table."""
    kids = " ".join(f"{3 + page} 0 R" for page in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
    ]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    size = len(objects) + 1
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def write_example_files(directory: Path) -> None:
    """What the examples read: a long log, a Word file, a PDF and a picture."""
    log = "".join(
        f"2024-05-01 12:00:{i % 60:02d} INFO worker[{i}] step {i} ok\n" for i in range(10_190)
    )
    (directory / "big.log").write_text(log, encoding="utf-8")
    with zipfile.ZipFile(directory / "report.docx", "w") as docx:
        types = '<Types><Override PartName="/word/document.xml"/></Types>'
        docx.writestr("[Content_Types].xml", types)
        docx.writestr("word/document.xml", "<w:document/>")
    (directory / "report.pdf").write_bytes(pdf(3))
    (directory / "picture.png").write_bytes(png(640, 480))


# A provider on loopback


def overflow_error() -> dict[str, Any]:
    """OpenAI's answer to a request whose input fits but input + max_tokens does not."""
    return {
        "error": {
            "message": "This model's maximum context length is 128000 tokens. However, you "
            "requested 129000 tokens (125000 in the messages, 4000 in the completion). "
            "Please reduce the length of the messages or completion.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def chat_completion(body: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions reply whose usage is what the request costs by our estimate."""
    prompt = estimate_request(body["messages"], tools=body.get("tools"), model=body["model"]).total
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "The notes so far, in short."},
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 8, "total_tokens": prompt + 8},
    }


def anthropic_message(body: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic Messages reply whose usage is what the request costs by our estimate."""
    prompt = estimate_request(
        body["messages"], system=body.get("system"), tools=body.get("tools"), model=body["model"]
    ).total
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": [{"type": "text", "text": "The notes so far, in short."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": 8},
    }


class Provider:
    """OpenAI Chat Completions and Anthropic Messages on 127.0.0.1, by request path."""

    def __init__(self) -> None:
        self.overflows = 0  # how many of the next requests answer "too long"
        self.paths: list[str] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                provider.paths.append(self.path)
                status, reply = provider.answer(self.path, body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.overflows:
            self.overflows -= 1
            return 400, overflow_error()
        if path.endswith("/chat/completions"):
            return 200, chat_completion(body)
        if path.endswith("/messages"):
            return 200, anthropic_message(body)
        return 404, {"error": {"message": f"no such path: {path}"}}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    server = Provider()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Provider) -> Iterator[Path]:
    """A working directory with the example files; the SDKs and the spill store kept local."""
    write_example_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{provider.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", provider.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("CTXBUDGET_SPILL_DIR", str(tmp_path / "spill"))
    provider.paths.clear()
    yield tmp_path
    provider.overflows = 0


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))
PROGRAMS = programs(BLOCKS)


@pytest.mark.parametrize("program", PROGRAMS, ids=[f"line{blocks[0].line}" for blocks in PROGRAMS])
def test_readme_example_runs(program: list[Block], workdir: Path, provider: Provider) -> None:
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    for block in program:
        if "classify_overflow(" in block.code:
            provider.overflows = 1
        code = compile(block.code, f"README.md:{block.line}", "exec")
        exec(code, namespace)
        assert provider.overflows == 0, f"README.md:{block.line}: the overflow was never sent"


def test_exclusions_are_counted() -> None:
    excluded = [block for block in BLOCKS if block.marker.startswith(NOT_RUN)]
    assert len(excluded) == EXCLUDED, [block.line for block in excluded]
    assert all(block.marker.endswith("-->") and "(" in block.marker for block in excluded), (
        "say why a block is not run: <!-- example: not run (why) -->"
    )


def test_every_python_block_is_seen() -> None:
    """The parser sees every ```python fence: a block it missed would go unchecked."""
    text = README.read_text(encoding="utf-8")
    assert len(BLOCKS) == text.count("```python\n") > 0


def test_markers_join_and_exclude() -> None:
    text = "\n".join(
        [
            "```python", "a = 1", "```", "prose", "<!-- example: continues -->", "",
            "```python", "b = a", "```",
            "<!-- example: not run (calls a provider) -->", "```python", "c = 1", "```",
            "```python", "d = 1", "```",
        ]
    )  # fmt: skip
    blocks = readme_blocks(text)
    assert [block.code for block in blocks] == ["a = 1", "b = a", "c = 1", "d = 1"]
    assert [[block.code for block in group] for group in programs(blocks)] == [
        ["a = 1", "b = a"],
        ["d = 1"],
    ]
