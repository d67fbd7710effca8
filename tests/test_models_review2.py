"""Registry numbers checked against the providers' published model pages (second review).

A name that extends a registered family name reaches the family's entry unless it has one of its
own: Gemini's TTS models are not Gemini 2.5 Flash's 1M window, GPT-4o's audio models not GPT-4o's
128k, the early Mistral snapshots not the 128k of the later ones. An open-weight model's window is
the one a server gives it by default (Qwen3 and Qwen2.5 need YaRN turned on for 131,072).
"""

from __future__ import annotations

import pytest

from ctxbudget.budget import ContextWindowBudget
from ctxbudget.models import ModelRegistry, encoding_for_model, family_of, model_info


@pytest.mark.parametrize(
    ("name", "window", "max_output"),
    [
        # developers.openai.com/api/docs/models/gpt-4o-transcribe and /gpt-4o-mini-transcribe:
        # 16,000 context window, 2,000 max output tokens.
        ("gpt-4o-transcribe", 16_000, 2_000),
        ("gpt-4o-mini-transcribe", 16_000, 2_000),
        ("azure/gpt-4o-transcribe", 16_000, 2_000),
        # /gpt-4o-realtime-preview: 32,000 / 4,096; /gpt-4o-mini-realtime-preview: 16,000 / 4,096.
        ("gpt-4o-realtime-preview", 32_000, 4_096),
        ("gpt-4o-realtime-preview-2024-12-17", 32_000, 4_096),
        ("gpt-4o-mini-realtime-preview-2024-12-17", 16_000, 4_096),
        # GPT-3.5 Turbo snapshots before 1106 are 4k models (openrouter.ai: 4,095 context).
        ("gpt-3.5-turbo-0613", 4_096, 4_096),
        ("gpt-3.5-turbo-0301", 4_096, 4_096),
        ("azure/gpt-35-turbo-0613", 4_096, 4_096),
        # docs.mistral.ai: mistral-large-2402 and mistral-small-2402 "feature a 32k context
        # window"; Mistral Medium 1.0 (2312): 32k; Mistral Small 3 (2501): 32k.
        ("mistral-large-2402", 32_000, None),
        ("mistral.mistral-large-2402-v1:0", 32_000, None),
        ("mistral-small-2402", 32_000, None),
        ("mistral.mistral-small-2402-v1:0", 32_000, None),
        ("mistral-medium-2312", 32_000, None),
        ("mistral-small-2501", 32_000, None),
        ("mistralai/Mistral-Small-24B-Instruct-2501", 32_000, None),
        ("mistral-small:24b", 32_000, None),
        # Mistral Small 24.09: 32k for the API, 128k on its model card (the smaller kept).
        ("mistral-small-2409", 32_000, None),
        ("mistral-small:22b", 32_000, None),
        # docs.mistral.ai release notes: Mixtral 8x22B 64k; Mistral 7B and Mixtral 8x7B 32k.
        ("open-mixtral-8x22b", 64_000, None),
        ("open-mixtral-8x22b-2404", 64_000, None),
        ("open-mixtral-8x7b", 32_000, None),
        ("open-mistral-7b", 32_000, None),
        # docs.mistral.ai/models/magistral-medium-1-0-25-06: "Context length: 40k"; Magistral
        # Small 1.0 / 1.1 model cards: "set the maximum model length to 40k".
        ("magistral-medium-2506", 40_000, None),
        ("magistral-medium-2507", 40_000, None),
        ("mistralai/Magistral-Small-2506", 40_000, None),
        ("magistral-small-2507", 40_000, None),
        # ai.google.dev gemini-2.5-flash-native-audio-preview-12-2025: 131,072 in, 8,192 out.
        ("gemini-2.5-flash-native-audio-preview-12-2025", 131_072, 8_192),
    ],
)
def test_published_limits_below_the_family(name: str, window: int, max_output: int | None) -> None:
    info = model_info(name)
    assert info is not None, name
    assert (info.window, info.max_output) == (window, max_output)


@pytest.mark.parametrize(
    ("name", "window"),
    [
        # A longer registered name must not catch its siblings or later snapshots.
        ("gpt-4o-mini", 128_000),
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("gpt-4o-audio-preview", 128_000),
        ("gpt-3.5-turbo-0125", 16_385),
        ("gpt-3.5-turbo-16k-0613", 16_385),
        ("mistral-large-2411", 131_072),
        ("mistral-small-2503", 131_072),
        ("mistralai/Mistral-Small-3.1-24B-Instruct-2503", 131_072),
        ("magistral-medium-2509", 131_072),
        ("gemini-2.5-flash", 1_048_576),
        ("gemini-2.5-flash-lite-preview-09-2025", 1_048_576),
        ("qwen3-coder-30b-a3b-instruct", 262_144),
    ],
)
def test_later_snapshots_and_siblings_keep_their_window(name: str, window: int) -> None:
    info = model_info(name)
    assert info is not None, name
    assert info.window == window


@pytest.mark.parametrize(
    "name",
    [
        "gemini-2.5-flash-preview-tts",
        "gemini-2.5-pro-preview-tts",
        "models/gemini-2.5-flash-preview-tts",
        "gemini-2.5-flash-tts",
        "gemini-2.5-pro-tts",
        "gemini-2.5-flash-lite-preview-tts",
    ],
)
def test_gemini_tts_input_is_capped_at_its_published_8k(name: str) -> None:
    # ai.google.dev TTS model pages: input token limit 8,192, output token limit 16,384. The
    # budget lets no request carry more input, and still leaves room for the full output.
    budget = ContextWindowBudget.for_model(name)
    for max_tokens in (None, 1_000, 16_384):
        assert 0 < budget.available(max_tokens) <= 8_192, (name, max_tokens)
    assert budget.fits(8_000, max_tokens=16_384)
    assert not budget.fits(9_000, max_tokens=100)
    assert family_of(name) == "gemini"


@pytest.mark.parametrize(
    "name",
    [
        "qwen3:8b",
        "Qwen/Qwen3-8B",
        "qwen3-32b",
        "Qwen/Qwen3-30B-A3B",
        "qwen3-235b-a22b",
        "qwen3:14b",
        "Qwen/Qwen2.5-72B-Instruct",
        "qwen2.5:7b",
        "qwen2.5-coder-32b-instruct",
    ],
)
def test_qwen_windows_are_native_not_yarn(name: str) -> None:
    # "Context Length: 32,768 natively and 131,072 tokens with YaRN" (Qwen3 model cards);
    # Qwen2.5: "The current config.json is set for context length up to 32,768 tokens". A server
    # started from the published config refuses more, so the budget must not plan for 131,072.
    info = model_info(name)
    assert info is not None and info.window <= 32_768, name
    budget = ContextWindowBudget.for_model(name)
    assert not budget.fits(40_000)
    assert encoding_for_model(name) == "qwen3"


@pytest.mark.parametrize(
    "name",
    [
        "Qwen/Qwen3-30B-A3B-Instruct-2507",
        "qwen3-235b-a22b-thinking-2507",
        "qwen3:4b-instruct-2507-q4_K_M",
        "Qwen/Qwen3-Next-80B-A3B-Instruct",
    ],
)
def test_qwen3_long_context_updates_keep_more_than_the_32k_base(name: str) -> None:
    # huggingface.co/Qwen/Qwen3-30B-A3B-Instruct-2507: "Context Length: 262,144 natively".
    info = model_info(name)
    base = model_info("qwen3-8b")
    assert info is not None and base is not None, name
    assert base.window < info.window <= 262_144


@pytest.mark.parametrize(
    ("name", "window"), [("gpt-4.5", 128_000), ("gpt-4-1106-vision-preview", 128_000)]
)
def test_gpt_4_variants_with_long_windows_are_not_gpt_4(name: str, window: int) -> None:
    assert model_info(name).window == window


@pytest.mark.parametrize("bad", [1.5, True, "x", 0, -1])
def test_register_refuses_a_max_output_that_is_no_positive_int(bad: object) -> None:
    with pytest.raises(ValueError, match="positive int"):
        ModelRegistry().register("m", window=1_000, max_output=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive int"):
        ModelRegistry().register("m", window=1_000, max_input=bad)  # type: ignore[arg-type]
