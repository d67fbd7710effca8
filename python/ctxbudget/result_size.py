"""What one tool result costs, as pruning and stubbing weigh it: its text, and the images or
documents it carries (a computer-use screenshot, a rendered page) priced by the model's
attachment rule.

A result that is a screenshot and nothing else has no text: weighed by its text alone it was
never stubbed, and a computer-use loop's old screenshots (about 1,400 tokens each) filled
the window until every request was refused. Only base64 media count here (what
:func:`~ctxbudget.embedded_media.split_media` finds): a URL costs the provider's fetch, not
a payload the request carries.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ctxbudget.embedded_media import split_media
from ctxbudget.media import media_rule, media_tokens
from ctxbudget.request import RequestEstimator
from ctxbudget.stubs import is_blank_screenshot
from ctxbudget.tokens import estimate_tokens
from ctxbudget.turns import result_payload, result_text

__all__ = ["ResultSizer"]


class ResultSizer:
    """Weighs tool results for one model: text tokens in ``encoding``, media by the rule of
    the model and the format (``media=False``: text only, media kept out of the weighing)."""

    def __init__(self, estimator: RequestEstimator, *, media: bool = True) -> None:
        self.encoding = estimator.encoding
        self._profile = estimator.profile
        self._model = estimator.model
        self.media = media
        self._count: Callable[[str], int] = partial(estimate_tokens, encoding=self.encoding)

    def size(self, fmt: str, message: Any, slot: int) -> tuple[int, str, int]:
        """(tokens, text, media pieces) of the result at ``slot`` of ``message``."""
        text, _ = result_text(fmt, message, slot)
        tokens = estimate_tokens(text, self.encoding) if text else 0
        if not self.media:
            return tokens, text, 0
        payload = result_payload(fmt, message, slot)
        if isinstance(payload, str):  # text, counted as text (a data URL in it too)
            return tokens, text, 0
        if is_blank_screenshot(payload):  # the stub of a computer_call_output: nothing left
            return 0, text, 0
        _, found = split_media(payload)
        if found:
            rule = media_rule(fmt, self._profile.name, self._profile.image_rule, self._model)
            tokens += sum(media_tokens(part, rule, self._count)[0] for part in found)
        return tokens, text, len(found)
