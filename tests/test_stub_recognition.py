"""Stubs: what counts as one, and what a stub says about the output it replaces.

A tool output that only looks like a stub (a fetched page or a file quoting one) must stay
prunable; the stubs the guard keeps across turns must follow the caller's edits, whatever
mapping class or SDK object holds the message.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, MutableMapping
from typing import Any

import pytest

from ctxbudget import ContextGuard, GuardedRequest
from ctxbudget.prune import prune
from ctxbudget.sticky_stubs import StickyStubs
from ctxbudget.stubs import is_stub, missing_text, stub_text


def _send(request: GuardedRequest) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": request.input_tokens}}


def _history(result: MutableMapping[str, Any]) -> list[Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "fetch", "arguments": "{}"}}
    return [
        {"role": "user", "content": "fetch it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        result,
    ]


def test_stubs_count_lines_as_the_output_has_them() -> None:
    # A final newline ends the last line (100 lines were reported as 101).
    assert "(1 line)" in stub_text("bash", "one line\n", 10)
    assert "(2 lines)" in stub_text("bash", "a\nb", 10)
    assert "(100 lines)" in stub_text("bash", "f.py\n" * 100, 10)


def test_a_stub_head_starts_after_blank_lines() -> None:
    text = stub_text("bash", "\n\n  \n\nERROR: the real content\n" * 3, 900)
    assert "It began:\nERROR: the real content\n" in text


def test_only_what_ctxbudget_wrote_is_a_stub() -> None:
    assert is_stub(stub_text("bash", "x\n" * 5000, 9000))
    assert is_stub(stub_text("bash", "x\n" * 5000, 9000, interrupted=True))
    assert is_stub(missing_text("grep"))
    long_head = stub_text("bash", "y" * 5000, 9000, head_chars=3000)
    assert is_stub(long_head, head_chars=3000) and not is_stub(long_head)
    assert not is_stub("[ctxbudget: note] page text\n" * 1000)
    assert not is_stub("[ctxbudget: tool output pruned] " + "z" * 5000 + " again.")


@pytest.mark.parametrize("prefix", ["", "[ctxbudget: note] ", missing_text("fetch") + "\n"])
def test_an_output_that_starts_like_a_stub_is_pruned(prefix: str) -> None:
    # The guard refused the request: an output starting with "[ctxbudget: " was never stubbed.
    history = _history(
        {"role": "tool", "tool_call_id": "c1", "content": prefix + "page\n" * 40_000}
    )
    sent = ContextGuard("gpt-4o", window=32_000).send(_send, history)
    assert sent.request.messages[2]["content"].startswith("[ctxbudget: tool output pruned]")
    later = [{"role": "assistant", "content": "Read."}, {"role": "user", "content": "Go on."}]
    view = prune(history + later, window=32_000, model="gpt-4o")
    assert view.fits and view.messages[2]["content"].startswith("[ctxbudget: tool output pruned]")


@pytest.mark.parametrize("mapping", [dict, OrderedDict])
def test_a_replaced_result_is_sent_whatever_mapping_holds_it(
    mapping: Callable[..., MutableMapping[str, Any]],
) -> None:
    # A dict subclass's replaced content was not noticed: the stale stub kept being sent.
    result = mapping(role="tool", tool_call_id="c1", content="OLD line\n" * 40_000)
    history = _history(result)
    guard = ContextGuard("gpt-4o", window=32_000)
    first = guard.send(_send, history)
    assert first.request.messages[2]["content"].startswith("[ctxbudget: tool output pruned]")
    result["content"] = "NEW short output"
    assert guard.send(_send, history).request.messages[2]["content"] == "NEW short output"


def test_sticky_stubs_of_one_genai_content_add_up() -> None:
    # With google-genai Content messages, a second stub in the same message was forgotten:
    # each view held a new copy, which the next stub could not be traced back from.
    types = pytest.importorskip("google.genai.types")

    def result(name: str, text: str) -> Any:
        response = types.FunctionResponse(name=name, response={"result": text})
        return types.Part(function_response=response)

    results = types.Content(
        role="user", parts=[result("read", "A" * 5000), result("grep", "B" * 5000)]
    )
    calls = types.Content(
        role="model",
        parts=[
            types.Part(function_call=types.FunctionCall(name=n, args={})) for n in ("read", "grep")
        ],
    )
    history = [types.Content(role="user", parts=[types.Part(text="go")]), calls, results]
    sticky = StickyStubs()
    sticky.remember("gemini", [(results, 0, "[stub 0]")])
    view = sticky.apply("gemini", history)
    assert sticky.apply("gemini", history)[2] is view[2]
    sticky.remember("gemini", [(view[2], 1, "[stub 1]")])
    later = sticky.apply("gemini", history)[2]
    assert [p.function_response.response["result"] for p in later.parts] == ["[stub 0]", "[stub 1]"]
