"""What a provider's overflow errors teach the guard: its stated limit, and a retry's room.

:class:`StatedLimit` is a limit a provider stated below the budget's (a deployment with a
shorter context than the model's registry entry, an input cap); the guard budgets the next
requests against it. :class:`Room` is the most input one request may have, by its estimate,
after an overflow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ctxbudget import overflow_rules as rules
from ctxbudget.budget import ContextWindowBudget
from ctxbudget.calibration import CalibratedEstimate

__all__ = ["INPUT_CAP_RULES", "Room", "StatedLimit", "least_output"]

#: (re-exported: rules whose stated limit is the input's alone)
INPUT_CAP_RULES = rules.INPUT_CAP_RULES


@dataclass(frozen=True, slots=True)
class StatedLimit:
    """A limit a provider stated in an overflow error.

    Attributes:
        tokens: The limit.
        input_only: It is the input's alone (gpt-5's input cap, Copilot's prompt limit),
            not input + output, which most providers mean whatever their wording.
        output: The output the provider counted for a request that asked for none (its
            default), when it said so.
    """

    tokens: int
    input_only: bool
    output: int | None

    def output_floor(self) -> int | None:
        """The output room kept free for a request that asks for none: the provider's default
        output, up to half the limit. Where the input leaves less than the default (13,000
        of a 16,000 limit), the guard sends a cap of what the limit leaves: at least this,
        or at least :meth:`least_output` when no pruning gets the input that small."""
        if self.output is None:
            return None
        return min(self.output, self.tokens // 2)

    def least_output(self) -> int | None:
        """The smallest cap the guard sends in place of the provider's default output
        (:func:`least_output`)."""
        return None if self.output is None else least_output(self.output, self.tokens)

    def budget(self, base: ContextWindowBudget, max_tokens: int | None) -> ContextWindowBudget:
        """``base`` for a request with ``max_tokens`` under this limit."""
        if self.input_only:  # the input up to the limit, the output as ``base`` reserves it
            reserve = base.reserve(max_tokens)
            window = min(base.window, self.tokens + reserve)
            return ContextWindowBudget(
                window, reserve, margin=0, max_reserve_fraction=None, model=base.model
            )
        # The provider's default output, when the request asks for none (see output_floor).
        floor = self.output_floor() if max_tokens is None else None
        reserved = max((x for x in (base.reserved_output, floor) if x is not None), default=None)
        return ContextWindowBudget(
            min(base.window, self.tokens), reserved, margin=base.margin,
            max_reserve_fraction=base.max_reserve_fraction, max_output=base.max_output,
            default_output=base.default_output, model=base.model,
        )  # fmt: skip


def least_output(asked: int, limit: int) -> int:
    """The smallest output cap the guard lowers ``asked`` to under a provider's ``limit``:
    half of it, or a quarter of the limit when that is less (the most a budget reserves by
    default): a larger default never leaves less room to send a request in."""
    return min(-(-asked // 2), limit // 4)


@dataclass(frozen=True, slots=True)
class Room:
    """The most input a request may have.

    Attributes:
        base: The budget's available input, within the provider's stated limit.
        cap: A limit for the calibrated estimate (after an overflow that stated no count).
        raw_cap: A limit for the uncalibrated estimate, after an overflow that stated a
            count: the available input less what the provider counted beyond our estimate
            of the request it refused. That excess is assumed to stay unless removed
            content explains it (safe: a second overflow fails the call).
    """

    base: int = 0
    cap: int | None = None
    raw_cap: int | None = None

    def over(self, est: CalibratedEstimate) -> int:
        """How many (calibrated) tokens ``est`` is over the room; <= 0 when it fits."""
        limit = self.base if self.cap is None else min(self.base, self.cap)
        over = est.total - limit
        if self.raw_cap is not None:
            ratio = est.total / max(1, est.raw.total)
            over = max(over, math.ceil((est.raw.total - self.raw_cap) * ratio))
        return over

    @property
    def lowest(self) -> int:
        """The limit for uncalibrated estimates (the Pruner's)."""
        return min(x for x in (self.base, self.cap, self.raw_cap) if x is not None)
