"""ContextWindowBudget: the reserve rule, the exact boundary, violations; the model registry."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxbudget.budget import DEFAULT_MARGIN, DEFAULT_OUTPUT_RESERVE, ContextWindowBudget
from ctxbudget.errors import ContextBudgetError, ContextWindowError
from ctxbudget.models import ModelRegistry, family_of, model_info, register_model
from ctxbudget.request import RequestComponents, RequestEstimate, estimate_request

windows = st.integers(min_value=1, max_value=4_000_000)
maybe_tokens = st.none() | st.integers(min_value=0, max_value=200_000)


def reference_reserve(
    window: int,
    reserved: int | None,
    max_tokens: int | None,
    max_output: int | None,
    margin: int,
    fraction: float | None,
) -> int:
    if reserved is not None:
        base = reserved
    elif max_tokens is not None:
        base = max_tokens
    elif max_output is not None:
        base = max_output
    else:
        base = DEFAULT_OUTPUT_RESERVE
    total = base + margin
    capped = total if fraction is None else min(total, int(window * fraction))
    # The cap never trims an output size asked for (the provider would refuse the request).
    return max([capped, *(x for x in (reserved, max_tokens) if x is not None)])


@given(
    window=windows,
    reserved=maybe_tokens,
    max_tokens=maybe_tokens,
    max_output=maybe_tokens,
    margin=st.integers(min_value=0, max_value=50_000),
    fraction=st.none() | st.floats(min_value=0, max_value=1),
)
def test_reserve_rule(
    window: int,
    reserved: int | None,
    max_tokens: int | None,
    max_output: int | None,
    margin: int,
    fraction: float | None,
) -> None:
    budget = ContextWindowBudget(
        window, reserved, margin=margin, max_reserve_fraction=fraction, max_output=max_output
    )
    expected = reference_reserve(window, reserved, max_tokens, max_output, margin, fraction)
    assert budget.reserve(max_tokens) == expected
    assert budget.available(max_tokens) == window - expected


@given(window=windows, max_tokens=st.integers(min_value=1, max_value=2_000_000))
def test_a_request_over_the_window_with_its_own_max_tokens_never_fits(
    window: int, max_tokens: int
) -> None:
    for budget in (ContextWindowBudget(window), ContextWindowBudget(window, max_tokens // 2)):
        room = window - max_tokens
        assert not budget.fits(room + 1, max_tokens=max_tokens)
        assert budget.reserve(max_tokens) >= max_tokens
    fixed = ContextWindowBudget(window, max_tokens)  # the budget's own reserved output
    assert not fixed.fits(window - max_tokens + 1)


@given(window=windows, reserved=maybe_tokens, max_tokens=maybe_tokens)
def test_boundary_is_exact(window: int, reserved: int | None, max_tokens: int | None) -> None:
    budget = ContextWindowBudget(window, reserved)
    reserve = budget.reserve(max_tokens)
    full = window - reserve
    if full >= 0:
        assert budget.fits(full, max_tokens=max_tokens)
        assert budget.check(full, max_tokens=max_tokens) is None
        budget.enforce(full, max_tokens=max_tokens)
    assert not budget.fits(full + 1, max_tokens=max_tokens)
    violation = budget.check(full + 1, max_tokens=max_tokens)
    assert violation is not None and violation.over_by == 1
    for n in (full - 1, full, full + 1):
        assert budget.needs_compaction(n, max_tokens=max_tokens) == (n + reserve >= window)


@given(window=st.integers(min_value=1_000, max_value=1_000_000), max_tokens=maybe_tokens)
def test_estimate_carries_its_max_tokens(window: int, max_tokens: int | None) -> None:
    budget = ContextWindowBudget(window)
    components = RequestComponents(system=0, conversation=10, tools=0, framing=0)
    est = RequestEstimate(total=10, components=components, reserved_output=max_tokens)
    assert budget.fits(est) == budget.fits(10, max_tokens=max_tokens)


def make_estimate(system: int, tools: int, conversation: int, framing: int = 0) -> RequestEstimate:
    comps = RequestComponents(
        system=system, conversation=conversation, tools=tools, framing=framing
    )
    return RequestEstimate(total=system + tools + conversation + framing, components=comps)


@pytest.mark.parametrize(
    ("system", "tools", "conversation", "framing", "component"),
    [
        (101_000, 0, 5_000, 0, "system"),
        (10_000, 95_000, 5_000, 0, "tools"),
        (10_000, 10_000, 85_000, 0, "conversation"),
        # The framing tips the fixed parts over: the conversation is not at fault.
        (99_995, 0, 0, 9, "system"),
        (50_000, 49_995, 0, 9, "tools"),
    ],
)
def test_violation_names_component(
    system: int, tools: int, conversation: int, framing: int, component: str
) -> None:
    budget = ContextWindowBudget(128_000, 8_000)  # reserve 28k, 100k available
    violation = budget.check(make_estimate(system, tools, conversation, framing))
    assert violation is not None
    assert violation.component == component
    assert (violation.system, violation.tools, violation.conversation) == (
        system,
        tools,
        conversation,
    )
    assert violation.reserve == 28_000 and violation.window == 128_000
    assert str(violation).startswith(f"{component}: input")


def test_calibrated_estimate_names_the_component_its_raw_estimate_does() -> None:
    from ctxbudget.calibration import CalibrationTracker

    msgs = [{"role": "system", "content": "rules " * 30_000}, {"role": "user", "content": "hi"}]
    budget = ContextWindowBudget(32_000, model="gpt-4o")
    raw = estimate_request(msgs, model="gpt-4o")
    calibrated = CalibrationTracker("gpt-4o").estimate(msgs)  # cold: raw * 1.05
    want = budget.check(raw)
    got = budget.check(calibrated)
    assert want is not None and got is not None
    assert want.component == got.component == "system"
    assert got.input_tokens == calibrated.total
    assert got.system + got.tools + got.conversation + got.framing == calibrated.total
    assert got.system == round(raw.system * calibrated.total / raw.total)


def test_reserved_output_at_fault_and_input_fits() -> None:
    budget = ContextWindowBudget(10_000, 12_000, margin=0, max_reserve_fraction=None)
    violation = budget.check(make_estimate(100, 0, 100))
    assert violation is not None and violation.component == "reserved_output"
    assert violation.input_fits


def test_enforce_raises_context_budget_error() -> None:
    budget = ContextWindowBudget(1_000, 100, margin=0, model="tiny")
    with pytest.raises(ContextBudgetError) as info:
        budget.enforce(make_estimate(0, 0, 950))
    err = info.value
    assert isinstance(err, ContextWindowError)
    assert err.component == "conversation" and err.input_tokens == 950
    assert err.reserved_output == 100 and err.context_window == 1_000


def test_default_reserve_order() -> None:
    assert ContextWindowBudget(1_000_000).reserve() == DEFAULT_OUTPUT_RESERVE + DEFAULT_MARGIN
    assert ContextWindowBudget(1_000_000, max_output=8_000).reserve() == 28_000
    assert ContextWindowBudget(1_000_000, max_output=8_000).reserve(1_000) == 21_000
    assert ContextWindowBudget(1_000_000, 4_000, max_output=8_000).reserve(1_000) == 24_000
    assert ContextWindowBudget(100_000).reserve() == 25_000  # capped at 25%


def test_for_model_and_overrides() -> None:
    budget = ContextWindowBudget.for_model("deepseek-chat")
    assert (budget.window, budget.max_output) == (128_000, 8_192)
    assert budget.reserve() == 28_192
    assert ContextWindowBudget.for_model("deepseek-chat", window=64_000).window == 64_000
    with pytest.raises(KeyError):
        ContextWindowBudget.for_model("unheard-of-model")
    assert ContextWindowBudget.for_model("unheard-of-model", window=8_192).reserve() == 2_048


@given(
    window=st.integers(min_value=1, max_value=4_000_000),
    cap=st.integers(min_value=1, max_value=4_000_000),
    reserved=maybe_tokens,
    max_tokens=maybe_tokens,
)
def test_an_input_cap_holds_whatever_the_reserve(
    window: int, cap: int, reserved: int | None, max_tokens: int | None
) -> None:
    # GPT-5 takes at most 272k input tokens of its 400k window: input over the cap never fits,
    # and a cap does not change a reserve that already keeps the input under it.
    capped = ContextWindowBudget(window, reserved, max_input=cap)
    plain = ContextWindowBudget(window, reserved)
    assert capped.available(max_tokens) == min(plain.available(max_tokens), cap)
    assert not capped.fits(cap + 1, max_tokens=max_tokens)
    room = capped.available(max_tokens)
    assert room < 0 or capped.fits(room, max_tokens=max_tokens)


def test_gpt5_budget_keeps_to_its_input_cap() -> None:
    # The registry's input cap reaches the budget: 300k input (400k window - the capped 25%
    # reserve) was allowed, which OpenAI refuses ("Input tokens exceed the configured limit").
    info = model_info("gpt-5-codex")
    assert info is not None and info.max_input is not None and info.max_input < info.window
    budget = ContextWindowBudget.for_model("gpt-5-codex")
    assert budget.available() == info.max_input
    assert budget.fits(info.max_input) and not budget.fits(info.max_input + 1)
    # a caller's window under the cap leaves the usual rule
    small = ContextWindowBudget.for_model("gpt-5", window=200_000)
    assert small.available() == ContextWindowBudget(200_000, max_output=info.max_output).available()
    with pytest.raises(ValueError, match="max_input"):
        ModelRegistry().register("m", window=1_000, max_input=0)


def test_budget_with_real_estimate() -> None:
    msgs = [{"role": "user", "content": "hello " * 1_000}]
    est = estimate_request(msgs, model="gpt-4o", max_tokens=1_000)
    budget = ContextWindowBudget(est.total + 21_000, max_reserve_fraction=None)
    assert budget.fits(est) and budget.needs_compaction(est)
    assert not ContextWindowBudget(est.total + 20_999, max_reserve_fraction=None).fits(est)


@pytest.mark.parametrize(
    "bad",
    [
        {"window": 0},
        {"window": 10, "reserved_output": -1},
        {"window": 10, "max_reserve_fraction": 2.0},
        {"window": 10, "max_input": 0},
    ],
)
def test_invalid_budget(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ContextWindowBudget(**bad)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- registry


@pytest.mark.parametrize(
    ("name", "window", "family"),
    [
        ("gpt-4o-2024-08-06", 128_000, "openai"),
        ("gpt-4o-mini", 128_000, "openai"),
        ("gpt-4.1-mini", 1_047_576, "openai"),
        ("openai/gpt-5", 400_000, "openai"),
        ("claude-sonnet-4-5-20250929", 200_000, "anthropic"),
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", 200_000, "anthropic"),
        ("gemini-2.5-flash-lite", 1_048_576, "gemini"),
        ("deepseek/deepseek-reasoner", 128_000, "deepseek"),
        ("meta-llama/llama-3.3-70b-instruct", 131_072, "llama"),
        ("Qwen/Qwen3-Coder-480B-A35B-Instruct", 262_144, "qwen"),
        ("mistral-large-latest", 131_072, "mistral"),
        # Dated GPT-4 previews are 128k models, not the 8k gpt-4 their prefix matches.
        ("gpt-4-1106-preview", 128_000, "openai"),
        ("gpt-4-0125-preview", 128_000, "openai"),
        ("gpt-4.5-preview-2025-02-27", 128_000, "openai"),
        ("o1-preview-2024-09-12", 128_000, "openai"),
    ],
)
def test_registry_lookup(name: str, window: int, family: str) -> None:
    info = model_info(name)
    assert info is not None and info.window == window and info.family == family


def test_registry_is_overridable_and_isolated() -> None:
    reg = ModelRegistry()
    reg.register("gpt-4o", window=64_000, max_output=4_000)
    assert reg.lookup("gpt-4o-2024-08-06").window == 64_000  # type: ignore[union-attr]
    assert model_info("gpt-4o").window == 128_000  # type: ignore[union-attr]
    empty = ModelRegistry(builtin=False)
    assert empty.lookup("gpt-4o") is None and len(empty) == 0
    register_model("ctxbudget-test-model", window=5_000, family="qwen")
    assert family_of("ctxbudget-test-model-v2") == "qwen"
    assert family_of("some-gpt-thing") == "openai" and family_of("zzz") is None
    with pytest.raises(ValueError):
        reg.register("x", window=0)
    assert all(i.window > 0 for i in reg)
