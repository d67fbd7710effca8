"""Pruning review: attachments in Chat tool messages, stubs never bigger than the output."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from ctxbudget.prune import PruneConfig, Pruner, prune

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5E"
    "rkJggg=="
)
BIG = "log line with words and numbers 123\n" * 800
#: 260 characters of CJK: just over the 200-token minimum, and its 200-character head is
#: most of it, so its stub (head plus wording) is bigger than the output itself.
DENSE = ("数据库连接失败请检查配置文件中的主机名和端口号是否正确" * 10)[:260]
#: Prune every old output at once, whatever the total.
EAGER = PruneConfig(threshold=0)


def _chat(*outputs: Any) -> list[dict[str, Any]]:
    """A Chat history of one tool call per output, then two later turns (the fresh tail)."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "Look around."}]
    for k, output in enumerate(outputs):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
        history.append({"role": "tool", "tool_call_id": f"c{k}", "content": output})
        history.append({"role": "assistant", "content": "Read it."})
    history.append({"role": "user", "content": "next " * 3000})
    history.append({"role": "assistant", "content": "Ok."})
    history.append({"role": "user", "content": "And now?"})
    return history


def test_chat_tool_message_image_survives_its_stub() -> None:
    # SPEC D1: attachments of a copied message survive. A Chat tool message may carry image
    # parts (providers that accept them there); the stub replaced the whole content by its
    # text, and the screenshot was gone from what the model sees.
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    # (With PruneConfig.prune_media, the default, media a tool returned go with its stub.)
    history = _chat([{"type": "text", "text": BIG}, image])
    snapshot = copy.deepcopy(history)
    keep = dataclasses.replace(EAGER, prune_media=False)
    result = prune(history, window=16_000, config=keep)
    assert [p.kind for p in result.pruned] == ["old"]
    content = result.messages[2]["content"]
    assert content[0]["type"] == "text"
    assert content[0]["text"].startswith("[ctxbudget: tool output pruned] read returned")
    assert content[1:] == [image] and content[1] is image
    assert history == snapshot
    # the stubbed message is a stub: pruning the view again changes nothing
    again = prune(result.messages, window=16_000, config=keep)
    assert again.pruned == () and again.messages == result.messages
    # by default the image goes with the stub, which says so
    dropped = prune(history, window=16_000, config=EAGER).messages[2]["content"]
    assert dropped.startswith("[ctxbudget: tool output pruned] read returned")
    assert ", 1 image or file)" in dropped
    assert history == snapshot


def test_a_stub_is_never_bigger_than_the_output() -> None:
    # SPEC D3: a stub replaces an output to save space. A short output of dense tokens is
    # mostly its own head: its stub was bigger (209 tokens became 237) and lost the data.
    history = _chat(DENSE, BIG)
    result = prune(history, window=16_000, config=EAGER)
    assert [p.call_id for p in result.pruned] == ["c1"]
    assert all(p.stub_tokens < p.tokens for p in result.pruned)
    assert result.messages[2] is history[2]
    assert result.tokens_after < result.tokens_before


def test_a_stub_is_never_bigger_than_the_output_alone() -> None:
    # Nothing that shrinks: the view is the history, and no event says something was pruned.
    events: list[Any] = []
    history = _chat(DENSE)
    result = Pruner(16_000, config=EAGER, on_event=events.append).prune(history)
    assert result.pruned == () and result.event is None and events == []
    assert result.messages == history
    assert all(a is b for a, b in zip(result.messages, history, strict=True))


def test_short_outputs_are_kept_when_every_output_may_be_stubbed() -> None:
    # min_output_tokens=0 lets every output be stubbed; an "ok" grew into an 80-token stub.
    history = _chat("ok", BIG)
    result = prune(history, window=16_000, config=PruneConfig(threshold=0, min_output_tokens=0))
    assert [p.call_id for p in result.pruned] == ["c1"]
    assert result.messages[2]["content"] == "ok"


def test_anthropic_keeps_the_result_whose_stub_would_be_bigger() -> None:
    # Parallel results in one message: the big one is stubbed, the dense one kept as it is
    # (the caller's own block), beside the user's image.
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    uses = [{"type": "tool_use", "id": f"t{k}", "name": "read", "input": {}} for k in (1, 2)]
    results: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": "t1", "content": DENSE},
        {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": BIG}]},
        image,
    ]
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Look around."},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
        {"role": "assistant", "content": "Read them."},
        {"role": "user", "content": "next " * 3000},
        {"role": "assistant", "content": "Ok."},
        {"role": "user", "content": "And now?"},
    ]
    result = prune(history, window=16_000, format="anthropic", config=EAGER)
    assert [p.call_id for p in result.pruned] == ["t2"]
    blocks = result.messages[2]["content"]
    assert blocks[0] is results[0] and blocks[2] is image
    assert blocks[1]["content"].startswith("[ctxbudget: tool output pruned] read returned")


def test_genai_content_stubs_are_the_same_objects_turn_after_turn() -> None:
    # A kept Pruner hands back the same stub objects every turn, so the view is stable and
    # what reads it by object (the guard's pairing check, its stub caches) reads only what
    # is new. A google-genai Content history got new Content objects for every stub, every
    # turn (each stub dict validated again).
    types = pytest.importorskip("google.genai.types")

    def text(role: str, words: str) -> Any:
        return types.Content(role=role, parts=[types.Part(text=words)])

    history: list[Any] = [text("user", "Look around.")]
    for k in range(3):
        call = types.FunctionCall(id=f"a{k}", name="read", args={"path": f"f{k}"})
        response = types.FunctionResponse(id=f"a{k}", name="read", response={"result": BIG})
        history.append(types.Content(role="model", parts=[types.Part(function_call=call)]))
        history.append(types.Content(role="user", parts=[types.Part(function_response=response)]))
        history.append(text("model", "Read it."))
    history += [text("user", "next " * 3000), text("model", "Ok."), text("user", "And now?")]
    pruner = Pruner(16_000, config=EAGER)
    first = pruner.prune(history)
    second = pruner.prune([*history, text("model", "Looking.")])
    assert [p.index for p in first.pruned] == [2, 5, 8] == [p.index for p in second.pruned]
    assert all(type(m) is types.Content for m in second.messages)
    assert all(a is b for a, b in zip(first.messages, second.messages, strict=False))
    assert second.event is None
