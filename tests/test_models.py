"""Model names: the encoding that fits them and the registry entry they resolve to.

Providers and routers spell one model many ways (``openai/gpt-4o``, Bedrock's
``us.meta.llama3-3-70b-instruct-v1:0``, Vertex's ``claude-sonnet-4@20250514``, OpenRouter's
``anthropic/claude-3.5-sonnet``); each must reach the entry of its plain name, and a name that only
shares a prefix with a model (``o30``, ``gpt-4oops``) must reach nothing.
"""

from __future__ import annotations

import doctest

import pytest

import ctxbudget
import ctxbudget.models
from ctxbudget.models import (
    _BUILTIN,
    _canonical,
    encoding_for_model,
    family_of,
    model_info,
)

# --------------------------------------------------------------------------- encodings


@pytest.mark.parametrize(
    "model",
    [
        # A family name followed by more letters or digits is another name, not the family.
        "o30",
        "o3x-foo",
        "o1x",
        "o4o",
        "gpt-4oops",
        "gpt-5x",
        "gpt-50",
        "gpt-4.10",
        "gpt-ossify",
        "codexy",
        "omni-moderations",
        "text-embedding-3x",
        "qwenfoo",
        "qwqx",
        "llama3x-8b",
        "meta-llama/Llama-3x-8B",
    ],
)
def test_encoding_prefix_needs_a_boundary(model: str) -> None:
    assert encoding_for_model(model) == "conservative"


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        # The family followed by a separator, a version or the end of the name.
        ("o3", "o200k"),
        ("o3-mini", "o200k"),
        ("o4-mini-high", "o200k"),
        ("o1-2024-12-17", "o200k"),
        ("o3@2025-04-16", "o200k"),
        ("gpt-4o-2024-08-06", "o200k"),
        ("gpt-4o-mini", "o200k"),
        ("gpt-4o:latest", "o200k"),
        ("gpt-4.1-nano", "o200k"),
        ("gpt-5-codex", "o200k"),
        ("gpt-5.1", "o200k"),
        ("gpt-5.2-chat-latest", "o200k"),
        ("gpt-oss:20b", "o200k"),
        ("codex-mini-latest", "o200k"),
        ("azure/gpt-4o", "o200k"),
        ("openai.gpt-oss-120b-1:0", "o200k"),
        ("gpt-4-0613", "cl100k"),
        ("gpt-35-turbo-16k", "cl100k"),
        ("text-embedding-ada-002", "cl100k"),
        ("llama3.1:8b", "llama3"),
        ("meta.llama3-1-70b-instruct-v1:0", "llama3"),
        ("us.meta.llama3-3-70b-instruct-v1:0", "llama3"),
        ("meta.llama3-8b-instruct-v1:0", "llama3"),
        ("together_ai/meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", "llama3"),
        ("llama-30b", "conservative"),
        ("meta.llama4-scout-17b-instruct-v1:0", "conservative"),
        ("qwen2.5vl:7b", "qwen3"),
        ("Qwen/Qwen3-Coder-480B-A35B-Instruct", "qwen3"),
        ("qwq-32b", "qwen3"),
        ("claude-3-5-sonnet-20241022", "conservative"),
        ("gemini-2.5-pro-preview-05-06", "conservative"),
        ("ft:gpt-4o-mini-2024-07-18:org::abc123", "o200k"),
        ("openai/ft:gpt-3.5-turbo-0125:org:suffix:abc123", "cl100k"),
    ],
)
def test_encoding_for_model(model: str, encoding: str) -> None:
    assert encoding_for_model(model) == encoding


def test_public_encoding_for_model_uses_the_boundary_rules() -> None:
    for model in ("o30", "o3x-foo", "gpt-4oops", "qwenfoo"):
        assert ctxbudget.encoding_for_model(model) == "conservative", model


# --------------------------------------------------------------------------- registry names


@pytest.mark.parametrize(
    ("name", "plain"),
    [
        # AWS Bedrock, in-region and cross-region ids.
        ("meta.llama3-1-70b-instruct-v1:0", "llama-3.1-70b-instruct"),
        ("us.meta.llama3-3-70b-instruct-v1:0", "llama-3.3-70b-instruct"),
        ("meta.llama3-2-11b-instruct-v1:0", "llama-3.2-11b-vision-instruct"),
        ("us.meta.llama4-scout-17b-instruct-v1:0", "llama-4-scout-17b-16e-instruct"),
        ("meta.llama4-maverick-17b-instruct-v1:0", "llama-4-maverick-17b-128e-instruct"),
        ("us.deepseek.r1-v1:0", "deepseek-r1"),
        ("openai.gpt-oss-120b-1:0", "gpt-oss-120b"),
        # Router and host spellings.
        ("together_ai/meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", "llama-3.1-70b"),
        ("llama3.3:70b", "llama-3.3-70b"),
        ("anthropic/claude-3.5-sonnet", "claude-3-5-sonnet"),
        ("openrouter/anthropic/claude-3.7-sonnet:thinking", "claude-3-7-sonnet"),
        ("anthropic/claude-opus-4.5", "claude-opus-4-5"),
        ("anthropic/claude-haiku-4.5", "claude-haiku-4-5"),
        ("azure/gpt-35-turbo", "gpt-3.5-turbo"),
        # A fine-tuned model has its base model's window.
        ("ft:gpt-4o-mini-2024-07-18:my-org::abc123", "gpt-4o-mini"),
        ("ft:gpt-4.1-2025-04-14:my-org:custom:abc123", "gpt-4.1"),
    ],
)
def test_provider_spellings_resolve_like_the_plain_name(name: str, plain: str) -> None:
    info = model_info(name)
    assert info is not None, name
    assert info == model_info(plain)
    assert family_of(name) == family_of(plain)
    assert encoding_for_model(name) == encoding_for_model(plain)


@pytest.mark.parametrize(
    ("name", "plain"),
    [
        # Already resolved before; kept so the normalisation above does not lose them.
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet-20241022"),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4-20250514"),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("bedrock/converse/us.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"),
        ("openrouter/anthropic/claude-sonnet-4", "claude-sonnet-4"),
        ("openai/gpt-4o", "gpt-4o"),
        ("azure/gpt-4o", "gpt-4o"),
        ("vertex_ai/gemini-2.5-pro", "gemini-2.5-pro"),
        ("models/gemini-2.0-flash-001", "gemini-2.0-flash"),
        ("claude-sonnet-4@20250514", "claude-sonnet-4-20250514"),
        ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet"),
        (
            "projects/p/locations/us-east5/publishers/anthropic/models/claude-opus-4-1@20250805",
            "claude-opus-4-1",
        ),
        ("mistral.mistral-large-2407-v1:0", "mistral-large"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("o4-mini-high", "o4-mini"),
        ("gemini-2.5-pro-preview-05-06", "gemini-2.5-pro"),
    ],
)
def test_spellings_that_resolved_before_still_do(name: str, plain: str) -> None:
    info = model_info(name)
    assert info is not None and info == model_info(plain)


@pytest.mark.parametrize(
    "name",
    [
        "gpt-4oops",
        "o30",
        "o3x-foo",
        "gpt-5x",
        "claude-sonnet-4x",
        "claude-2.1",
        "gemini-2.5-prox",
        # LLaMA-1 and Llama 2 / 3 (8k windows) are not Llama 3.1+ (128k).
        "llama-30b",
        "huggyllama/llama-30b",
        "meta.llama2-13b-chat-v1",
        "meta.llama3-8b-instruct-v1:0",
        "meta.llama3-70b-instruct-v1:0",
        "llama3-70b-8192",
        "deepseek.v2-lite",
    ],
)
def test_names_that_only_share_a_prefix_resolve_to_nothing(name: str) -> None:
    assert model_info(name) is None


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("us.deepseek.r1-v1:0", "deepseek"),
        ("o3-mini-high", "openai"),
        ("azure/o1", "openai"),
        ("my-o3-deployment", "openai"),
        ("hello1", None),
        ("video3-large", None),
        ("turbo4", None),
        ("proto1b", None),
    ],
)
def test_family_hints_need_a_boundary(name: str, family: str | None) -> None:
    assert family_of(name) == family


def test_builtin_names_are_canonical_and_reachable() -> None:
    # Look-ups canonicalise the name first: an entry not in canonical spelling is dead.
    for name, window, _, _ in _BUILTIN:
        assert _canonical(name) == name
        info = model_info(name)
        assert info is not None and info.name == name and info.window == window


# --------------------------------------------------------------------------- registry numbers


@pytest.mark.parametrize(
    ("name", "window", "max_output"),
    [
        # developers.openai.com/api/docs/models/gpt-3.5-turbo-instruct: 4,096 / 4,096.
        ("gpt-3.5-turbo-instruct", 4_096, 4_096),
        ("azure/gpt-35-turbo-instruct", 4_096, 4_096),
        # GPT-5 pro: 400,000 context, 272,000 max output.
        ("gpt-5-pro", 400_000, 272_000),
        ("gpt-5-pro-2025-10-06", 400_000, 272_000),
        # The chat (Instant) snapshots of GPT-5.x are 128k models, not their 400k reasoners.
        ("gpt-5.1-chat-latest", 128_000, 16_384),
        ("gpt-5.3-chat-latest", 128_000, 16_384),
        ("gpt-5.2-chat-latest", 128_000, 16_384),
        # Vertex AI model page: 32,768 input / 32,768 output, not gemini-2.5-flash's 1M.
        ("gemini-2.5-flash-image", 32_768, 32_768),
        ("gemini-2.5-flash-image-preview", 32_768, 32_768),
        # ai.google.dev model page: 1,048,576 input, 65,536 output.
        ("gemini-3.1-pro-preview", 1_048_576, 65_536),
    ],
)
def test_registry_numbers(name: str, window: int, max_output: int | None) -> None:
    info = model_info(name)
    assert info is not None, name
    assert (info.window, info.max_output) == (window, max_output)


def test_docstring_examples() -> None:
    result = doctest.testmod(ctxbudget.models, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# --------------------------------------------------------------------------- later versions


@pytest.mark.parametrize(
    ("name", "older"),
    [
        # A version number after a registered one names another model (with another window):
        # it resolves to its own entry, or to nothing, never to the older model's.
        ("claude-opus-4-9", "claude-opus-4"),
        ("claude-sonnet-4-7", "claude-sonnet-4"),
        ("anthropic.claude-opus-4-9-v1", "claude-opus-4"),
        ("gpt-5.6", "gpt-5"),
        ("gpt-5.6-chat-latest", "gpt-5"),
        ("qwen3.7-max", "qwen3"),
        ("deepseek-v3.3", "deepseek-v3"),
        ("gemini-3.9-flash", "gemini-3"),
        ("llama-3.1.2", "llama-3.1"),
        ("gpt-4.1.5", "gpt-4"),  # not GPT-4's 8k either
    ],
)
def test_a_later_version_is_not_the_older_model(name: str, older: str) -> None:
    info = model_info(name)
    assert info is None or not info.name.startswith(older), (name, info)


@pytest.mark.parametrize(
    ("name", "plain"),
    [
        # Dates, snapshots and sizes after a version still name that model.
        ("gpt-5-2025-08-07", "gpt-5"),
        ("gpt-4-0613", "gpt-4"),
        ("gemini-1.5-pro-002", "gemini-1.5-pro"),
        ("claude-opus-4-20250514", "claude-opus-4"),
        ("deepseek-v3-0324", "deepseek-v3"),
        ("qwen3-8b", "qwen3"),
        ("llama-3.1-8b-instruct", "llama-3.1"),
        ("qwen2.5-7b-instruct-1m", "qwen2.5"),
        ("gpt-3.5-turbo-16k", "gpt-3.5-turbo"),
        # Ollama's size tags, decimal ones too.
        ("deepseek-r1:1.5b", "deepseek-r1"),
        ("deepseek-r1:1.5b-qwen-distill-q4_K_M", "deepseek-r1"),
        ("deepseek-r1:70b", "deepseek-r1"),
    ],
)
def test_dates_snapshots_and_sizes_after_a_version_still_match(name: str, plain: str) -> None:
    info = model_info(name)
    assert info is not None and info.name == plain


@pytest.mark.parametrize(
    ("name", "window", "max_output", "max_input"),
    [
        # platform.claude.com model pages: 1M / 128K from Opus 4.6 on.
        ("claude-opus-4-6", 1_000_000, 128_000, None),
        ("anthropic/claude-opus-4.6", 1_000_000, 128_000, None),
        ("global.anthropic.claude-opus-4-6-v1", 1_000_000, 128_000, None),
        ("claude-sonnet-4-6", 1_000_000, 128_000, None),
        ("claude-opus-5-5", 1_000_000, 128_000, None),
        ("claude-fable-5-1", 1_000_000, 128_000, None),
        # Anthropic's aliases of the May 2025 models.
        ("claude-sonnet-4-0", 200_000, 64_000, None),
        ("claude-opus-4-0", 200_000, 32_000, None),
        # GPT-5.x: 5.4 and 5.5 take 922k of 1,050,000 as input; the chat and spark models
        # are 128k ones (below GPT-5's 400k, which a budget must not assume for them).
        ("gpt-5.5", 1_050_000, 128_000, 922_000),
        ("gpt-5.4-pro", 1_050_000, 128_000, 922_000),
        ("gpt-5.4-mini", 400_000, 128_000, 272_000),
        ("gpt-5.2-codex", 400_000, 128_000, 272_000),
        ("gpt-5.3-chat-latest", 128_000, 16_384, None),
        ("gpt-5.3-codex-spark", 128_000, 32_000, 100_000),
        ("gpt-4o-2024-05-13", 128_000, 4_096, None),
        ("gemini-3-flash-preview", 1_048_576, 65_536, None),
        ("gemini-3.5-flash", 1_048_576, 65_536, None),
        ("deepseek-v4-pro", 1_000_000, 384_000, None),
        ("deepseek-v3.1-terminus", 128_000, 8_192, None),
        ("Qwen/Qwen3.5-397B-A17B", 262_144, 65_536, None),
        # Codestral 22B is Codestral 24.05, a 32k model (not today's 256k Codestral).
        ("codestral:22b", 32_000, None, None),
    ],
)
def test_late_2026_models(
    name: str, window: int, max_output: int | None, max_input: int | None
) -> None:
    info = model_info(name)
    assert info is not None, name
    assert (info.window, info.max_output, info.max_input) == (window, max_output, max_input)


def test_a_budget_for_a_128k_gpt_5_model_is_not_gpt_5s() -> None:
    from ctxbudget import ContextWindowBudget

    for name in ("gpt-5.3-chat-latest", "gpt-5.3-codex-spark"):
        assert ContextWindowBudget.for_model(name).available() <= 128_000


@pytest.mark.parametrize("name", ["qwen3.5-plus", "qwen3.6-27b", "Qwen/Qwen3.5-397B-A17B", "qwen4"])
def test_qwen_after_3_5_is_not_the_qwen3_vocabulary(name: str) -> None:
    assert encoding_for_model(name) == "conservative"
    assert encoding_for_model("qwen3-8b") == encoding_for_model("qwen2.5-72b") == "qwen3"


@pytest.mark.parametrize("name", ["gpt-j-6b", "EleutherAI/gpt-neox-20b", "gpt2", "gpt-neo-2.7b"])
def test_models_named_gpt_by_others_are_not_openai(name: str) -> None:
    assert family_of(name) is None
    assert family_of("my-gpt-4o-deployment") == family_of("chatgpt-4o-latest") == "openai"
