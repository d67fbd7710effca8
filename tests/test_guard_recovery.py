"""ContextGuard decisions that real providers and agent loops provoke (each failed before).

``send`` here is a plain function playing the provider: it counts, refuses with the
provider's own wording, or answers with a usage report.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import pytest

from ctxbudget import (
    ContextBudgetError,
    ContextGuard,
    ContextOverflowError,
    ContextWindowBudget,
    GuardedRequest,
    MessageFormatError,
    PruneConfig,
    estimate_request,
    estimate_tokens,
)
from ctxbudget.limits import least_output

NO_THRESHOLD = PruneConfig(threshold=10**9)


def call(cid: str, name: str = "read_file") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


def tool_turn(cid: str, text: str, name: str = "read_file") -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": None, "tool_calls": [call(cid, name)]},
        {"role": "tool", "tool_call_id": cid, "content": text},
    ]


def numbered(words: str, lines: int) -> str:
    return "".join(f"{words} {i}\n" for i in range(lines))


def blob(lines: int, tag: str) -> str:
    return "".join(
        f"{tag} line {i}: some log output value={i * 7919 % 1000}\n" for i in range(lines)
    )


#: gpt-5's input cap (its window is 400k).
GPT5_INPUT_CAP = 272_000


def uncapped_gpt5_guard() -> ContextGuard:
    """A gpt-5 guard whose budget does not know the input cap (a host's deployment, or a
    model the registry lacks): the cap is learned from the provider's error."""
    budget = ContextWindowBudget(400_000, max_output=128_000, model="gpt-5")
    return ContextGuard("gpt-5", budget=budget, calibration=False)


def gpt5_provider(sent: list[GuardedRequest]) -> Any:
    """A provider refusing input over gpt-5's cap with its wording; records the requests."""

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        if request.input_tokens > GPT5_INPUT_CAP:
            raise RuntimeError(
                f"Input tokens exceed the configured limit of {GPT5_INPUT_CAP} tokens. Your"
                f" messages resulted in {request.input_tokens} tokens. Please reduce the length"
                " of the messages."
            )
        return {"usage": {"prompt_tokens": request.input_tokens}}

    return send


def one_message(tokens: int) -> list[dict[str, Any]]:
    """A history of one user message of about ``tokens`` tokens."""
    return [{"role": "user", "content": "Read: " + "word " * (tokens - 10)}]


def test_a_stated_count_sizes_the_retry_even_with_calibration() -> None:
    """A hex dump the estimate under-counts: the provider's count must size the retry, not
    a calibration learned from 14 ordinary turns."""
    window = 40_000
    dump = "".join(f"{i:08x}" for i in range(6_000))
    sent: list[tuple[int, int]] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        extra = sum(
            int(0.8 * estimate_tokens(dump))
            for m in request.messages
            if m.get("role") == "tool" and m["content"] == dump
        )
        count = request.estimate.raw.total + extra
        sent.append((request.attempt, count))
        if count + 1_000 > window:
            raise RuntimeError(f"prompt is too long: {count} tokens > {window} maximum")
        return {"usage": {"input_tokens": count}}

    budget = ContextWindowBudget(window, reserved_output=1_000, margin=0)
    guard = ContextGuard("gpt-4o", budget=budget, prune=NO_THRESHOLD)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Audit the service."}]
    for i in range(14):
        history += tool_turn(f"c{i}", blob(60, f"t{i}"))
        guard.send(send, history, max_tokens=1_000)
    history += tool_turn("dump", dump, name="hexdump")
    sent.clear()

    result = guard.send(send, history, max_tokens=1_000)

    assert [a for a, _ in sent] == [1, 2] and result.request.attempt == 2
    assert sent[1][1] + 1_000 <= window


def test_an_at_least_count_does_not_lower_max_tokens() -> None:
    """vLLM stops counting the prompt at limit - max_tokens + 1: "at least N" is no count
    to lower max_tokens by; the input must shrink."""
    limit, max_tokens = 32_768, 8_192
    sent: list[GuardedRequest] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        real = int(request.input_tokens * 1.3)
        if real + max_tokens > limit:
            at_least = limit - max_tokens + 1
            raise RuntimeError(
                f"This model's maximum context length is {limit} tokens. However, you"
                f" requested {max_tokens} output tokens and your prompt contains at least"
                f" {at_least} input tokens, for a total of at least {at_least + max_tokens}"
                " tokens. Please reduce the length of the input prompt or the number of"
                f" requested output tokens. (parameter=input_tokens, value={at_least})"
            )
        return {"usage": {"prompt_tokens": real}}

    history: list[dict[str, Any]] = [{"role": "user", "content": "Investigate the job."}]
    for i in range(7):
        history += tool_turn(f"c{i}", blob(160, f"t{i}"))
    assert estimate_request(history).total * 1.3 + max_tokens > limit
    budget = ContextWindowBudget(limit, max_tokens, margin=0)
    guard = ContextGuard(budget=budget, calibration=False, prune=NO_THRESHOLD)

    result = guard.send(send, history, max_tokens=max_tokens)

    assert [r.max_tokens for r in sent] == [max_tokens, max_tokens]
    assert result.request.input_tokens < sent[0].input_tokens


@pytest.mark.parametrize("max_tokens", [None, 4_096])
def test_a_smaller_provider_window_is_kept_for_the_next_turns(max_tokens: int | None) -> None:
    """A 32k deployment of a model the registry knows as 128k, worded as OpenAI does: the
    output is counted (and said so) only when the request asks for one."""
    window = 32_768
    sent: list[GuardedRequest] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        n, out = request.input_tokens, request.max_tokens
        if n + (out or 0) > window:
            said = (
                f"you requested {n + out} tokens ({n} in the messages, {out} in the completion)"
                if out
                else f"your messages resulted in {n} tokens"
            )
            raise RuntimeError(
                f"This model's maximum context length is {window} tokens. However, {said}."
                " Please reduce the length of the messages."
            )
        return {"usage": {"prompt_tokens": n}}

    history: list[dict[str, Any]] = [{"role": "user", "content": "Summarise the logs."}]
    for i in range(12):
        history += tool_turn(f"c{i}", blob(120, f"t{i}"))
    history.append({"role": "user", "content": "The spec:\n" + blob(1_400, "spec")})
    assert estimate_request(history, model="gpt-4o").total > window
    guard = ContextGuard("gpt-4o")

    result = guard.send(send, history, max_tokens=max_tokens)

    assert result.request.attempt == 2
    assert result.request.input_tokens + (max_tokens or 0) <= window
    for i in range(3):  # the next turns are sized for the real window at once
        history += tool_turn(f"next{i}", blob(200, f"n{i}"))
        sent.clear()
        guard.send(send, history, max_tokens=max_tokens)
        assert len(sent) == 1


def test_an_input_limit_is_not_taken_for_a_window() -> None:
    """gpt-5's input cap (272k of a 400k window) is the input's: a later request of 268k
    input with 8k of output is sent, not refused as if 272k were input + output."""
    limit = GPT5_INPUT_CAP
    sent: list[GuardedRequest] = []
    send, message = gpt5_provider(sent), one_message

    guard = uncapped_gpt5_guard()
    with pytest.raises(ContextOverflowError):  # one message, nothing to remove
        guard.send(send, message(280_000), max_tokens=8_000)
    sent.clear()

    result = guard.send(send, message(268_000), max_tokens=8_000)

    assert len(sent) == 1 and 264_000 < result.request.input_tokens <= limit


def test_anthropic_sdk_blocks_appended_as_the_docs_do() -> None:
    types = pytest.importorskip("anthropic.types")
    response = types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "."}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 40, "output_tokens": 12},
        }
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is in here?"}]
    messages.append({"role": "assistant", "content": response.content})
    messages.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}],
        }
    )
    sent: list[GuardedRequest] = []
    guard = ContextGuard("claude-sonnet-4-5")

    guard.send(lambda r: sent.append(r) or response, messages, max_tokens=1_024)

    assert len(sent) == 1 and sent[0].messages == messages


def _chat(turns: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You plan trips."}]
    for i in range(turns):
        history.append({"role": "user", "content": f"Question {i}: " + "trip details " * 200})
        history.append({"role": "assistant", "content": f"Answer {i}: " + "a day plan " * 200})
    return history


@pytest.mark.parametrize("change", ["none", "mid-run system", "reloaded", "system rebuilt"])
def test_the_summary_is_written_once(change: str) -> None:
    calls: list[int] = []

    def summarize(prompt: str, max_tokens: int) -> str:
        calls.append(max_tokens)
        return "## Progress\nQuestions answered so far."

    budget = ContextWindowBudget(16_000, reserved_output=1_000, margin=0)
    guard = ContextGuard("gpt-4o", budget=budget, summarize=summarize)
    history = _chat(20)
    assert estimate_request(history, model="gpt-4o").total > 15_000
    if change == "mid-run system":
        history.insert(5, {"role": "system", "content": "From now on, answer in French."})
    for turn in range(6):
        sent = history
        if change == "reloaded":
            sent = copy.deepcopy(history)
        elif change == "system rebuilt":
            sent = [{"role": "system", "content": f"You plan trips. Turn {turn}."}, *history[1:]]
        result = guard.send(lambda r: {"usage": {"prompt_tokens": r.input_tokens}}, sent)
        assert result.request.input_tokens <= 15_000
        history += [
            {"role": "user", "content": f"Follow-up {turn}: " + "more details " * 100},
            {"role": "assistant", "content": f"Reply {turn}: " + "more plans " * 100},
        ]
    assert len(calls) == 1


def test_concurrent_calls_keep_their_own_events() -> None:
    """A call that compacts and a call that does nothing, on one guard at the same time."""
    entered, release = threading.Event(), threading.Event()

    def summarize(prompt: str, max_tokens: int) -> str:
        entered.set()
        release.wait(5)
        return "## Progress\nAnswered."

    budget = ContextWindowBudget(16_000, reserved_output=1_000, margin=0)
    guard = ContextGuard("gpt-4o", budget=budget, summarize=summarize)
    results: dict[str, Any] = {}

    def ok(request: GuardedRequest) -> dict[str, Any]:
        return {"usage": {"prompt_tokens": request.input_tokens}}

    big = threading.Thread(target=lambda: results.update(big=guard.send(ok, _chat(30))))
    big.start()
    assert entered.wait(5)
    results["small"] = guard.send(ok, [{"role": "user", "content": "hi"}])
    release.set()
    big.join(5)

    assert [e.action for e in results["big"].events] == ["compact"]
    assert results["small"].events == ()


def test_a_call_left_without_result_keeps_the_view_stable() -> None:
    """The Pruner answers a lost call in the view with the same message object every turn,
    and reports it once."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Refactor."},
        {"role": "assistant", "content": None, "tool_calls": [call("lost", "run")]},
        {"role": "user", "content": "That hung; carry on."},
    ]
    guard = ContextGuard("gpt-4.1", window=1_000_000)
    views, events = [], []
    for i in range(4):
        history += tool_turn(f"c{i}", f"ok {i}")
        result = guard.send(lambda r: {"usage": {"prompt_tokens": r.input_tokens}}, history)
        views.append(result.request.messages)
        events.append(len(result.events))
    answer = views[0][2]
    assert answer["role"] == "tool" and answer["tool_call_id"] == "lost"
    assert all(v[2] is answer for v in views)
    assert events == [1, 0, 0, 0]


def test_a_message_too_large_for_the_window_is_named() -> None:
    budget = ContextWindowBudget(40_000, reserved_output=1_000, margin=0)
    guard = ContextGuard("gpt-4o", budget=budget)
    history = [
        {"role": "system", "content": "You summarise documents."},
        {"role": "user", "content": "Summarise: " + "word " * 60_000},
    ]
    sent: list[GuardedRequest] = []

    with pytest.raises(ContextBudgetError) as err:
        guard.send(sent.append, history)

    assert sent == []
    assert err.value.component == "conversation"
    assert "the largest message is #1 (user, " in str(err.value)


def ok(request: GuardedRequest) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": request.input_tokens}}


def test_a_replaced_tool_calls_list_is_read_again() -> None:
    """The caller drops a call by replacing the message's tool_calls list (and its result):
    the pairing check must not keep the dropped call."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Check the repo."},
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "ls"), call("c2")]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py"},
        {"role": "tool", "tool_call_id": "c2", "content": "SECRET=..."},
        {"role": "assistant", "content": "Two files."},
        {"role": "user", "content": "Good, continue."},
    ]
    guard = ContextGuard("gpt-4o")
    guard.send(ok, history)
    history[1]["tool_calls"] = [call("c1", "ls")]
    del history[3]
    history += [{"role": "assistant", "content": "Going on."}, {"role": "user", "content": "?"}]

    result = guard.send(ok, history)

    assert result.request.messages == history


def test_an_edit_of_a_message_holding_an_added_result_is_sent() -> None:
    """Anthropic: a lost call's result is added into the next user message; when the caller
    replaces that message's content (a redaction), the edit is what is sent."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Deploy."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "build", "input": {}},
                {"type": "tool_use", "id": "c2", "name": "read_env", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c2", "content": "KEY=secret"}],
        },
        {"role": "assistant", "content": "Build failed."},
        {"role": "user", "content": "Try again."},
    ]
    sent: list[GuardedRequest] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        return {"usage": {"input_tokens": request.input_tokens}}

    guard = ContextGuard("claude-sonnet-4", format="anthropic")
    guard.send(send, history)
    history[2]["content"] = [
        {"type": "tool_result", "tool_use_id": "c2", "content": "KEY=[REDACTED]"}
    ]
    history += [{"role": "assistant", "content": "Retrying."}, {"role": "user", "content": "Go."}]

    guard.send(send, history)

    assert "secret" in str(sent[0].messages) and "secret" not in str(sent[1].messages)
    assert [b["tool_use_id"] for b in sent[1].messages[2]["content"]] == ["c2", "c1"]


def test_gemini_part_objects_keep_the_order_of_responses() -> None:
    """The 'no output' result of a lost id-less call goes after the real response, also
    when the parts are google-genai Part objects (responses pair with calls in order)."""
    gtypes = pytest.importorskip("google.genai.types")

    def history(objects: bool) -> list[dict[str, Any]]:
        def part(**fields: Any) -> Any:
            p = gtypes.Part(**fields)
            return p if objects else p.model_dump(exclude_none=True)

        def read(path: str) -> Any:
            return part(function_call=gtypes.FunctionCall(name="read_file", args={"path": path}))

        answer = gtypes.FunctionResponse(name="read_file", response={"result": "port: 8080"})
        return [
            {"role": "user", "parts": [{"text": "Read config.yaml, then secrets.yaml."}]},
            {"role": "model", "parts": [read("config.yaml"), read("secrets.yaml")]},
            {"role": "user", "parts": [part(function_response=answer)]},
            {"role": "model", "parts": [{"text": "Got the config."}]},
            {"role": "user", "parts": [{"text": "Continue."}]},
        ]

    def responses(objects: bool) -> list[str]:
        sent: list[GuardedRequest] = []
        guard = ContextGuard("gemini-2.5-flash", format="gemini")
        guard.send(lambda r: sent.append(r) or {}, history(objects))
        out = []
        for p in sent[0].messages[2]["parts"]:
            fr = p["function_response"] if isinstance(p, dict) else p.function_response
            result = fr["response"] if isinstance(fr, dict) else fr.response
            out.append(result["result"][:10])
        return out

    assert responses(False) == responses(True) == ["port: 8080", "[ctxbudget"]


def test_a_rewrite_refused_once_is_refused_again() -> None:
    from ctxbudget import Pruner
    from ctxbudget.turns import PairingError

    history: list[dict[str, Any]] = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_0", "ls")]},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_0", "ls")]},
        {"role": "user", "content": "and?"},
    ]
    pruner = Pruner(128_000, model="gpt-4o")
    for _ in range(3):
        with pytest.raises(PairingError):
            pruner.prune(history)


@pytest.mark.parametrize("calibration", [True, False])
def test_the_excess_a_provider_states_is_counted_once(calibration: bool) -> None:
    """The first call overflows (the provider counts 1.7x): the retry stubs one output, not
    both (the anchored estimate and the limit must not both take the excess)."""

    def provider(request: GuardedRequest) -> dict[str, Any]:
        n = int(request.estimate.raw.total * 1.7)
        if n > 128_000:
            raise RuntimeError(
                "This model's maximum context length is 128000 tokens. However, your messages"
                f" resulted in {n} tokens. Please reduce the length of the messages."
            )
        return {"usage": {"prompt_tokens": n}}

    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Read both logs."},
        {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": numbered("alpha beta gamma delta", 5_000),
        },
        {
            "role": "tool",
            "tool_call_id": "c2",
            "content": numbered("epsilon zeta eta theta", 4_700),
        },
    ]
    guard = ContextGuard(
        "gpt-4o", calibration=calibration, prune=PruneConfig(turn_floor_fraction=None)
    )

    result = guard.send(provider, history)

    stubbed = [
        m["tool_call_id"] for m in result.request.messages[2:] if "[ctxbudget" in m["content"]
    ]
    assert result.request.attempt == 2 and len(stubbed) == 1


def _window_error(limit: int, n: int) -> RuntimeError:
    return RuntimeError(
        f"This model's maximum context length is {limit} tokens. However, your messages"
        f" resulted in {n} tokens. Please reduce the length of the messages."
    )


def test_compaction_is_sized_for_the_limit_the_provider_stated() -> None:
    """A 16k deployment of a 128k model, and a summarizer calling the same deployment."""
    limit = 16_384
    prompts: list[int] = []

    def provider(request: GuardedRequest) -> dict[str, Any]:
        if request.estimate.raw.total > limit:
            raise _window_error(limit, request.estimate.raw.total)
        return {"usage": {"prompt_tokens": request.estimate.raw.total}}

    def summarize(prompt: str, max_tokens: int) -> str:
        n = estimate_tokens(prompt) + 16
        prompts.append(n + max_tokens)
        if n + max_tokens > limit:
            raise _window_error(limit, n)
        return "## Goal\nPlan the trip.\n## Progress\nDays planned."

    history: list[dict[str, Any]] = [{"role": "system", "content": "You plan trips."}]
    for i in range(80):
        history += [
            {"role": "user", "content": f"Day {i}: " + "museum visit lunch walk " * 120},
            {"role": "assistant", "content": f"Plan {i}: " + "morning tour afternoon rest " * 120},
        ]
    guard = ContextGuard("gpt-4o", summarize=summarize)

    guard.send(provider, history)
    history.append({"role": "user", "content": "One more day: " + "beach " * 50})
    result = guard.send(provider, history)

    assert result.request.attempt == 1
    assert prompts and all(p <= limit for p in prompts)


@pytest.mark.parametrize("wording", ["anthropic", "vllm"])
def test_an_input_alone_wording_keeps_room_for_the_output(wording: str) -> None:
    """'prompt is too long: N > L' and vLLM's 'your request has N input tokens' state no
    output, yet both providers count max_tokens against L."""
    limit = 32_000
    sent: list[tuple[int, int]] = []

    def provider(request: GuardedRequest) -> dict[str, Any]:
        n, out = request.estimate.raw.total, request.max_tokens or 4_096
        sent.append((n, out))
        if n > limit:
            if wording == "anthropic":
                raise RuntimeError(f"prompt is too long: {n} tokens > {limit} maximum")
            raise RuntimeError(
                f"This model's maximum context length is {limit} tokens. However, your"
                f" request has {n} input tokens. Please reduce the length of the input messages."
            )
        if n + out > limit:
            raise RuntimeError(
                f"input length and `max_tokens` exceed context limit: {n} + {out} > {limit},"
                " decrease input length or `max_tokens` and try again"
            )
        return {"usage": {"input_tokens": n}}

    history: list[dict[str, Any]] = [{"role": "user", "content": "Compare the logs."}]
    for i in range(8):
        history += tool_turn(f"t{i}", blob(330, f"f{i}"))
    guard = ContextGuard("gpt-4o", window=64_000, prune=PruneConfig(turn_floor_fraction=None))

    result = guard.send(provider, history, max_tokens=4_096)

    assert result.request.attempt == 2 and sent[-1][0] + 4_096 <= limit


def test_a_learned_limit_follows_the_output_asked_for() -> None:
    """After a 16k deployment's overflow: a later request with a small max_tokens is sent,
    one whose output cannot fit beside its input is not."""
    limit = 16_384
    sent: list[GuardedRequest] = []

    def vllm(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        n, mt = request.estimate.raw.total, request.max_tokens or 0
        if n + mt > limit:
            raise RuntimeError(
                f"'max_tokens' or 'max_completion_tokens' is too large: {mt}. This model's"
                f" maximum context length is {limit} tokens and your request has {n} input"
                f" tokens ({mt} > {limit} - {n}). (parameter=max_tokens, value={mt})"
            )
        return {"usage": {"prompt_tokens": n}}

    def words(n: int) -> list[dict[str, Any]]:
        return [{"role": "user", "content": "Read: " + " ".join(f"w{i % 50}" for i in range(n))}]

    guard = ContextGuard("gpt-4o", calibration=False)
    guard.send(vllm, words(4_500), max_tokens=8_000)
    sent.clear()
    guard.send(vllm, words(6_000), max_tokens=512)
    assert len(sent) == 1
    sent.clear()
    with pytest.raises(ContextBudgetError):
        guard.send(vllm, words(3_000), max_tokens=12_000)
    assert sent == []


def test_a_lowered_max_tokens_fits_our_own_estimate_and_is_not_tiny() -> None:
    window = 12_000
    seen: list[GuardedRequest] = []

    def provider(request: GuardedRequest) -> dict[str, Any]:
        seen.append(request)
        n = request.estimate.raw.total - 300  # the provider counts a little less than we do
        out = request.max_tokens if request.max_tokens is not None else 4_096
        if n + out > window:
            raise RuntimeError(
                f"input length and `max_tokens` exceed context limit: {n} + {out} > {window},"
                " decrease input length or `max_tokens` and try again"
            )
        return {"usage": {"input_tokens": n}}

    budget = ContextWindowBudget(window, reserved_output=1_024, margin=0)
    guard = ContextGuard("claude-sonnet-4-5", budget=budget, calibration=False)
    history = [{"role": "user", "content": "Review. " + "component interface detail " * 2_700}]

    result = guard.send(provider, history)

    lowered = result.request.max_tokens
    assert lowered is not None and lowered >= 4_096 // 2
    assert result.request.input_tokens + lowered <= window


def test_a_result_stubbed_to_recover_stays_stubbed() -> None:
    """A hex dump the estimate under-counts overflowed once; the next turns do not send it
    whole again (with or without calibration)."""
    window = 40_000
    dump = "".join(f"{i:08x}" for i in range(6_000))

    def send(request: GuardedRequest) -> dict[str, Any]:
        extra = sum(
            int(0.8 * estimate_tokens(dump))
            for m in request.messages
            if m.get("role") == "tool" and m["content"] == dump
        )
        count = request.estimate.raw.total + extra
        attempts.append(request.attempt)
        if count + 1_000 > window:
            raise RuntimeError(f"prompt is too long: {count} tokens > {window} maximum")
        return {"usage": {"input_tokens": count}}

    for calibration in (True, False):
        budget = ContextWindowBudget(window, reserved_output=1_000, margin=0)
        guard = ContextGuard("gpt-4o", budget=budget, prune=NO_THRESHOLD, calibration=calibration)
        history: list[dict[str, Any]] = [{"role": "user", "content": "Audit the service."}]
        attempts: list[int] = []
        for i in range(14):
            history += tool_turn(f"c{i}", blob(60, f"t{i}"))
            guard.send(send, history, max_tokens=1_000)
        history += tool_turn("dump", dump, name="hexdump")
        guard.send(send, history, max_tokens=1_000)
        for _ in range(4):
            history += [
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "content": "Go."},
            ]
            attempts.clear()
            guard.send(send, history, max_tokens=1_000)
            assert attempts == [1]


def test_the_registry_input_cap_is_kept_before_any_error() -> None:
    """gpt-5 with the registry's numbers: 280k input is refused before it is sent (the
    provider would refuse it), 268k with 8k of output is sent once."""
    sent: list[GuardedRequest] = []
    send, message = gpt5_provider(sent), one_message
    guard = ContextGuard("gpt-5", calibration=False)
    with pytest.raises(ContextBudgetError):
        guard.send(send, message(280_000), max_tokens=8_000)
    assert sent == []
    guard.send(send, message(268_000), max_tokens=8_000)
    assert len(sent) == 1


def test_an_input_cap_with_no_output_asked_is_the_input_s() -> None:
    """gpt-5's 272k input cap learned from a request with no max_tokens: a later 276k
    input is not sent (the provider would refuse it), a 270k one is, once."""
    sent: list[GuardedRequest] = []
    send, message = gpt5_provider(sent), one_message

    guard = uncapped_gpt5_guard()
    with pytest.raises(ContextOverflowError):
        guard.send(send, message(280_000))
    sent.clear()
    with pytest.raises(ContextBudgetError):
        guard.send(send, message(276_000))
    assert sent == []
    guard.send(send, message(270_000))
    assert len(sent) == 1


@pytest.mark.parametrize("calibration", [False, True])
def test_an_old_output_pruned_to_recover_stays_stubbed(calibration: bool) -> None:
    """An old output under the prune threshold that the provider counts more than the
    estimate (a hex dump) makes a request overflow; the Pruner stubs it for the retry. It
    was sent whole again on every later turn, refused once each time (with calibration too:
    it learns from accepted requests, which no longer hold the dump)."""
    window = 40_000
    dump = "".join(f"{i:08x}" for i in range(1_000))
    attempts: list[int] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        count = request.estimate.raw.total + sum(
            int(0.8 * estimate_tokens(dump))
            for m in request.messages
            if m.get("role") == "tool" and m["content"] == dump
        )
        attempts.append(request.attempt)
        if count + 1_000 > window:
            raise RuntimeError(f"prompt is too long: {count} tokens > {window} maximum")
        return {"usage": {"input_tokens": count}}

    budget = ContextWindowBudget(window, reserved_output=1_000, margin=0)
    guard = ContextGuard("gpt-4o", budget=budget, calibration=calibration)
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Audit the service."},
        *tool_turn("d", dump, name="hexdump"),
        {"role": "assistant", "content": "A hex dump."},
        {"role": "user", "content": blob(2_750, "doc")},  # a pasted document: not prunable
        {"role": "assistant", "content": "Read it."},
        {"role": "user", "content": "Go."},
    ]
    refused_turns = 0
    for _ in range(6):
        attempts.clear()
        sent = guard.send(send, history, max_tokens=1_000).request.messages
        refused_turns += len(attempts) > 1
        assert not any(m.get("content") == dump for m in sent)
        history = [
            *history,
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "Go on."},
        ]
    assert refused_turns <= 1


def _anthropic_guard(window: int) -> ContextGuard:
    """An Anthropic guard that prunes only what does not fit, uncalibrated."""
    budget = ContextWindowBudget(window, reserved_output=1_000, margin=0)
    config = PruneConfig(threshold=10**9, min_turns=1000, turn_floor_fraction=None)
    return ContextGuard(
        "gpt-4o", budget=budget, prune=config, calibration=False, format="anthropic"
    )


def test_a_second_result_stubbed_in_a_message_stays_stubbed() -> None:
    """Anthropic: one user message holds two results the estimate under-counts; the first
    is stubbed on one turn, the second on a later one: neither is sent whole again."""
    window = 40_000
    a = "".join(f"{i:08x}" for i in range(6_000))
    b = "".join(f"{i:08x}" for i in range(100_000, 104_000))
    extra = {a: int(0.8 * estimate_tokens(a)), b: int(0.3 * estimate_tokens(b))}
    attempts: list[int] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        count = request.estimate.raw.total + sum(
            extra.get(block.get("content"), 0)
            for m in request.messages
            if isinstance(m.get("content"), list)
            for block in m["content"]
            if block.get("type") == "tool_result"
        )
        attempts.append(request.attempt)
        if count + 1_000 > window:
            raise RuntimeError(f"prompt is too long: {count} tokens > {window} maximum")
        return {"usage": {"input_tokens": count}}

    guard = _anthropic_guard(window)
    use = [{"type": "tool_use", "id": i, "name": "hexdump", "input": {}} for i in ("a", "b")]
    results = [
        {"type": "tool_result", "tool_use_id": "a", "content": a},
        {"type": "tool_result", "tool_use_id": "b", "content": b},
    ]
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Audit the dumps."},
        {"role": "assistant", "content": use},
        {"role": "user", "content": results},
    ]
    overflowing_turns = 0
    for _ in range(60):
        attempts.clear()
        guard.send(send, history)
        overflowing_turns += len(attempts) > 1
        filler = "filler text words here " * 60
        history = [
            *history,
            {"role": "assistant", "content": "Noted. " + filler},
            {"role": "user", "content": "Go on. " + filler},
        ]
    assert overflowing_turns <= 2  # the turn each result first overflows, not after


@pytest.mark.parametrize("text_first", [False, True])
def test_a_result_stubbed_beside_a_lost_call_s_stays_stubbed(text_first: bool) -> None:
    """Anthropic: the message that holds a result the estimate under-counts also gets the
    result added for a lost call of the same turn (a copy the pruner makes each turn, its
    results first). The result stubbed to recover from the overflow stays stubbed on the
    next turns, and nothing else is stubbed: a note written before the result too."""
    window = 40_000
    dump = "".join(f"{i:08x}" for i in range(7_000))
    attempts: list[int] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        count = request.estimate.raw.total + sum(
            int(0.8 * estimate_tokens(dump))
            for m in request.messages
            if isinstance(m.get("content"), list)
            for block in m["content"]
            if block.get("type") == "tool_result" and block.get("content") == dump
        )
        attempts.append(request.attempt)
        if count + 1_000 > window:
            raise RuntimeError(f"prompt is too long: {count} tokens > {window} maximum")
        return {"usage": {"input_tokens": count}}

    guard = _anthropic_guard(window)
    use = [{"type": "tool_use", "id": i, "name": "hexdump", "input": {}} for i in ("a", "x")]
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Audit the dump."},
        {"role": "assistant", "content": use},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": dump}]},
        {"role": "assistant", "content": "Read it."},  # the conversation went on without x
        {"role": "user", "content": "Go on."},
    ]
    note = {"type": "text", "text": "The dump of the primary node."}
    if text_first:
        history[2] = {"role": "user", "content": [note, *history[2]["content"]]}
    guard.send(send, history)
    assert attempts == [1, 2]
    for _ in range(3):
        history = [
            *history,
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "Go on."},
        ]
        attempts.clear()
        sent = guard.send(send, history).request.messages
        assert attempts == [1]
        assert "x" in str(sent[2]) and dump not in str(sent[2])
        assert note["text"] in str(sent[2]) or not text_first


def test_a_stub_in_a_copy_is_kept_against_the_same_result_of_its_message() -> None:
    """Where a copy of the pruner holds a message's results at other places than the message
    (its blocks moved), a stub made in the copy is kept against the same result of the
    message, not the block at the copy's place (which would stub the user's note)."""
    from ctxbudget.guard import _Call

    note = {"type": "text", "text": "note"}
    result = {"type": "tool_result", "tool_use_id": "a", "content": "out"}
    added = {"type": "tool_result", "tool_use_id": "x", "content": "lost"}
    message = {"role": "user", "content": [note, result]}
    copied = {"role": "user", "content": [result, added, note]}
    call = _Call([message], None, None, None, False, [], "anthropic")
    call.pruned_from.append(([copied], None, [message]))

    assert call.stands_for(copied, 0) == (message, 1)  # result a
    assert call.stands_for(copied, 1) == (copied, 1)  # the added result: the copy's own
    assert call.stands_for(message, 1) == (message, 1)
    other = {"role": "user", "content": [result]}
    assert call.stands_for(other, 0) == (other, 0)  # not in the view


def test_the_output_a_provider_counts_by_default_is_kept() -> None:
    """'N + 8192 > 16384' for requests with no max_tokens: later turns keep 8192 free
    instead of overflowing and lowering max_tokens every turn."""
    limit, default_out = 16_384, 8_192
    lowered: list[int] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        n, out = request.estimate.raw.total, request.max_tokens or default_out
        if n + out > limit:
            raise RuntimeError(
                f"input length and `max_tokens` exceed context limit: {n} + {out} > {limit},"
                " decrease input length or `max_tokens` and try again"
            )
        if request.max_tokens is not None:
            lowered.append(request.max_tokens)
        return {"usage": {"input_tokens": n}}

    def summarize(prompt: str, max_tokens: int) -> str:
        return "## Progress\nAnswered so far."

    guard = ContextGuard("gpt-4o", summarize=summarize, calibration=False)
    history: list[dict[str, Any]] = [{"role": "system", "content": "You plan trips."}]
    for i in range(30):
        history += [
            {"role": "user", "content": f"Day {i}: " + "museum visit lunch walk " * 60},
            {"role": "assistant", "content": f"Plan {i}: " + "morning tour rest " * 60},
        ]
        guard.send(send, history)
    assert len(lowered) <= 1


def _stating_provider(
    limits: list[int], default_out: int, sent: list[GuardedRequest], skew: float = 1.0
) -> Callable[[GuardedRequest], dict[str, Any]]:
    """A provider of limit ``limits[0]`` (the test may change it) that counts ``default_out``
    of output when no max_tokens is sent, and ``skew`` times our estimate of the input."""

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        n, limit = int(request.estimate.raw.total * skew), limits[0]
        out = request.max_tokens if request.max_tokens is not None else default_out
        if n + out > limit:
            raise RuntimeError(
                f"This model's maximum context length is {limit} tokens. However, you requested"
                f" {n + out} tokens ({n} in the messages, {out} in the completion)."
            )
        return {"usage": {"prompt_tokens": n}}

    return send


@pytest.mark.parametrize(
    ("default_out", "words"),
    [(13_000, 3_000), (13_000, 9_000), (16_000, 9_000), (40_000, 3_000), (40_000, 9_000)],
)
def test_a_default_output_the_input_leaves_no_room_for_is_capped_not_refused(
    default_out: int, words: int
) -> None:
    """A provider that counts a default output of its own when no max_tokens is sent, most
    of its limit or more: after the first overflow, every later turn goes out once, with a
    cap of what the limit leaves (the input cannot be pruned: it is the user's message)."""
    limit = 16_000
    sent: list[GuardedRequest] = []
    send = _stating_provider([limit], default_out, sent)
    history: list[dict[str, Any]] = [{"role": "user", "content": "hello " * words}]
    guard = ContextGuard("gpt-4o", window=limit)
    assert guard.send(send, history).overflow is not None
    for turn in range(3):
        history = [
            *history,
            {"role": "assistant", "content": f"Answer {turn}."},
            {"role": "user", "content": "And then?"},
        ]
        sent.clear()
        result = guard.send(send, history)
        cap = result.request.max_tokens
        assert len(sent) == 1 and result.overflow is None
        assert cap is not None and result.request.estimate.raw.total + cap <= limit
        assert cap >= least_output(default_out, limit)


def test_a_cap_in_place_of_the_default_output_leaves_room_for_the_estimates_error() -> None:
    """Calibrated to a provider that counts 10% more: the capped turns go out once each."""
    sent: list[GuardedRequest] = []
    send = _stating_provider([16_000], 13_000, sent, skew=1.1)
    guard = ContextGuard("gpt-4o", window=16_000)
    history: list[dict[str, Any]] = [{"role": "user", "content": "hello " * 3_000}]
    guard.send(send, history)
    for turn in range(20):
        history = [
            *history,
            {"role": "assistant", "content": f"Answer {turn}."},
            {"role": "user", "content": "And then? " * (turn + 1)},
        ]
        sent.clear()
        guard.send(send, history)
        assert len(sent) == 1, turn


def test_a_cap_in_place_of_the_default_output_keeps_the_callers_reserved_output() -> None:
    sent: list[GuardedRequest] = []
    send = _stating_provider([16_000], 6_000, sent)
    budget = ContextWindowBudget(128_000, reserved_output=10_000, model="gpt-4o")
    guard = ContextGuard("gpt-4o", budget=budget, calibration=False)
    guard.send(send, [{"role": "user", "content": "hi " * 12_500}])
    sent.clear()
    with pytest.raises(ContextBudgetError):
        guard.send(send, [{"role": "user", "content": "hi " * 10_800}])
    assert sent == []


def test_a_lower_limit_met_with_the_guards_cap_keeps_the_default_output_it_learned() -> None:
    """The deployment behind the endpoint shrinks from 16k to 14k: one overflow, then every
    turn goes out once with a cap under the new limit."""
    limits: list[int] = [16_000]
    sent: list[GuardedRequest] = []
    send = _stating_provider(limits, 13_000, sent)
    guard = ContextGuard("gpt-4o", window=128_000)
    history: list[dict[str, Any]] = [{"role": "user", "content": "hello " * 5_000}]
    for turn in range(6):
        if turn == 2:
            limits[0] = 14_000
        sent.clear()
        result = guard.send(send, history)
        assert len(sent) == (2 if turn in (0, 2) else 1), turn
        cap = result.request.max_tokens
        assert cap is not None and result.request.estimate.raw.total + cap <= limits[0]
        history = [
            *history,
            {"role": "assistant", "content": "OK."},
            {"role": "user", "content": "More."},
        ]


def test_a_stub_undone_by_compaction_is_not_remembered() -> None:
    """A fresh result stubbed before a compaction that made room for it is sent whole
    in the end: the next turn sends it whole too."""
    window = 100_000
    big = "".join(
        f"log line {i}: request handled in {i % 97} ms by worker {i % 13}\n" for i in range(5_600)
    )
    whole: list[bool] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        whole.append(any(m.get("content") == big for m in request.messages))
        return {"usage": {"prompt_tokens": request.input_tokens}}

    budget = ContextWindowBudget(window, reserved_output=1_000, margin=0)
    guard = ContextGuard(
        "gpt-4o", budget=budget, calibration=False,
        summarize=lambda prompt, cap: "## Progress\nRead the old notes.",
        prune=PruneConfig(threshold=10**9, turn_floor_fraction=None),
    )  # fmt: skip
    history: list[dict[str, Any]] = [{"role": "user", "content": "Audit the service."}]
    for i in range(30):
        history += [
            {
                "role": "assistant",
                "content": f"Note {i}: " + "the service logs show steady state " * 650,
            },
            {"role": "user", "content": f"Continue {i}."},
        ]
    history += tool_turn("big", big, name="read_logs")
    guard.send(send, history)
    history += [{"role": "assistant", "content": "Fine."}, {"role": "user", "content": "More?"}]
    guard.send(send, history)
    assert whole == [True, True]


def test_a_provider_count_beyond_the_window_is_an_overflow_not_a_crash() -> None:
    """The provider counts a document far above the estimate's fixed rule: no pruning makes
    room, and the caller gets the overflow error with the provider's as its cause."""
    history = [
        {
            "role": "user",
            "content": [
                {"type": "document", "source": {"type": "file", "file_id": "file_011"}},
                {"type": "text", "text": "Summarize this report."},
            ],
        }
    ]
    refusal = RuntimeError("prompt is too long: 612345 tokens > 200000 maximum")

    def send(request: GuardedRequest) -> dict[str, Any]:
        raise refusal

    with pytest.raises(ContextOverflowError, match="more than the window holds") as caught:
        ContextGuard("claude-sonnet-4-5").send(send, history, system="s", max_tokens=4096)
    assert caught.value.__cause__ is refusal


@pytest.mark.parametrize(
    "error",
    [
        "Image count exceeds the configured limit of 8.",
        "Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with maximum "
        "length 40, but got a string with length 52 instead.",
    ],
    ids=["image-count", "id-too-long"],
)
def test_an_error_about_something_else_is_not_an_overflow(error: str) -> None:
    """Not the context: the error reaches the caller as it is, and the next turn is sent as
    if it never happened (a limit of 8 "tokens" adopted would refuse every later request)."""
    sent: list[GuardedRequest] = []
    fail = [True]

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        if fail.pop() if fail else False:
            raise RuntimeError(error)
        return {"usage": {"prompt_tokens": request.input_tokens}}

    guard = ContextGuard("gpt-4o")
    history = [{"role": "user", "content": "Describe these images."}]
    with pytest.raises(RuntimeError) as caught:
        guard.send(send, history)
    assert str(caught.value) == error and not isinstance(caught.value, ContextOverflowError)
    guard.send(send, [*history, {"role": "user", "content": "Again, please."}])
    assert len(sent) == 2


def test_a_summarizer_failure_is_the_cause_of_the_budget_error() -> None:
    def summarize(prompt: str, max_tokens: int) -> str:
        raise PermissionError("summarizer: invalid API key")

    guard = ContextGuard("gpt-4o", window=16_000, summarize=summarize)
    history = [{"role": "user", "content": "Start."}]
    for i in range(40):  # no tool output to stub: only compaction could make it fit
        history.append({"role": "assistant", "content": f"step {i} " + "word " * 300})
        history.append({"role": "user", "content": "more " * 300})

    with pytest.raises(ContextBudgetError) as caught:
        guard.send(lambda request: None, history)
    assert isinstance(caught.value.__cause__, PermissionError)
    assert any("compaction was tried and failed" in note for note in caught.value.__notes__)


def test_an_async_summarizer_object_is_refused_by_send() -> None:
    class Summarizer:
        async def __call__(self, prompt: str, max_tokens: int) -> str:
            return "summary"

    guard = ContextGuard("gpt-4o", summarize=Summarizer())
    with pytest.raises(TypeError, match="asend"):
        guard.send(lambda request: None, [{"role": "user", "content": "hi"}])


def _block_ids(messages: list[Any]) -> list[str]:
    return [
        b.get("id") or b.get("tool_use_id")
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
    ]


def test_a_message_fixed_in_place_after_a_refused_send_is_read_for_its_format_again() -> None:
    """The first send fails on a malformed message before the pruner read the list; the caller
    repairs that message in place, which makes the list Anthropic: the guard reads it again
    (its reused tool_use ids are renamed, as a fresh guard renames them)."""
    use = {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "hello"},
        {"role": "tool", "tool_call_id": ["t1"], "content": "a.txt"},  # a list id: refused
        {"role": "assistant", "content": [dict(use)]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
        {"role": "assistant", "content": [dict(use)]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "y"}]},
        {"role": "user", "content": "thanks"},
    ]
    guard = ContextGuard("gpt-4o", window=100_000)
    with pytest.raises(MessageFormatError):
        guard.send(lambda request: None, msgs)
    repaired = msgs[1]
    del repaired["tool_call_id"]
    repaired["role"], repaired["content"] = "user", "ok"
    again = guard.send(lambda request: None, msgs).request.messages
    fresh = ContextGuard("gpt-4o", window=100_000).send(lambda request: None, msgs)
    assert _block_ids(fresh.request.messages) == ["t1", "t1", "t1_2", "t1_2"]
    assert _block_ids(again) == _block_ids(fresh.request.messages)


def openai_counting(
    window: int, skew: float, seen: list[tuple[int, int, int]], tool_skew: float | None = None
) -> Any:
    """A provider counting ``skew`` x the guard's raw estimate (tool outputs ``tool_skew`` x
    their own, when given) and refusing input + output over ``window`` with OpenAI's wording
    (both parts stated); records (attempt, its input count, max_tokens) of each request."""

    def send(request: GuardedRequest) -> dict[str, Any]:
        n = request.estimate.raw.total * skew
        if tool_skew is not None:
            outputs = (m["content"] for m in request.messages if m["role"] == "tool")
            n += (tool_skew - skew) * sum(estimate_tokens(c) for c in outputs)
        n, out = int(n), request.max_tokens or 0
        seen.append((request.attempt, n, out))
        if n + out > window:
            raise RuntimeError(
                f"This model's maximum context length is {window} tokens. However, you"
                f" requested {n + out} tokens ({n} in the messages, {out} in the completion)."
                " Please reduce the length of the messages or completion."
            )
        return {"usage": {"prompt_tokens": n}}

    return send


def long_chat(turns: int) -> list[dict[str, Any]]:
    """Plain questions and answers: nothing to prune."""
    history: list[dict[str, Any]] = []
    for i in range(turns):
        history += [
            {"role": "user", "content": f"Q{i}: " + numbered(f"question {i} detail", 280)},
            {"role": "assistant", "content": f"A{i}: " + numbered(f"answer {i} part", 140)},
        ]
    return [*history, {"role": "user", "content": "Next question?"}]


def test_an_invalidate_elsewhere_during_the_flight_leaves_the_recovery_as_it_was() -> None:
    """Another conversation on the same guard calls ``invalidate`` on one of its own
    messages while this request is in flight: the provider's count of this request is as
    good as ever, and the output is lowered by it (SPEC F5). The recovery took any
    invalidate as an edit of its own history, dropped the count and pruned instead."""
    window, seen = 128_000, []
    guard = ContextGuard("gpt-4o", window=window)
    count = openai_counting(window, 1.27, seen)
    elsewhere = {"role": "user", "content": "a message of another conversation"}

    def send(request: GuardedRequest) -> dict[str, Any]:
        if request.attempt == 1:
            guard.invalidate(elsewhere)
        return count(request)

    result = guard.send(send, long_chat(30), max_tokens=16_000)
    ((_, first, out1), (_, second, out2)) = seen
    assert second == first and out2 < out1  # the same input, less output
    assert [e.action for e in result.events] == ["lower_output"]


def test_an_overflow_nothing_can_shrink_is_not_sent_again_unchanged() -> None:
    """The provider refuses a request whose input it counts below the estimate (it adds a
    hidden output of its own), and nothing can be pruned: the call fails at once with the
    reason, instead of sending the same request a second time (the count lowered the
    calibrated estimate of the same messages)."""
    window, sent = 40_000, []
    history = [{"role": "user", "content": " ".join(f"w{j} q={j * 7 % 13}" for j in range(5_200))}]
    guard = ContextGuard(
        "gpt-4o", budget=ContextWindowBudget(window, reserved_output=4_000, margin=0),
        prune=PruneConfig(threshold=10**9),
    )  # fmt: skip

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request.estimate.raw.total)
        n = int(request.estimate.raw.total * 0.97)
        raise RuntimeError(
            f"This model's maximum context length is {window} tokens. However, you requested"
            f" {n + 8_000} tokens ({n} in the messages, 8000 in the completion). Please reduce"
            " the length of the messages or completion."
        )

    with pytest.raises(ContextOverflowError, match="nothing left to prune"):
        guard.send(send, history, max_tokens=4_000)
    assert len(sent) == 1


@pytest.mark.parametrize("summarizer", [False, True])
@pytest.mark.parametrize("tool_output", [False, True])
def test_after_a_lowered_output_the_next_turns_are_sent_with_one_too(
    tool_output: bool, summarizer: bool
) -> None:
    """The provider counts 27% more than the cold estimate: the first request leaves no room
    for the 16,000 output asked for, and is retried with less (SPEC F5). The next turns
    (calibrated now: the input 115k) were refused by the guard's own reserve, 16,000 and
    the 20,000 margin, with no summarizer; with one, compacted. The provider took such a
    request a turn before: they are sent whole with the output the window leaves, once
    each; a turn's fresh tool output is sent whole too (not stubbed to fit the reserve)."""
    window, seen = 128_000, []
    events: list[Any] = []
    summarize = (lambda prompt, max_tokens: "summary") if summarizer else None
    guard = ContextGuard("gpt-4o", window=window, on_event=events.append, summarize=summarize)
    send = openai_counting(window, 1.27, seen)
    history = long_chat(30)
    first = guard.send(send, history, max_tokens=16_000)
    assert seen[0][0::2] == (1, 16_000) and len(seen) == 2
    assert first.request.max_tokens is not None and first.request.max_tokens < 16_000
    output = blob(60, "fresh")
    for n in range(3):
        turn = tool_turn(f"c{n}", output) if tool_output else []
        history = [
            *history,
            *turn,
            {"role": "assistant", "content": f"Sure {n}."},
            {"role": "user", "content": "And then?"},
        ]
        seen.clear()
        events.clear()
        result = guard.send(send, history, max_tokens=16_000)
        ((attempt, count, out),) = seen
        assert attempt == 1 and out == result.request.max_tokens
        assert least_output(16_000, window) <= out < 16_000 and count + out <= window
        assert result.request.messages == history  # nothing compacted, stubbed or lost
        (event,) = events
        assert (event.action, event.reason, event.fits) == ("lower_output", "proactive", True)
        assert (event.max_tokens_before, event.max_tokens_after) == (16_000, out)


@pytest.mark.parametrize(("tool_skew", "lines"), [(None, 130), (0.3, 200), (0.3, 260), (0.35, 200)])
def test_when_the_output_cannot_be_lowered_more_outputs_are_stubbed_and_it_is_lowered(
    tool_skew: float | None, lines: int
) -> None:
    """After the provider took a lowered output, the agent reads a file a turn: the output is
    lowered turn after turn until no more can go (half of what was asked); then tool outputs
    are stubbed, which the provider had counted (the estimate is no longer anchored on its
    report), and the output lowered by what the stubs took out. Every such turn was refused
    before, to the end of the conversation (no summarizer, nothing old to prune). A provider
    counting tool outputs at a third of their estimate (less than the correction learned)
    refused the first send of some of those turns: a quarter of what the stubs took out is
    now kept as headroom."""
    window, seen = 128_000, []
    guard = ContextGuard("gpt-4o", window=window)
    send = openai_counting(window, 1.27, seen, tool_skew)
    history = long_chat(30)
    guard.send(send, history, max_tokens=16_000)
    source = "".join(f"src line {i}: x = compute({i}, {i * 31 % 97})\n" for i in range(lines))
    stubbed_turns = 0
    for n in range(16 if tool_skew else 6):
        history = [*history, *tool_turn(f"c{n}", source)]
        seen.clear()
        result = guard.send(send, history, max_tokens=16_000)
        ((attempt, count, out),) = seen
        assert attempt == 1 and least_output(16_000, window) <= out < 16_000
        assert count + out <= window
        stubbed_turns += result.request.messages != history
    assert stubbed_turns >= 1


def test_without_an_overflow_the_budget_s_reserve_holds() -> None:
    """A provider that never refuses: a request over the caller's budget (input + 16,000 +
    the 20,000 margin) is not sent with a lowered output, although its estimate is anchored
    on a reported count (the output is lowered only after the provider took a lowered one)."""
    window, seen = 128_000, []
    guard = ContextGuard("gpt-4o", window=window)
    send = openai_counting(10**9, 1.0, seen)
    history = long_chat(30)  # ~89k tokens
    guard.send(send, history, max_tokens=16_000)
    history = [*history, {"role": "assistant", "content": "ok"}, *one_message(15_000)]
    seen.clear()
    with pytest.raises(ContextBudgetError):
        guard.send(send, history, max_tokens=16_000)
    assert seen == []


@pytest.mark.parametrize("skew", [1.30, 1.36])
def test_an_output_lowered_before_sending_is_recovered_from_the_output_asked_for(
    skew: float,
) -> None:
    """The provider refuses a request the guard sent with a lowered output (what was added
    since the last report counts more than its estimate): the retry is lowered by the
    provider's count, down to half of the 16,000 the caller asked for, not half of the
    lowered cap; below that (skew 1.36: 7,000 left) the call fails with the reason."""
    window, seen = 128_000, []
    guard = ContextGuard("gpt-4o", window=window)
    counts = [1.27]

    def send(request: GuardedRequest) -> dict[str, Any]:
        return openai_counting(window, counts[0], seen)(request)

    def next_turn(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            *history,
            {"role": "assistant", "content": "Sure."},
            {"role": "user", "content": "Go"},
        ]

    history = next_turn(long_chat(30))
    guard.send(send, history, max_tokens=16_000)  # lowered on the retry
    history = next_turn(history)
    guard.send(send, history, max_tokens=16_000)  # lowered before sending
    counts[0] = skew  # the next request counts more than the calibrated estimate
    history = next_turn(history)
    seen.clear()
    if skew > 1.35:
        with pytest.raises(ContextOverflowError, match="could not make it fit"):
            guard.send(send, history, max_tokens=16_000)
        ((_, count, lowered),) = seen
        assert window - count < least_output(16_000, window) < lowered
        return
    result = guard.send(send, history, max_tokens=16_000)
    (_, count, lowered), (attempt, again, out) = seen
    assert lowered < 16_000 and count + lowered > window  # sent lowered, refused
    assert attempt == 2 and again == count and out == window - count
    assert out >= least_output(16_000, window) and result.request.max_tokens == out


def test_no_output_is_lowered_for_an_input_over_the_model_s_input_cap() -> None:
    """gpt-5 takes at most 272k input of its 400k window: an input of 275k by the anchored
    estimate is refused before it is sent, however much output the window would leave."""
    sent: list[GuardedRequest] = []
    send = gpt5_provider(sent)
    guard = ContextGuard("gpt-5")
    history = one_message(250_000)
    guard.send(send, history, max_tokens=8_000)
    history = [*history, {"role": "assistant", "content": "ok"}, *one_message(25_000)]
    sent.clear()
    with pytest.raises(ContextBudgetError):
        guard.send(send, history, max_tokens=8_000)
    assert sent == []
