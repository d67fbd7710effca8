"""Types of the current provider SDKs (openai, anthropic): media inside items kept whole is
priced as media, the summarizer sees what such items hold, a Responses compaction item
survives compaction, and Anthropic's system messages (``SystemMessageParam``) are read.

Every message is checked against the SDK's own type first (``TypeAdapter``), so a shape the
SDK no longer takes fails here rather than passing on a made-up one.
"""

from __future__ import annotations

import base64
import io
import re
from typing import Any

import pytest

from ctxbudget import (
    ContextGuard,
    GuardedRequest,
    compact,
    convert_messages,
    estimate_request,
    prune,
    validate_messages,
)
from ctxbudget.summary_prompt import render_messages

pydantic = pytest.importorskip("pydantic")
Image = pytest.importorskip("PIL.Image")
responses_types = pytest.importorskip("openai.types.responses.response_input_item_param")
anthropic_types = pytest.importorskip("anthropic.types")
RESPONSES_ITEM = pydantic.TypeAdapter(responses_types.ResponseInputItemParam)
ANTHROPIC_MESSAGE = pydantic.TypeAdapter(anthropic_types.MessageParam)


def checked(adapter: Any, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for m in messages:
        adapter.validate_python(m)
    return messages


def noise_png(width: int, height: int) -> str:
    """A PNG of random pixels (base64): its base64 text is as many tokens as its bytes."""
    img = Image.effect_noise((width, height), 80).convert("RGB")
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def screenshot_turns(data: str, n: int) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [{"role": "user", "content": "Open the settings page."}]
    for i in range(n):
        turns += [
            {
                "type": "computer_call",
                "id": f"cu_{i}",
                "call_id": f"k{i}",
                "action": {"type": "screenshot"},
                "pending_safety_checks": [],
                "status": "completed",
            },
            {
                "type": "computer_call_output",
                "call_id": f"k{i}",
                "output": {
                    "type": "computer_screenshot",
                    "image_url": f"data:image/png;base64,{data}",
                },
            },
        ]
    return checked(RESPONSES_ITEM, turns)


def test_a_screenshot_in_a_computer_call_output_costs_an_image() -> None:
    data = noise_png(256, 256)
    as_input = checked(
        RESPONSES_ITEM,
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "input_image",
                        "image_url": f"data:image/png;base64,{data}",
                        "detail": "auto",
                    }
                ],
            }
        ],
    )
    image = estimate_request(as_input, model="gpt-5").per_message[0]
    turns = screenshot_turns(data, 2)

    est = estimate_request(turns, model="gpt-5")

    assert len(data) > 100_000 and image < 1_000
    for i in (2, 4):  # the outputs: the image and a few dozen tokens of fields
        assert image <= est.per_message[i] <= image + 60
    sent: list[GuardedRequest] = []
    ContextGuard("gpt-5").send(lambda r: sent.append(r) or {}, turns)
    assert sent[0].messages == turns  # two screenshots fit, untouched


def test_a_generated_image_costs_an_image() -> None:
    data = noise_png(128, 128)
    items = checked(
        RESPONSES_ITEM,
        [
            {"role": "user", "content": "Draw a cat."},
            {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": data},
        ],
    )
    assert estimate_request(items, model="gpt-5").per_message[1] < 1_000 < len(data) // 4


def test_a_pdf_a_server_tool_fetched_costs_a_document() -> None:
    fpdf = pytest.importorskip("fpdf")
    pdf = fpdf.FPDF()
    for _ in range(2):
        pdf.add_page()
        pdf.set_font("helvetica", size=12)
        pdf.cell(text="A page of the fetched report.")
        pdf.image(Image.effect_noise((300, 300), 80).convert("RGB"), w=100)
    data = base64.b64encode(bytes(pdf.output())).decode()
    source = {"type": "base64", "media_type": "application/pdf", "data": data}
    doc = {"type": "document", "source": source}
    fetched = checked(
        ANTHROPIC_MESSAGE,
        [
            {"role": "user", "content": "Read https://example.org/report.pdf"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_1",
                        "name": "web_fetch",
                        "input": {"url": "https://example.org/report.pdf"},
                    },
                    {
                        "type": "web_fetch_tool_result",
                        "tool_use_id": "srvtoolu_1",
                        "content": {
                            "type": "web_fetch_result",
                            "url": "https://example.org/report.pdf",
                            "content": doc,
                        },
                    },
                ],
            },
        ],
    )
    attached = checked(ANTHROPIC_MESSAGE, [{"role": "user", "content": [doc]}])

    as_block = estimate_request(attached, model="claude-sonnet-4-5").per_message[0]
    in_result = estimate_request(fetched, model="claude-sonnet-4-5").per_message[1]

    assert len(data) // 4 > 10 * as_block
    assert as_block <= in_result <= as_block + 150


def test_the_summarizer_sees_what_items_kept_whole_hold() -> None:
    """A Codex-style run (shell commands, their output, a patch) and server tools: every
    command, output, path and query reaches the summarizer's transcript."""
    items = checked(
        RESPONSES_ITEM,
        [
            {"role": "user", "content": "Fix the build."},
            {
                "type": "shell_call",
                "call_id": "s1",
                "action": {"commands": ["make MARK_SHELL_CMD"]},
                "status": "completed",
            },
            {
                "type": "shell_call_output",
                "call_id": "s1",
                "output": [
                    {
                        "stdout": "error MARK_SHELL_OUT",
                        "stderr": "",
                        "outcome": {"type": "exit", "exit_code": 2},
                    }
                ],
            },
            {
                "type": "apply_patch_call",
                "call_id": "p1",
                "status": "completed",
                "operation": {
                    "type": "update_file",
                    "path": "MARK_PATCH_PATH.c",
                    "diff": "+#include <MARK_PATCH_DIFF.h>",
                },
            },
            {
                "type": "apply_patch_call_output",
                "call_id": "p1",
                "status": "completed",
                "output": "MARK_PATCH_OUT",
            },
            {
                "type": "web_search_call",
                "id": "ws",
                "status": "completed",
                "action": {"type": "search", "query": "MARK_WEB_QUERY"},
            },
            {
                "type": "computer_call_output",
                "call_id": "k0",
                "output": {
                    "type": "computer_screenshot",
                    "image_url": f"data:image/png;base64,{noise_png(64, 64)}",
                },
            },
        ],
    )
    transcript = "\n".join(render_messages(items, "openai_responses"))
    for marker in sorted(set(re.findall(r"MARK_[A-Z_]+", str(items)))):
        assert marker in transcript
    assert "(shell_call) " in transcript and "(not shown)" in transcript
    assert len(transcript) < 3_000  # the screenshot's base64 is not shown


def test_a_responses_compaction_item_survives_compaction() -> None:
    """The opaque context a server compaction left (``encrypted_content``): no summarizer can
    read it, so it is kept whole, as instructions are."""
    history: list[dict[str, Any]] = [
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAAB" + "Zk9xQ2" * 1500},
    ]
    for i in range(8):
        history += [
            {"role": "user", "content": f"Step {i}: " + "details " * 400},
            {"type": "message", "role": "assistant", "content": f"Done step {i}."},
        ]
    history.append({"role": "user", "content": "Continue."})
    prompts: list[str] = []

    result = compact(
        history,
        lambda p, n: prompts.append(p) or "Summary of the steps.",
        window=32_000,
        model="gpt-5",
        keep_tokens=1_500,
    )

    assert result.summarized > 0
    assert [m for m in result.messages if m.get("type") == "compaction"] == [history[0]]
    assert "gAAAAAB" not in prompts[0]


def test_a_compaction_item_kept_stays_before_the_summary_of_later_turns() -> None:
    """The item holds context older than the turns the summary tells: it is not moved after
    the summary (instructions kept whole are)."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Migrate the service."},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAAB" + "Zk9xQ2" * 500},
    ]
    rule = {"role": "developer", "content": "From now on, write tests first."}
    for i in range(8):
        history += [
            {"role": "user", "content": f"Step {i}: " + "details " * 400},
            {"type": "message", "role": "assistant", "content": f"Done step {i}."},
        ]
        if i == 2:
            history.append(rule)
    history.append({"role": "user", "content": "Continue."})
    model = "gpt-5"
    result = compact(history, lambda p, n: "Summary.", window=32_000, model=model, keep_tokens=800)

    kinds = [m.get("type") or m["role"] for m in result.messages]
    assert kinds[0] == "compaction" and result.messages[0] is history[1]
    assert "[ctxbudget summary" in str(result.messages[1]["content"])
    assert result.messages[2] is rule  # the instruction, after the summary


def test_a_data_url_in_text_the_model_reads_counts_as_text() -> None:
    """Only fields providers read as media are priced as media: a command's stdout that is a
    data URL, or an SSE log, is text the model reads."""
    data = noise_png(64, 64)
    url = f"data:image/png;base64,{data}"
    as_text = estimate_request([{"role": "user", "content": url}], model="gpt-5").per_message[0]
    items = checked(
        RESPONSES_ITEM,
        [
            {"role": "user", "content": "Show it."},
            {
                "type": "local_shell_call",
                "id": "l1",
                "call_id": "l1",
                "status": "completed",
                "action": {"type": "exec", "command": ["cat", "a.txt"], "env": {}},
            },
            {"type": "local_shell_call_output", "id": "l1", "output": url},
            {
                "type": "local_shell_call_output",
                "id": "l1",
                "output": f'data: {{"url": "{url}"}}\n\ndata: {{"event": "done"}}\n',
            },
        ],
    )
    est = estimate_request(items, model="gpt-5", format="openai_responses")
    assert est.per_message[2] >= as_text - 10
    assert est.per_message[3] >= as_text
    assert est.components.attachments == 0


def anthropic_with_a_system_message() -> list[dict[str, Any]]:
    return checked(
        ANTHROPIC_MESSAGE,
        [
            {"role": "user", "content": "List the files."},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}],
            },
            {"role": "system", "content": [{"type": "text", "text": "Answer in French now."}]},
            {"role": "user", "content": "Which files?"},
        ],
    )


def test_an_anthropic_system_message_is_read_counted_and_sent() -> None:
    history = anthropic_with_a_system_message()
    assert validate_messages(history) == "anthropic"
    est = estimate_request(history, model="claude-sonnet-4-5")
    without = estimate_request(history[:3] + history[4:], model="claude-sonnet-4-5")
    assert est.total > without.total and est.per_message[3] >= 5

    sent: list[GuardedRequest] = []
    ContextGuard("claude-sonnet-4-5").send(lambda r: sent.append(r) or {}, history)
    assert sent[0].kwargs()["messages"] == history

    same = convert_messages(history, "anthropic", source="anthropic")
    assert same.messages == history and same.system is None
    chat = convert_messages(history, "openai_chat", source="anthropic").messages
    assert chat[3] == {"role": "system", "content": "Answer in French now."}
    back = convert_messages(chat, "anthropic", source="openai_chat").messages
    assert back[3] == {"role": "system", "content": "Answer in French now."}


def test_an_anthropic_system_message_with_an_image_is_refused_by_its_index() -> None:
    history = anthropic_with_a_system_message()
    history[3] = {
        "role": "system",
        "content": [{"type": "image", "source": {"type": "url", "url": "https://x.org/a.png"}}],
    }
    with pytest.raises(Exception, match=r"message 3.*content\[0\]"):
        validate_messages(history, format="anthropic")


def test_an_anthropic_system_message_is_kept_whole_by_compaction() -> None:
    history = anthropic_with_a_system_message()[:4]
    for i in range(8):
        history += [
            {"role": "user", "content": f"Step {i}: " + "details " * 400},
            {"role": "assistant", "content": f"Done step {i}. " + "notes " * 400},
        ]
    history.append({"role": "user", "content": "Continue."})

    model = "claude-sonnet-4-5"
    result = compact(history, lambda p, n: "Summary", window=32_000, model=model, keep_tokens=1500)

    assert result.summarized > 3
    assert history[3] in result.messages


def test_media_in_a_gemini_function_response_are_counted() -> None:
    """``FunctionResponse.parts`` (a multimodal function response): its image costs what the
    model's rule says, not nothing (the fast path read the response alone)."""
    buf = io.BytesIO()
    Image.new("RGB", (1024, 1024), (10, 20, 30)).save(buf, format="PNG")
    image = {
        "inline_data": {"mime_type": "image/png", "data": base64.b64encode(buf.getvalue()).decode()}
    }
    call = {"role": "model", "parts": [{"function_call": {"id": "s1", "name": "shot", "args": {}}}]}
    response = {"id": "s1", "name": "shot", "response": {"result": "ok"}}
    plain = [{"role": "user", "parts": [{"text": "Look."}]}, call]
    without = [*plain, {"role": "user", "parts": [{"function_response": response}]}]
    with_image = [
        *plain,
        {"role": "user", "parts": [{"function_response": {**response, "parts": [image]}}]},
    ]
    as_user_image = [*plain, {"role": "user", "parts": [image]}]
    model = "gemini-2.5-pro"

    alone = estimate_request(as_user_image, model=model).per_message[2]
    assert alone > 200
    extra = (
        estimate_request(with_image, model=model).per_message[2]
        - estimate_request(without, model=model).per_message[2]
    )
    assert alone - 20 <= extra <= alone + 20


@pytest.mark.parametrize(
    "reference",
    [
        {"type": "item_reference", "id": "fc_68a1"},
        {"id": "fc_68a1"},
        {"id": "fc_68a1", "type": None},
    ],
)
def test_a_result_whose_call_is_a_stored_item_named_by_reference_is_sent(
    reference: dict[str, Any],
) -> None:
    """``store=True``: the function call is the server's item, sent as an ``item_reference``
    (its ``type`` may be left out); its output then names a call the list does not hold."""
    history = checked(
        RESPONSES_ITEM,
        [
            {"role": "user", "content": "List the files."},
            reference,
            {"type": "function_call_output", "call_id": "call_abc", "output": "a.py\nb.py"},
        ],
    )
    sent: list[GuardedRequest] = []
    ContextGuard("gpt-5").send(lambda r: sent.append(r) or {}, history)
    assert sent[0].messages == history
    assert estimate_request(history, model="gpt-5").per_message[1] > 0


@pytest.mark.parametrize("shape", ["search_result", "document"])
def test_retrieval_results_and_text_documents_are_pruned_like_text(shape: str) -> None:
    """A client tool's hits as ``search_result`` blocks (Anthropic's documented shape for
    retrieval) or a plain-text document: text the stub stands for (they were never stubbed:
    46k tokens stayed in a 16k window)."""
    big = "".join(f"line {i}: retrieved passage about topic {i % 97}\n" for i in range(600))
    if shape == "search_result":
        content: list[dict[str, Any]] = [
            {
                "type": "search_result",
                "source": f"https://docs.example.org/{i}",
                "title": f"Doc {i}",
                "content": [{"type": "text", "text": big}],
            }
            for i in range(5)
        ]
    else:
        source = {"type": "text", "media_type": "text/plain", "data": big * 5}
        content = [{"type": "document", "source": source}]
    history = checked(
        ANTHROPIC_MESSAGE,
        [
            {"role": "user", "content": "Search the docs."},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "x"}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": content}],
            },
            {"role": "assistant", "content": "Found it."},
            {"role": "user", "content": "Next?"},
            {"role": "assistant", "content": "Ok."},
            {"role": "user", "content": "Go on."},
        ],
    )
    result = prune(history, window=16_000, model="claude-sonnet-4-5")
    assert result.fits and [p.call_id for p in result.pruned] == ["toolu_1"]
    stub = result.messages[2]["content"][0]["content"]
    assert isinstance(stub, str) and stub.startswith("[ctxbudget: tool output pruned] search")
    assert history[2]["content"][0]["content"] == content
