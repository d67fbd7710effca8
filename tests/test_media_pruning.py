"""Screenshots and other media tool results are tool output (SPEC D3): old ones are stubbed
like text, so a computer-use loop does not fill the window with screenshots until every
request is refused. Media the user sent are never touched."""

from __future__ import annotations

import base64
import copy
import io
from typing import Any

import pytest

from ctxbudget import ContextGuard, GuardedRequest, PruneConfig, estimate_request, prune
from ctxbudget.stubs import STUB_PREFIX

Image = pytest.importorskip("PIL.Image")


def screen_png(width: int = 1024, height: int = 768) -> str:
    """A screenshot-sized PNG (one colour: small to carry, priced by its size)."""
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (30, 60, 90)).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


SCREEN = screen_png()
IMAGE_BLOCK = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": SCREEN},
}


def computer_use(steps: int) -> list[dict[str, Any]]:
    """An Anthropic computer-use run: each step a click and the screenshot it returned."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "Book the flight."}, IMAGE_BLOCK]}
    ]
    for i in range(steps):
        action = {"action": "left_click", "coordinate": [100 + i, 200]}
        history += [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"t{i}", "name": "computer", "input": action}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{i}", "content": [IMAGE_BLOCK]}
                ],
            },
        ]
    return history


def test_a_computer_use_loop_is_sent_with_its_old_screenshots_stubbed() -> None:
    history = computer_use(220)
    snapshot = copy.deepcopy(history)
    assert estimate_request(history, model="claude-sonnet-4-5").total > 200_000
    sent: list[GuardedRequest] = []

    result = ContextGuard("claude-sonnet-4-5").send(lambda r: sent.append(r) or {}, history)

    assert len(sent) == 1 and history == snapshot
    view = sent[0].messages
    assert view[0] is history[0]  # what the user sent stays, image and all
    results = [m["content"][0] for m in view[2::2]]
    stubbed = [r for r in results if isinstance(r["content"], str)]
    kept = [r for r in results if not isinstance(r["content"], str)]
    assert stubbed and kept and results[-1]["content"] == [IMAGE_BLOCK]  # the latest stays
    assert all(r["content"].startswith(STUB_PREFIX) for r in stubbed)
    assert all("computer returned" in r["content"] for r in stubbed)
    assert all(", 1 image or file)" in r["content"] for r in stubbed)
    assert result.request.input_tokens < 200_000


def test_with_prune_media_off_screenshots_are_kept_and_the_request_refused() -> None:
    from ctxbudget import ContextBudgetError

    history = computer_use(220)
    guard = ContextGuard("claude-sonnet-4-5", prune=PruneConfig(prune_media=False))
    with pytest.raises(ContextBudgetError):
        guard.send(lambda r: {}, history)


def test_a_screenshot_that_overflowed_is_stubbed_to_recover() -> None:
    """The provider refuses a request our estimate let through (it counts the screenshots at
    twice our price): the largest results, the screenshots, are stubbed for the retry."""
    window = 40_000
    history = computer_use(20)
    tries: list[int] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        tries.append(request.attempt)
        images = sum(
            1
            for m in request.messages[1:]
            for b in m["content"]
            if isinstance(b, dict)
            and b.get("type") == "tool_result"
            and b["content"] == [IMAGE_BLOCK]
        )
        count = request.estimate.raw.total + images * 1_000
        if count > window:
            raise RuntimeError(f"prompt is too long: {count} tokens > {window} maximum")
        return {"usage": {"input_tokens": count, "output_tokens": 1}}

    # no old output pruned before the provider refuses
    guard = ContextGuard("claude-sonnet-4-5", window=window, prune=PruneConfig(threshold=10**9))
    result = guard.send(send, history, max_tokens=1_000)

    assert tries == [1, 2]
    assert any(
        isinstance(m["content"][0].get("content"), str) for m in result.request.messages[2::2]
    )


def test_gemini_media_in_a_function_response_go_with_its_stub() -> None:
    part = {"inline_data": {"mime_type": "image/png", "data": SCREEN}}
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Look."}]}]
    for i in range(6):
        contents += [
            {
                "role": "model",
                "parts": [{"function_call": {"id": f"g{i}", "name": "shot", "args": {}}}],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "function_response": {
                            "id": f"g{i}",
                            "name": "shot",
                            "response": {"result": "ok"},
                            "parts": [part],
                        }
                    }
                ],
            },
        ]
    for words in ("Next.", "Go on."):
        contents += [
            {"role": "model", "parts": [{"text": "Done."}]},
            {"role": "user", "parts": [{"text": words}]},
        ]
    cfg = PruneConfig(threshold=0, tail_min=0, tail_max=10)
    result = prune(contents, window=64_000, model="gemini-2.5-pro", config=cfg)
    stubbed = [p for p in result.pruned if p.kind == "old"]
    assert stubbed
    for p in stubbed:
        fr = result.messages[p.index]["parts"][p.slot]["function_response"]
        assert "parts" not in fr and fr["response"]["result"].startswith(STUB_PREFIX)


def test_a_blank_screenshot_stub_is_not_stubbed_again() -> None:
    """The stub of a ``computer_call_output`` is a blank screenshot: pruning the pruned view
    again stubs nothing more (it was taken for a 255-token output every turn)."""
    shot = f"data:image/png;base64,{SCREEN}"
    items: list[dict[str, Any]] = [{"role": "user", "content": "Book the flight."}]
    for i in range(12):
        items += [
            {
                "type": "computer_call",
                "call_id": f"c{i}",
                "id": f"cu{i}",
                "status": "completed",
                "action": {"type": "click", "x": i, "y": 2, "button": "left"},
                "pending_safety_checks": [],
            },
            {
                "type": "computer_call_output",
                "call_id": f"c{i}",
                "output": {"type": "computer_screenshot", "image_url": shot},
            },
        ]
    items += [
        {"type": "message", "role": "assistant", "content": "Clicked."},
        {"role": "user", "content": "Go on."},
    ]
    cfg = PruneConfig(threshold=0, tail_min=0, tail_max=10, min_turns=0)
    first = prune(items, window=128_000, model="gpt-4.1", config=cfg)
    assert len(first.pruned) >= 8

    again = prune(first.messages, window=128_000, model="gpt-4.1", config=cfg)

    assert again.pruned == () and again.messages == first.messages
