"""Model names: their context window and maximum output, and the encoding that counts them.

The registry holds each model's window and maximum output, with no network call. Numbers are the
providers' published limits for their own APIs (the same model behind another host may be served
with a smaller window: register your host's numbers). An open-weight model's window is the one a
server gives it by default, its native context: Qwen3 and Qwen2.5 reach 131,072 only with YaRN
rope scaling turned on in their config. Where the published numbers disagree, the registry keeps
the smaller one.

A name is looked up as providers and routers spell it. It is lower-cased and loses its routing
prefixes (``openai/``, ``openrouter/anthropic/``, ``vertex_ai/``, a Vertex or Bedrock resource
path, Bedrock's ``meta.`` / ``us.anthropic.`` / ``us.deepseek.``); a fine-tuned
``ft:<base>:<org>::<id>`` is its base model; Bedrock's ``llama3-1`` and Together's
``meta-llama-3.1`` are ``llama-3.1``, OpenRouter's ``claude-3.5-sonnet`` is ``claude-3-5-sonnet``,
Azure's ``gpt-35-turbo`` is ``gpt-3.5-turbo`` and Ollama's size tag in ``qwen3:1.7b`` is
``qwen3-1.7b``. The entry is then the longest registered name that the result starts with, up to
a boundary: the end of the name or a character that is not a letter or digit (a date
``-20250929``, Vertex's ``@20250514``, Bedrock's ``-v1:0``, a tag ``:latest``).
``gpt-4oops`` and ``o30`` match nothing. A registered name that ends in a version number is not
extended by a further one or two digits: ``claude-opus-4-6``, ``gpt-5.5`` and ``qwen3.5`` are other
models than ``claude-opus-4``, ``gpt-5`` and ``qwen3`` (with other windows), and resolve to their
own entries or to nothing, while ``gpt-5-2025-08-07`` and ``qwen3-8b`` are ``gpt-5`` and ``qwen3``.

>>> info = model_info("gpt-4o-2024-08-06")
>>> info.window, info.max_output, info.family
(128000, 16384, 'openai')
>>> model_info("us.meta.llama3-3-70b-instruct-v1:0").name
'llama-3.3'
>>> reg = ModelRegistry()
>>> _ = reg.register("my-llama", window=32_768, max_output=4_096, family="llama")
>>> reg.lookup("my-llama-q4").window
32768
>>> encoding_for_model("claude-sonnet-4@20250514"), encoding_for_model("o3-mini")
('conservative', 'o200k')
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "DEFAULT_REGISTRY",
    "FAMILIES",
    "ModelInfo",
    "ModelRegistry",
    "encoding_for_model",
    "family_of",
    "model_info",
    "register_model",
]

#: Model families that have their own framing profile (chat template, tool framing).
FAMILIES = ("openai", "anthropic", "gemini", "deepseek", "llama", "qwen", "mistral")


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What the budget needs to know about a model.

    Attributes:
        name: The registered name (a prefix of the names it matches).
        window: Context window in tokens (input + output).
        max_output: Largest output the model may produce, if published.
        family: ``openai``, ``anthropic``, ``gemini``, ``deepseek``, ``llama``, ``qwen``,
            ``mistral`` or ``None``.
        max_input: Largest input the provider accepts when it is below the window (GPT-5:
            272k of its 400k), else ``None``.
    """

    name: str
    window: int
    max_output: int | None
    family: str | None
    max_input: int | None = None


_BUILTIN: tuple[tuple[str, int, int | None, str], ...] = (
    # OpenAI. GPT-5.4 and 5.5 (and their pro models): 1,050,000 tokens, 922,000 of them input,
    # 128,000 output; 5.2, 5.3-codex and the 5.4 mini/nano: GPT-5's 400k (272k input); the 5.3
    # chat and codex-spark models are 128k ones (models.dev, providers/openai/models/*.toml at
    # f3fc692; docs.oxen.ai's gpt-5-5-2026-04-23 page: 1,050,000 / 128,000).
    ("gpt-5.5", 1_050_000, 128_000, "openai"),
    ("gpt-5.4", 1_050_000, 128_000, "openai"),
    ("gpt-5.4-mini", 400_000, 128_000, "openai"),
    ("gpt-5.4-nano", 400_000, 128_000, "openai"),
    ("gpt-5.3-codex", 400_000, 128_000, "openai"),
    ("gpt-5.3-codex-spark", 128_000, 32_000, "openai"),
    ("gpt-5.3-chat", 128_000, 16_384, "openai"),
    ("gpt-5.2", 400_000, 128_000, "openai"),
    ("gpt-5", 400_000, 128_000, "openai"),
    ("gpt-5-chat", 128_000, 16_384, "openai"),
    ("gpt-5-pro", 400_000, 272_000, "openai"),
    ("gpt-5.1", 400_000, 128_000, "openai"),
    # The chat (Instant) snapshots are 128k models, with 16,384 output (models.dev).
    ("gpt-5.1-chat", 128_000, 16_384, "openai"),
    ("gpt-5.2-chat", 128_000, 16_384, "openai"),
    ("gpt-4.1", 1_047_576, 32_768, "openai"),
    ("gpt-4o", 128_000, 16_384, "openai"),
    # The first GPT-4o snapshot wrote 4,096 tokens at most (models.dev).
    ("gpt-4o-2024-05-13", 128_000, 4_096, "openai"),
    # GPT-4o's audio models are not its 128k window (developers.openai.com/api/docs/models/
    # gpt-4o-transcribe, /gpt-4o-mini-transcribe, /gpt-4o-realtime-preview,
    # /gpt-4o-mini-realtime-preview); gpt-4o-mini-tts reads at most 2,000 input tokens.
    ("gpt-4o-transcribe", 16_000, 2_000, "openai"),
    ("gpt-4o-mini-transcribe", 16_000, 2_000, "openai"),
    ("gpt-4o-realtime-preview", 32_000, 4_096, "openai"),
    ("gpt-4o-mini-realtime-preview", 16_000, 4_096, "openai"),
    ("gpt-4o-mini-tts", 2_000, None, "openai"),
    ("chatgpt-4o", 128_000, 16_384, "openai"),
    ("gpt-4-turbo", 128_000, 4_096, "openai"),
    ("gpt-4-1106-preview", 128_000, 4_096, "openai"),
    ("gpt-4-0125-preview", 128_000, 4_096, "openai"),
    ("gpt-4-vision-preview", 128_000, 4_096, "openai"),
    ("gpt-4-1106-vision-preview", 128_000, 4_096, "openai"),
    ("gpt-4.5", 128_000, 16_384, "openai"),
    ("gpt-4.5-preview", 128_000, 16_384, "openai"),
    ("gpt-4", 8_192, 8_192, "openai"),
    ("gpt-4-32k", 32_768, 8_192, "openai"),
    ("gpt-3.5-turbo", 16_385, 4_096, "openai"),
    # The snapshots before 1106 are 4k models (openrouter.ai/openai/gpt-3.5-turbo-0613: 4,095).
    ("gpt-3.5-turbo-0301", 4_096, 4_096, "openai"),
    ("gpt-3.5-turbo-0613", 4_096, 4_096, "openai"),
    ("gpt-3.5-turbo-instruct", 4_096, 4_096, "openai"),
    ("o1", 200_000, 100_000, "openai"),
    ("o1-preview", 128_000, 32_768, "openai"),
    ("o1-mini", 128_000, 65_536, "openai"),
    ("o3", 200_000, 100_000, "openai"),
    ("o3-mini", 200_000, 100_000, "openai"),
    ("o4-mini", 200_000, 100_000, "openai"),
    ("gpt-oss", 131_072, 131_072, "openai"),
    # Anthropic. Opus 4.6 and every model since: 1M tokens, 128K output (platform.claude.com/
    # docs/en/models/opus-4-6/overview, /opus-5/overview, /models/overview: Fable 5.1 and 5.2,
    # Opus 5.5, Sonnet 5 and 5.5, Haiku 5.5; Opus 4.7, 4.8 and Sonnet 4.6 per models.dev, whose
    # 64K for Sonnet 4.6 is below the provider's 128K). IDs have no date.
    ("claude-fable-5", 1_000_000, 128_000, "anthropic"),
    ("claude-fable-5-1", 1_000_000, 128_000, "anthropic"),
    ("claude-fable-5-2", 1_000_000, 128_000, "anthropic"),
    ("claude-opus-5", 1_000_000, 128_000, "anthropic"),
    ("claude-opus-5-5", 1_000_000, 128_000, "anthropic"),
    ("claude-sonnet-5", 1_000_000, 128_000, "anthropic"),
    ("claude-sonnet-5-5", 1_000_000, 128_000, "anthropic"),
    ("claude-haiku-5-5", 1_000_000, 128_000, "anthropic"),
    ("claude-opus-4-8", 1_000_000, 128_000, "anthropic"),
    ("claude-opus-4-7", 1_000_000, 128_000, "anthropic"),
    ("claude-opus-4-6", 1_000_000, 128_000, "anthropic"),
    ("claude-sonnet-4-6", 1_000_000, 128_000, "anthropic"),
    ("claude-opus-4-5", 200_000, 64_000, "anthropic"),
    ("claude-opus-4-1", 200_000, 32_000, "anthropic"),
    ("claude-opus-4", 200_000, 32_000, "anthropic"),
    ("claude-opus-4-0", 200_000, 32_000, "anthropic"),  # the alias of claude-opus-4-20250514
    ("claude-sonnet-4-5", 200_000, 64_000, "anthropic"),
    ("claude-sonnet-4", 200_000, 64_000, "anthropic"),
    ("claude-sonnet-4-0", 200_000, 64_000, "anthropic"),
    ("claude-haiku-4-5", 200_000, 64_000, "anthropic"),
    ("claude-3-7-sonnet", 200_000, 64_000, "anthropic"),
    ("claude-3-5-sonnet", 200_000, 8_192, "anthropic"),
    ("claude-3-5-haiku", 200_000, 8_192, "anthropic"),
    ("claude-3-opus", 200_000, 4_096, "anthropic"),
    ("claude-3-haiku", 200_000, 4_096, "anthropic"),
    # Google. Gemini 3.x Flash: 1,048,576 input, 65,536 output (ai.google.dev/gemini-api/docs/
    # models/gemini-3.5-flash; gemini-3.8-flash: 1,000,000 on vercel.com/ai-gateway, kept the
    # smaller; gemini-3-flash, 3.1-flash-lite and the -latest aliases per models.dev). Gemini 4
    # Argon: 1,048,576 for input and output together, 65,536 output a request
    # (docs.cloud.google.com/gemini-enterprise-agent-platform/models/start/get-started-with-
    # gemini-4).
    ("gemini-4-argon", 1_048_576, 65_536, "gemini"),
    ("gemini-3.8-flash", 1_000_000, 65_536, "gemini"),
    ("gemini-3.5-flash", 1_048_576, 65_536, "gemini"),
    ("gemini-3.1-flash-lite", 1_048_576, 65_536, "gemini"),
    ("gemini-3-flash", 1_048_576, 65_536, "gemini"),
    ("gemini-flash-latest", 1_048_576, 65_536, "gemini"),
    ("gemini-flash-lite-latest", 1_048_576, 65_536, "gemini"),
    ("gemini-3.1-pro", 1_048_576, 65_536, "gemini"),
    ("gemini-3-pro", 1_048_576, 65_536, "gemini"),
    # Not gemini-3-pro's 1M: 65,536 input / 32,768 output
    # (docs.cloud.google.com/vertex-ai/generative-ai/docs/models/gemini/3-pro-image).
    ("gemini-3-pro-image", 65_536, 32_768, "gemini"),
    ("gemini-2.5-pro", 1_048_576, 65_536, "gemini"),
    ("gemini-2.5-flash", 1_048_576, 65_536, "gemini"),
    ("gemini-2.5-flash-lite", 1_048_576, 65_536, "gemini"),
    ("gemini-2.5-flash-image", 32_768, 32_768, "gemini"),
    # Text-to-speech: 8,192 input and 16,384 output tokens (ai.google.dev model pages of the
    # Gemini TTS models), a window of both with an input cap (see _MAX_INPUT).
    ("gemini-2.5-flash-preview-tts", 24_576, 16_384, "gemini"),
    ("gemini-2.5-pro-preview-tts", 24_576, 16_384, "gemini"),
    ("gemini-2.5-flash-lite-preview-tts", 24_576, 16_384, "gemini"),
    ("gemini-2.5-flash-tts", 24_576, 16_384, "gemini"),
    ("gemini-2.5-pro-tts", 24_576, 16_384, "gemini"),
    # Live API: 131,072 input, 8,192 output (ai.google.dev/gemini-api/docs/models/
    # gemini-2.5-flash-native-audio-preview-12-2025).
    ("gemini-2.5-flash-native-audio", 131_072, 8_192, "gemini"),
    ("gemini-2.0-flash", 1_048_576, 8_192, "gemini"),
    ("gemini-1.5-pro", 2_097_152, 8_192, "gemini"),
    ("gemini-1.5-flash", 1_048_576, 8_192, "gemini"),
    # DeepSeek (API limits: chat 8K output, reasoner 64K output)
    ("deepseek-chat", 128_000, 8_192, "deepseek"),
    ("deepseek-reasoner", 128_000, 64_000, "deepseek"),
    ("deepseek-v3", 128_000, 8_192, "deepseek"),
    ("deepseek-v3.1", 128_000, 8_192, "deepseek"),
    ("deepseek-v3.2", 128_000, 8_192, "deepseek"),
    # V4: 1M context, 384K output (api-docs.deepseek.com/zh-cn/quick_start/pricing; the API's
    # deepseek-chat and deepseek-reasoner became V4 Flash, kept above at their 128k: other hosts
    # serve those names as V3).
    ("deepseek-v4-flash", 1_000_000, 384_000, "deepseek"),
    ("deepseek-v4-pro", 1_000_000, 384_000, "deepseek"),
    ("deepseek-flash", 1_000_000, 384_000, "deepseek"),
    ("deepseek-r1", 128_000, 32_768, "deepseek"),
    # Meta Llama (``llama3.1``, Bedrock's ``llama3-1``, ``llama4-scout`` are looked up as these)
    ("llama-3.1", 131_072, 8_192, "llama"),
    ("llama-3.2", 131_072, 8_192, "llama"),
    ("llama-3.3", 131_072, 8_192, "llama"),
    ("llama-4-scout", 10_000_000, 8_192, "llama"),
    ("llama-4-maverick", 1_000_000, 8_192, "llama"),
    # Qwen. Qwen3 is a 32k model that reaches 131,072 only with YaRN turned on ("Context Length:
    # 32,768 natively and 131,072 tokens with YaRN": huggingface.co/Qwen/Qwen3-8B, -14B, -32B,
    # -30B-A3B, -235B-A22B); the 2507 updates and Qwen3-Next are 262,144 natively
    # (huggingface.co/Qwen/Qwen3-30B-A3B-Instruct-2507), kept at 131,072 as hosts serve them.
    ("qwen3", 32_768, 32_768, "qwen"),
    ("qwen3-235b-a22b-instruct-2507", 131_072, None, "qwen"),
    ("qwen3-235b-a22b-thinking-2507", 131_072, None, "qwen"),
    ("qwen3-30b-a3b-instruct-2507", 131_072, None, "qwen"),
    ("qwen3-30b-a3b-thinking-2507", 131_072, None, "qwen"),
    ("qwen3-4b-instruct-2507", 131_072, None, "qwen"),
    ("qwen3-4b-thinking-2507", 131_072, None, "qwen"),
    ("qwen3-next", 131_072, None, "qwen"),
    ("qwen3-coder", 262_144, 65_536, "qwen"),
    ("qwen3-max", 262_144, 65_536, "qwen"),
    # "Context Length: 32,768" (huggingface.co/Qwen/Qwen3-0.6B, /Qwen3-1.7B); no YaRN to 128k.
    ("qwen3-0.6b", 32_768, None, "qwen"),
    ("qwen3-1.7b", 32_768, None, "qwen"),
    # Qwen3.5 and 3.6 open weights: "natively 262,144" (docs.sglang.io/cookbook/
    # autoregressive/Qwen/Qwen3.5); 65,536 output (models.dev). Hosted -plus/-flash models
    # serve more (about 1M per models.dev, not confirmed by Alibaba's pages): kept at this.
    ("qwen3.5", 262_144, 65_536, "qwen"),
    ("qwen3.6", 262_144, 65_536, "qwen"),
    # Qwen2.5's config is set for 32,768 tokens, 131,072 with YaRN (huggingface.co/Qwen/
    # Qwen2.5-72B-Instruct: "The current config.json is set for context length up to 32,768").
    ("qwen2.5", 32_768, 8_192, "qwen"),
    # The small sizes are 32k models, not the family's 128k ("Context Length: Full 32,768
    # tokens and generation 8192 tokens": huggingface.co/Qwen/Qwen2.5-0.5B-Instruct,
    # /Qwen2.5-1.5B-Instruct, /Qwen2.5-3B-Instruct, /Qwen2.5-Coder-0.5B-Instruct,
    # /Qwen2.5-Coder-1.5B-Instruct, /Qwen2.5-Coder-3B-Instruct).
    ("qwen2.5-0.5b", 32_768, 8_192, "qwen"),
    ("qwen2.5-1.5b", 32_768, 8_192, "qwen"),
    ("qwen2.5-3b", 32_768, 8_192, "qwen"),
    ("qwen2.5-coder-0.5b", 32_768, 8_192, "qwen"),
    ("qwen2.5-coder-1.5b", 32_768, 8_192, "qwen"),
    ("qwen2.5-coder-3b", 32_768, 8_192, "qwen"),
    ("qwen-max", 32_768, 8_192, "qwen"),
    ("qwen-plus", 131_072, 16_384, "qwen"),
    ("qwen-turbo", 1_000_000, 16_384, "qwen"),
    # Mistral (max output not published: the budget's default reserve applies)
    ("mistral-large", 131_072, None, "mistral"),
    ("mistral-medium", 131_072, None, "mistral"),
    ("mistral-small", 131_072, None, "mistral"),
    # The early snapshots are 32k models (docs.mistral.ai release note 2024-02-26: "Both models
    # feature a 32k context window"; docs.mistral.ai/models/mistral-medium-1-0-23-12: 32k; Small 3
    # 2501: huggingface.co/mistralai/Mistral-Small-24B-Base-2501, "A 32k context window").
    # mistral-small-2409 (its Ollama tag is 22b): 32k for the API, 128k on its Hugging Face card.
    ("mistral-large-2402", 32_000, None, "mistral"),
    ("mistral-medium-2312", 32_000, None, "mistral"),
    ("mistral-small-2402", 32_000, None, "mistral"),
    ("mistral-small-2409", 32_000, None, "mistral"),
    ("mistral-small-2501", 32_000, None, "mistral"),
    ("mistral-small-22b", 32_000, None, "mistral"),
    ("mistral-small-24b", 32_000, None, "mistral"),
    ("open-mistral-7b", 32_000, None, "mistral"),
    ("open-mixtral-8x7b", 32_000, None, "mistral"),
    # docs.mistral.ai release note 2024-04-17: "une fenêtre de contexte de 64k".
    ("open-mixtral-8x22b", 64_000, None, "mistral"),
    ("codestral", 262_144, None, "mistral"),
    # Codestral 24.05 is a 32k model (docs.mistral.ai/getting-started/models: "32k"); its open
    # weights are Codestral-22B-v0.1 (Ollama's codestral:22b).
    ("codestral-2405", 32_000, None, "mistral"),
    ("codestral-22b", 32_000, None, "mistral"),
    ("devstral", 131_072, None, "mistral"),
    ("magistral", 131_072, None, "mistral"),
    # Magistral 1.0 and 1.1 are 40k models (docs.mistral.ai/models/magistral-medium-1-0-25-06:
    # "Context length: 40k"; huggingface.co/mistralai/Magistral-Small-2506: "we recommend setting
    # the maximum model length to 40k"); 1.2 (2509) is 128k.
    ("magistral-medium-2506", 40_000, None, "mistral"),
    ("magistral-medium-2507", 40_000, None, "mistral"),
    ("magistral-small-2506", 40_000, None, "mistral"),
    ("magistral-small-2507", 40_000, None, "mistral"),
    ("ministral", 131_072, None, "mistral"),
    ("open-mistral-nemo", 131_072, None, "mistral"),
)

#: Input caps below the window: OpenAI refuses more than 272k input tokens to GPT-5 to 5.3
#: ("Input tokens exceed the configured limit of 272000 tokens"), whatever max_tokens says,
#: and more than 922k to GPT-5.4 and 5.5 (models.dev);
#: Gemini states an input limit and an output limit, whose sum is the window.
_MAX_INPUT = {
    **dict.fromkeys(("gpt-5", "gpt-5.1", "gpt-5.2", "gpt-5.3-codex"), 272_000),
    **dict.fromkeys(("gpt-5.4-mini", "gpt-5.4-nano"), 272_000),
    "gpt-5.4": 922_000,
    "gpt-5.5": 922_000,
    "gpt-5.3-codex-spark": 100_000,
    # Gemini's TTS models: 8,192 input tokens of their 8,192 + 16,384.
    **dict.fromkeys(
        (
            "gemini-2.5-flash-preview-tts",
            "gemini-2.5-pro-preview-tts",
            "gemini-2.5-flash-lite-preview-tts",
            "gemini-2.5-flash-tts",
            "gemini-2.5-pro-tts",
        ),
        8_192,
    ),
}

#: (substring of the canonical name, family), first match wins; the o-series below.
_FAMILY_HINTS: tuple[tuple[str, str], ...] = (
    ("claude", "anthropic"),
    ("gemini", "gemini"),
    ("deepseek", "deepseek"),
    ("llama", "llama"),
    ("qwen", "qwen"),
    ("qwq", "qwen"),
    ("mistral", "mistral"),
    ("mixtral", "mistral"),
    ("stral", "mistral"),
    ("gpt", "openai"),
)
#: Models named GPT that are not OpenAI's (``gpt2``, ``gpt-j-6b``, ``gpt-neox-20b``, ...); any
#: other name with ``gpt`` in it is (``gpt-4o``, an Azure deployment ``prod-gpt``).
_OTHER_GPT = re.compile(r"gpt-?2(?![0-9.])|gpt-j(?![a-z])|gpt-neo|gpt-sw3|cerebras-gpt|biogpt")
#: ``o1`` / ``o3`` / ``o4`` as a word of the name (``azure/o1``, ``my-o3-deployment``), not
#: inside one (``hello1``, ``turbo4``).
_O_SERIES = re.compile(r"(?:^|[^a-z0-9])o[134](?![a-z0-9])")

#: OpenAI fine-tuned ids, ``ft:<base model>:<org>:<suffix>:<id>``: group 1 is the base model.
_FINE_TUNED = re.compile(r"(?:^|/)ft:([^:/]+)")
#: Bedrock ids: ``<vendor>.<model>``, or with a cross-region inference profile in front
#: (``us.meta.llama3-2-...``, ``eu.``, ``apac.``, ``us-gov.``, ``global.``, ...): group 1 is the
#: vendor. A model name has a digit or a dash before its first dot (``gpt-4.1``, ``qwen2.5``).
_BEDROCK_PREFIX = re.compile(r"^(?:[a-z]+(?:-[a-z]+)?\.)?([a-z]+)\.")
#: Llama versions as ``llama-<major>[.<minor>]``: ``llama3.1``, Bedrock's ``llama3-1`` and
#: ``llama4-scout``, ``meta-llama-3.1``. A minor needs a boundary after it, so ``llama3-8b`` (Llama
#: 3, 8k) stays Llama 3 and ``llama-30b`` (LLaMA-1) is not Llama 3.
_LLAMA = re.compile(r"^(?:meta-)?llama-?(\d+)(?:[-.](\d)(?![a-z0-9]))?(?![a-z0-9])")
#: A dotted Claude version (OpenRouter's ``claude-3.5-sonnet``, ``claude-opus-4.5``).
_DOTTED_VERSION = re.compile(r"(?<=\d)\.(?=\d)")
#: An Ollama size tag (``qwen2.5:0.5b``, ``qwen3:1.7b``) reads as the size in the name
#: (``qwen2.5-0.5b``), where the registry keeps the sizes whose window differs.
_SIZE_TAG = re.compile(r":(?=\d+(?:\.\d+)?b(?![a-z0-9]))")
#: Azure's spelling of GPT-3.5 (``gpt-35-turbo``).
_AZURE_GPT35 = re.compile(r"^gpt-35(?![a-z0-9])")


def _canonical(name: str) -> str:
    """The spelling the registry and the encoding rules know (see the module docstring)."""
    if not isinstance(name, str):
        raise TypeError(f"a model name must be a str, not {type(name).__name__}")
    key = name.strip().lower()
    fine_tuned = _FINE_TUNED.search(key)
    key = fine_tuned.group(1) if fine_tuned else key.rsplit("/", 1)[-1]
    bedrock = _BEDROCK_PREFIX.match(key)
    if bedrock:
        key = key[bedrock.end() :]
        if bedrock.group(1) == "deepseek" and not key.startswith("deepseek"):
            key = f"deepseek-{key}"  # Bedrock's deepseek.r1-v1:0, deepseek.v3-v1:0
    key = _SIZE_TAG.sub("-", key, count=1)
    key = _LLAMA.sub(_llama_version, key, count=1)
    if key.startswith("claude-"):
        key = _DOTTED_VERSION.sub("-", key)
    return _AZURE_GPT35.sub("gpt-3.5", key, count=1)


def _llama_version(match: re.Match[str]) -> str:
    major, minor = match.group(1, 2)
    return f"llama-{major}.{minor}" if minor else f"llama-{major}"


#: (pattern on the canonical name, encoding), first match wins. A family matches up to a
#: boundary: ``o3-mini`` and ``gpt-4o-2024-08-06`` are o200k, ``o30`` and ``gpt-4oops`` are not
#: (only Qwen's version digits follow its name directly: ``qwen2.5``, ``qwen3``). Decisions and
#: the measurements behind them are in the README ("Which encoding for a model").
_ENCODING_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), e)
    for p, e in (
        # OpenAI: o200k for GPT-4o and everything after it, cl100k for GPT-4 / 3.5 / embeddings-3.
        (
            r"^(?:chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|gpt-realtime|o1|o3|o4|codex"
            r"|omni-moderation)(?![a-z0-9])",
            "o200k",
        ),
        # Not gpt-4.x: every GPT-4.x is newer than GPT-4o (an unknown one gets conservative).
        (r"^(?:gpt-4|gpt-3\.5|text-embedding-3|text-embedding-ada)(?![a-z0-9.])", "cl100k"),
        # Meta Llama 3.x (3, 3.1, 3.2, 3.3) share one 128k vocabulary; not LLaMA-1 "llama-30b".
        (r"^llama-3(?![a-z0-9])", "llama3"),
        # Qwen 2 / 2.5 / 3 and QwQ share one 151k vocabulary; DashScope's qwen-max/plus/turbo too.
        # Not Qwen 3.5 and later: a 248k vocabulary of their own (conservative).
        (r"^(?:qwq|qwen(?!3\.[5-9]|[4-9]))(?![a-z])", "qwen3"),
    )
)


def encoding_for_model(model: str) -> str:
    """The estimator encoding that fits ``model`` best; ``"conservative"`` when unknown.

    Names are read as the registry reads them (see the module docstring): routing prefixes
    are ignored (``"openai/gpt-4o"``, ``"meta-llama/Llama-3.1-8B"``,
    ``"bedrock/anthropic.claude-3-5-sonnet"``, ``"us.meta.llama3-2-90b-instruct-v1:0"``,
    ``"models/gemini-2.0-flash"``), and a fine-tuned ``"ft:gpt-4o-mini-...:org::id"`` counts
    as its base model. OpenAI models map to their real encodings (o200k or cl100k), Llama 3.x
    to ``llama3``, Qwen 2/2.5/3 to ``qwen3``; a family name followed by more letters or digits
    (``"o30"``, ``"gpt-4oops"``) is another model. Models whose tokenizer we cannot count
    against here (Claude, Gemini, DeepSeek, Mistral, Llama 4, ...) get ``conservative``: fitted
    to count at least as many tokens as the largest of the four (never under it on the
    evaluation files), so a budget built on it has room to spare.

    >>> encoding_for_model("gpt-4o-mini"), encoding_for_model("gpt-4-turbo")
    ('o200k', 'cl100k')
    >>> encoding_for_model("meta-llama/Llama-3.1-8B-Instruct")
    'llama3'
    >>> encoding_for_model("o30"), encoding_for_model("some-new-model")
    ('conservative', 'conservative')
    """
    key = _canonical(model)
    for pattern, encoding in _ENCODING_RULES:
        if pattern.search(key):
            return encoding
    return "conservative"


def family_of(model: str) -> str | None:
    """The model family guessed from a name, registered or not.

    >>> family_of("accounts/fireworks/models/qwen3-coder-480b"), family_of("my-model")
    ('qwen', None)
    """
    info = DEFAULT_REGISTRY.lookup(model)
    if info is not None:
        return info.family
    return _hint_family(_canonical(model))


class ModelRegistry:
    """A thread-safe name → :class:`ModelInfo` table with longest-prefix look-ups.

    Args:
        builtin: Start with the built-in models (default) or empty.
    """

    def __init__(self, *, builtin: bool = True) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, ModelInfo] = {}
        if builtin:
            for name, window, max_output, family in _BUILTIN:
                max_input = _MAX_INPUT.get(name)
                self._models[name] = ModelInfo(name, window, max_output, family, max_input)

    def register(
        self,
        name: str,
        *,
        window: int,
        max_output: int | None = None,
        family: str | None = None,
        max_input: int | None = None,
    ) -> ModelInfo:
        """Add or override a model (the name also matches longer names it prefixes).

        The name is stored as look-ups spell it (see the module docstring): ``"llama3.1-ft"``
        is registered as ``"llama-3.1-ft"``.

        Raises:
            ValueError: A window, max output or max input that is not a positive integer.
        """
        for what, value in (("max_output", max_output), ("max_input", max_input)):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{what} must be a positive int, got {value!r}")
        _check_window(window)
        key = _canonical(name)
        fam = family if family is not None else _hint_family(key)
        info = ModelInfo(key, window, max_output, fam, max_input)
        with self._lock:
            self._models[key] = info
        return info

    def lookup(self, name: str) -> ModelInfo | None:
        """The model registered under the longest prefix of ``name``, or ``None``."""
        key = _canonical(name)
        with self._lock:
            models = self._models
            if key in models:
                return models[key]
            best: ModelInfo | None = None
            for prefix, info in models.items():
                if not key.startswith(prefix) or len(key) == len(prefix):
                    continue
                longer = best is None or len(prefix) > len(best.name)
                if longer and _extends(key, prefix):
                    best = info
            return best

    def __iter__(self) -> Iterator[ModelInfo]:
        with self._lock:
            return iter(list(self._models.values()))

    def __len__(self) -> int:
        return len(self._models)


#: After a name ending in a version number: one or two more digits standing alone (``-6``,
#: ``.5``), a later version of the model, not a date, snapshot (``-0613``) or size (``-8b``,
#: Ollama's ``deepseek-r1:1.5b``).
_NEXT_VERSION = re.compile(r"[-.]\d{1,2}(?![a-z0-9]|\.\d+[a-z])")


def _extends(key: str, prefix: str) -> bool:
    """Whether ``key`` (longer than ``prefix``, which it starts with) names a variant of the
    model ``prefix`` names: a boundary follows it, and no later version number."""
    if key[len(prefix)].isalnum():
        return False
    return not (prefix[-1].isdigit() and _NEXT_VERSION.match(key, len(prefix)))


def _check_window(window: object) -> None:
    """A context window is a positive ``int`` (not a float, NaN or infinity, nor a bool)."""
    if isinstance(window, bool) or not isinstance(window, int):
        raise TypeError(f"window must be an int, not {type(window).__name__}")
    if window <= 0:
        raise ValueError(f"window must be positive, got {window}")


def _hint_family(key: str) -> str | None:
    for hint, family in _FAMILY_HINTS:
        if hint in key and not (hint == "gpt" and _OTHER_GPT.search(key)):
            return family
    return "openai" if _O_SERIES.search(key) else None


#: The process-wide registry used when none is given.
DEFAULT_REGISTRY = ModelRegistry()


def model_info(name: str, *, registry: ModelRegistry | None = None) -> ModelInfo | None:
    """Look a model up in ``registry`` (default: :data:`DEFAULT_REGISTRY`).

    >>> model_info("anthropic/claude-sonnet-4-5-20250929").max_output
    64000
    >>> model_info("no-such-model") is None
    True
    """
    return (registry or DEFAULT_REGISTRY).lookup(name)


def register_model(
    name: str,
    *,
    window: int,
    max_output: int | None = None,
    family: str | None = None,
    max_input: int | None = None,
) -> ModelInfo:
    """Add or override a model in :data:`DEFAULT_REGISTRY`."""
    return DEFAULT_REGISTRY.register(
        name, window=window, max_output=max_output, family=family, max_input=max_input
    )
