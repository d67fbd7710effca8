"""Framing profiles: how a model family's chat template and tool framing add tokens around
the text of a request (per message, per tool call, per request, the tool-use preamble).

One profile per model family (:data:`PROFILES`). The ``deepseek`` profile was fitted on 33
real DeepSeek agent runs (see ``benches/replay_trajectories.py --fit``); the others follow the
providers' documentation where it exists and lean high where it does not.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxbudget.counting import encoding_for_model
from ctxbudget.models import family_of

__all__ = ["PROFILES", "FramingProfile", "profile_for"]


@dataclass(frozen=True, slots=True)
class FramingProfile:
    """How a model family's chat template and tool framing add tokens around the text.

    Attributes:
        name: Profile name (the family).
        encoding: Encoding used when the caller gives none.
        per_message: Tokens around each message (role markers, separators).
        per_request: Tokens once per request (begin-of-text, the assistant prompt).
        per_tool_call: Tokens around each tool call an assistant message makes.
        per_name: Tokens for a participant ``name`` on a message.
        tools_preamble: Tokens of fixed instructions the template adds when tools are offered.
        per_tool: Tokens around each tool definition (beyond its JSON schema).
        text_factor: Multiplies estimated message text (this tokenizer vs the encoding's).
        args_factor: Multiplies estimated tool-call arguments and tool schemas (JSON).
        image_rule: ``openai``, ``anthropic`` or ``gemini`` (see :func:`image_tokens`).
        exact: The framing is the provider's documented rule; with an exact counter and no
            estimated attachments the whole count is then EXACT.
        fitted: The factors were fitted against :attr:`encoding`'s estimates, so that
            encoding is used whatever the model name says.
    """

    name: str
    encoding: str
    per_message: float
    per_request: float
    per_tool_call: float = 0.0
    per_name: float = 1.0
    tools_preamble: float = 0.0
    per_tool: float = 0.0
    text_factor: float = 1.0
    args_factor: float = 1.0
    image_rule: str = "openai"
    exact: bool = False
    fitted: bool = False


#: Framing per model family. ``default`` (unknown model) leans high everywhere.
PROFILES: dict[str, FramingProfile] = {
    # OpenAI cookbook: 3 tokens per message and its role (one token), a name's text and 1,
    # 3 to prime the reply. Tool schemas are rendered as a TypeScript namespace; the compact
    # JSON estimate plus these constants is a little above it.
    "openai": FramingProfile(
        "openai", "o200k", 4, 3, per_tool_call=4, tools_preamble=12, per_tool=8
    ),
    # Anthropic documents the tool-use system prompt (346 tokens, Claude 4.x, tool_choice
    # auto); its tokenizer is not public, so the text is counted with ``conservative``.
    "anthropic": FramingProfile(
        "anthropic",
        "conservative",
        5,
        5,
        per_tool_call=10,
        tools_preamble=346,
        per_tool=10,
        image_rule="anthropic",
    ),
    "gemini": FramingProfile(
        "gemini", "conservative", 4, 2, per_tool_call=6, per_tool=8, image_rule="gemini"
    ),
    # Fitted on the 33 DeepSeek runs in shared/data/trajectories (2,498 requests with the
    # provider's prompt_tokens; half/half check in benches/replay_trajectories.py --fit).
    # ``tools_preamble`` is the fitted per-request constant minus the estimated schema and
    # ``per_request``: DeepSeek's template wraps tools in a fixed instruction block.
    "deepseek": FramingProfile(
        "deepseek",
        "o200k",
        per_message=25.9,
        per_request=3.0,
        per_tool_call=0.0,
        tools_preamble=217.3,
        per_tool=0.0,
        text_factor=1.058,
        args_factor=0.896,
        fitted=True,
    ),
    # Llama 3 template: <|start_header_id|>role<|end_header_id|>\n\n ... <|eot_id|>.
    "llama": FramingProfile(
        "llama", "llama3", 5, 5, per_tool_call=8, tools_preamble=120, per_tool=6
    ),
    # ChatML: <|im_start|>role\n ... <|im_end|>\n; tools in <tools></tools> with instructions.
    "qwen": FramingProfile("qwen", "qwen3", 5, 3, per_tool_call=10, tools_preamble=100, per_tool=4),
    "mistral": FramingProfile(
        "mistral", "conservative", 4, 1, per_tool_call=8, tools_preamble=8, per_tool=6
    ),
    "default": FramingProfile(
        "default", "conservative", 6, 6, per_tool_call=10, tools_preamble=350, per_tool=10
    ),
}


def profile_for(model: str | None) -> FramingProfile:
    """The framing profile for a model name (``default`` when unknown).

    >>> profile_for("deepseek-chat").name, profile_for("gpt-4o-mini").name
    ('deepseek', 'openai')
    """
    family = family_of(model) if model else None
    return PROFILES.get(family or "default", PROFILES["default"])


def _encoding_for(model: str | None, profile: FramingProfile) -> str:
    """Encoding for a model: the one a fitted profile was fitted with, else the model's own."""
    if profile.fitted or not model:
        return profile.encoding
    return encoding_for_model(model)
