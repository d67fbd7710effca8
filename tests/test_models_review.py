"""Registry numbers checked against the providers' published model pages (review of models.py).

A name that only extends a registered family name must not inherit a window larger than its own
published limit: an image model of Gemini 3 Pro, the 32k small Qwen sizes, Codestral 24.05.
"""

from __future__ import annotations

import pytest

from ctxbudget.models import ModelRegistry, encoding_for_model, family_of, model_info


@pytest.mark.parametrize(
    ("name", "window", "max_output"),
    [
        # docs.cloud.google.com/vertex-ai/generative-ai/docs/models/gemini/3-pro-image:
        # 65,536 input / 32,768 output (not gemini-3-pro's 1,048,576 / 65,536).
        ("gemini-3-pro-image-preview", 65_536, 32_768),
        ("models/gemini-3-pro-image-preview", 65_536, 32_768),
        ("vertex_ai/gemini-3-pro-image", 65_536, 32_768),
        # huggingface.co/Qwen/Qwen2.5-*-Instruct: the 0.5B, 1.5B and 3B sizes are 32,768 / 8,192.
        ("Qwen/Qwen2.5-0.5B-Instruct", 32_768, 8_192),
        ("qwen2.5-1.5b-instruct", 32_768, 8_192),
        ("qwen2.5-3b", 32_768, 8_192),
        ("Qwen/Qwen2.5-Coder-1.5B-Instruct", 32_768, 8_192),
        ("qwen2.5-coder-3b-instruct", 32_768, 8_192),
        # Ollama spells the size as a tag.
        ("qwen2.5:0.5b", 32_768, 8_192),
        ("qwen2.5-coder:1.5b", 32_768, 8_192),
        # huggingface.co/Qwen/Qwen3-0.6B and /Qwen3-1.7B: "Context Length: 32,768".
        ("Qwen/Qwen3-0.6B", 32_768, None),
        ("qwen3:1.7b", 32_768, None),
        # docs.mistral.ai/getting-started/models: Codestral 24.05, 32k.
        ("codestral-2405", 32_000, None),
        ("mistral/codestral-2405", 32_000, None),
    ],
)
def test_published_limits_below_the_family(name: str, window: int, max_output: int | None) -> None:
    info = model_info(name)
    assert info is not None, name
    assert (info.window, info.max_output) == (window, max_output)


@pytest.mark.parametrize(
    ("name", "window"),
    [
        # The larger sizes and later snapshots keep the family's numbers (Qwen's: the native
        # 32,768 a server gives by default, 131,072 needing YaRN; see test_models_review2.py).
        ("gemini-3-pro-preview", 1_048_576),
        ("qwen2.5-7b-instruct", 32_768),
        ("qwen2.5:72b", 32_768),
        ("qwen2.5-coder-32b-instruct", 32_768),
        ("qwen2.5-coder:7b", 32_768),
        ("qwen3-32b", 32_768),
        ("qwen3:8b", 32_768),
        ("qwen3-coder-480b-a35b-instruct", 262_144),
        ("codestral-2501", 262_144),
        ("codestral-latest", 262_144),
        # A tag that is not a size is still a boundary, not part of the name.
        ("llama3.1:latest", 131_072),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000),
    ],
)
def test_family_numbers_unchanged(name: str, window: int) -> None:
    info = model_info(name)
    assert info is not None, name
    assert info.window == window


def test_size_tag_keeps_family_and_encoding() -> None:
    assert family_of("qwen2.5:0.5b") == "qwen"
    assert encoding_for_model("qwen2.5:0.5b") == "qwen3"
    assert encoding_for_model("llama3.1:8b") == "llama3"
    # A caller's registration with a size tag is found by either spelling.
    reg = ModelRegistry(builtin=False)
    reg.register("my-model:7b", window=8_192)
    found = reg.lookup("my-model-7b-q4")
    assert found is not None and found.window == 8_192


@pytest.mark.parametrize(
    "name",
    ["some-new-model", "gpt-4oops", "qwenfoo-0.5b", "claude-2.1", "mistral-saba-2502:7b"],
)
def test_unknown_names_stay_unknown(name: str) -> None:
    assert model_info(name) is None
    assert encoding_for_model(name) == "conservative"
