"""Model registry: context window and maximum output for common models, with no network call.

Numbers are the providers' published limits for their own APIs (the same model behind another
host may be served with a smaller window: register your host's numbers). Look-ups accept dated
and provider-prefixed names (``claude-sonnet-4-5-20250929``, ``openai/gpt-4o``,
``us.anthropic.claude-3-5-haiku-20241022-v1:0``) through the longest registered prefix.

>>> info = model_info("gpt-4o-2024-08-06")
>>> info.window, info.max_output, info.family
(128000, 16384, 'openai')
>>> reg = ModelRegistry()
>>> _ = reg.register("my-llama", window=32_768, max_output=4_096, family="llama")
>>> reg.lookup("my-llama-q4").window
32768
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "DEFAULT_REGISTRY",
    "FAMILIES",
    "ModelInfo",
    "ModelRegistry",
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
    """

    name: str
    window: int
    max_output: int | None
    family: str | None


_BUILTIN: tuple[tuple[str, int, int | None, str], ...] = (
    # OpenAI
    ("gpt-5", 400_000, 128_000, "openai"),
    ("gpt-5-chat", 128_000, 16_384, "openai"),
    ("gpt-5.1", 400_000, 128_000, "openai"),
    ("gpt-4.1", 1_047_576, 32_768, "openai"),
    ("gpt-4o", 128_000, 16_384, "openai"),
    ("chatgpt-4o", 128_000, 16_384, "openai"),
    ("gpt-4-turbo", 128_000, 4_096, "openai"),
    ("gpt-4-1106-preview", 128_000, 4_096, "openai"),
    ("gpt-4-0125-preview", 128_000, 4_096, "openai"),
    ("gpt-4-vision-preview", 128_000, 4_096, "openai"),
    ("gpt-4.5-preview", 128_000, 16_384, "openai"),
    ("gpt-4", 8_192, 8_192, "openai"),
    ("gpt-4-32k", 32_768, 8_192, "openai"),
    ("gpt-3.5-turbo", 16_385, 4_096, "openai"),
    ("o1", 200_000, 100_000, "openai"),
    ("o1-preview", 128_000, 32_768, "openai"),
    ("o1-mini", 128_000, 65_536, "openai"),
    ("o3", 200_000, 100_000, "openai"),
    ("o3-mini", 200_000, 100_000, "openai"),
    ("o4-mini", 200_000, 100_000, "openai"),
    ("gpt-oss", 131_072, 131_072, "openai"),
    # Anthropic
    ("claude-opus-4-5", 200_000, 64_000, "anthropic"),
    ("claude-opus-4-1", 200_000, 32_000, "anthropic"),
    ("claude-opus-4", 200_000, 32_000, "anthropic"),
    ("claude-sonnet-4-5", 200_000, 64_000, "anthropic"),
    ("claude-sonnet-4", 200_000, 64_000, "anthropic"),
    ("claude-haiku-4-5", 200_000, 64_000, "anthropic"),
    ("claude-3-7-sonnet", 200_000, 64_000, "anthropic"),
    ("claude-3-5-sonnet", 200_000, 8_192, "anthropic"),
    ("claude-3-5-haiku", 200_000, 8_192, "anthropic"),
    ("claude-3-opus", 200_000, 4_096, "anthropic"),
    ("claude-3-haiku", 200_000, 4_096, "anthropic"),
    # Google
    ("gemini-3-pro", 1_048_576, 65_536, "gemini"),
    ("gemini-2.5-pro", 1_048_576, 65_536, "gemini"),
    ("gemini-2.5-flash", 1_048_576, 65_536, "gemini"),
    ("gemini-2.5-flash-lite", 1_048_576, 65_536, "gemini"),
    ("gemini-2.0-flash", 1_048_576, 8_192, "gemini"),
    ("gemini-1.5-pro", 2_097_152, 8_192, "gemini"),
    ("gemini-1.5-flash", 1_048_576, 8_192, "gemini"),
    # DeepSeek (API limits: chat 8K output, reasoner 64K output)
    ("deepseek-chat", 128_000, 8_192, "deepseek"),
    ("deepseek-reasoner", 128_000, 64_000, "deepseek"),
    ("deepseek-v3", 128_000, 8_192, "deepseek"),
    ("deepseek-r1", 128_000, 32_768, "deepseek"),
    # Meta Llama
    ("llama-3.1", 131_072, 8_192, "llama"),
    ("llama-3.2", 131_072, 8_192, "llama"),
    ("llama-3.3", 131_072, 8_192, "llama"),
    ("llama-4-scout", 10_000_000, 8_192, "llama"),
    ("llama-4-maverick", 1_000_000, 8_192, "llama"),
    ("llama3.1", 131_072, 8_192, "llama"),
    ("llama3.2", 131_072, 8_192, "llama"),
    ("llama3.3", 131_072, 8_192, "llama"),
    # Qwen
    ("qwen3", 131_072, 32_768, "qwen"),
    ("qwen3-coder", 262_144, 65_536, "qwen"),
    ("qwen3-max", 262_144, 65_536, "qwen"),
    ("qwen2.5", 131_072, 8_192, "qwen"),
    ("qwen-max", 32_768, 8_192, "qwen"),
    ("qwen-plus", 131_072, 16_384, "qwen"),
    ("qwen-turbo", 1_000_000, 16_384, "qwen"),
    # Mistral (max output not published: the budget's default reserve applies)
    ("mistral-large", 131_072, None, "mistral"),
    ("mistral-medium", 131_072, None, "mistral"),
    ("mistral-small", 131_072, None, "mistral"),
    ("codestral", 262_144, None, "mistral"),
    ("devstral", 131_072, None, "mistral"),
    ("magistral", 131_072, None, "mistral"),
    ("ministral", 131_072, None, "mistral"),
    ("open-mistral-nemo", 131_072, None, "mistral"),
)

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
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
)


def _canonical(name: str) -> str:
    """Lower-case, without provider routing prefixes (``openai/``, ``us.anthropic.``)."""
    key = name.strip().lower()
    key = key.rsplit("/", 1)[-1]
    for marker in ("anthropic.", "meta.", "mistral.", "deepseek.", "qwen."):
        head, sep, tail = key.partition(marker)
        if sep and len(head) <= 8:
            key = tail
    return key


def family_of(model: str) -> str | None:
    """The model family guessed from a name, registered or not.

    >>> family_of("accounts/fireworks/models/qwen3-coder-480b"), family_of("my-model")
    ('qwen', None)
    """
    info = DEFAULT_REGISTRY.lookup(model)
    if info is not None:
        return info.family
    key = _canonical(model)
    for hint, family in _FAMILY_HINTS:
        if hint in key:
            return family
    return None


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
                self._models[name] = ModelInfo(name, window, max_output, family)

    def register(
        self,
        name: str,
        *,
        window: int,
        max_output: int | None = None,
        family: str | None = None,
    ) -> ModelInfo:
        """Add or override a model (the name also matches longer names it prefixes).

        Raises:
            ValueError: A window or max output that is not a positive integer.
        """
        if window <= 0 or (max_output is not None and max_output <= 0):
            raise ValueError("window and max_output must be positive")
        key = _canonical(name)
        fam = family if family is not None else _hint_family(key)
        info = ModelInfo(key, window, max_output, fam)
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
                if longer and not key[len(prefix)].isalnum():
                    best = info
            return best

    def __iter__(self) -> Iterator[ModelInfo]:
        with self._lock:
            return iter(list(self._models.values()))

    def __len__(self) -> int:
        return len(self._models)


def _hint_family(key: str) -> str | None:
    for hint, family in _FAMILY_HINTS:
        if hint in key:
            return family
    return None


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
    name: str, *, window: int, max_output: int | None = None, family: str | None = None
) -> ModelInfo:
    """Add or override a model in :data:`DEFAULT_REGISTRY`."""
    return DEFAULT_REGISTRY.register(name, window=window, max_output=max_output, family=family)
