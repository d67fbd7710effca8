"""The context-window budget: does a request fit, is compaction due, and if not, why not.

A request needs ``input + reserve <= window``. The reserve (room kept for the model's answer):

1. ``reserved_output`` given to the budget, else the request's ``max_tokens``, else the
   model's maximum output (registry), else 16k;
2. plus a 20k ``margin`` (for estimation error and the provider's own additions);
3. capped at ``max_reserve_fraction`` (25%) of the window, except that the reserve is never
   below the request's own ``max_tokens`` or the budget's ``reserved_output``: providers
   refuse a request whose input plus ``max_tokens`` is over the window.

The boundary is exact: a request that fills the budget exactly :meth:`~ContextWindowBudget.fits`,
one token more does not. Compaction is due from the same point on
(:meth:`~ContextWindowBudget.needs_compaction`: ``input + reserve >= window``): the exactly
full request may still be sent, but the next one will not fit.

>>> budget = ContextWindowBudget(128_000, 8_000)
>>> budget.reserve()
28000
>>> budget.fits(100_000), budget.fits(100_001)
(True, False)
>>> budget.needs_compaction(99_999), budget.needs_compaction(100_000)
(False, True)
>>> print(budget.check(127_000))  # doctest: +NORMALIZE_WHITESPACE
conversation: input 127,000 + reserve 28,000 = 155,000 tokens, over the 128,000 window by
27,000 (system 0, tools 0, conversation 127,000, framing 0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from ctxbudget.errors import ContextBudgetError
from ctxbudget.models import ModelRegistry, _check_window, model_info
from ctxbudget.request import Accuracy, RequestEstimate
from ctxbudget.settings import check_count, check_real

if TYPE_CHECKING:
    from ctxbudget.calibration import CalibratedEstimate

__all__ = [
    "DEFAULT_MARGIN",
    "DEFAULT_OUTPUT_RESERVE",
    "BudgetComponent",
    "BudgetViolation",
    "ContextWindowBudget",
]

#: Output reserved when neither the request nor the model says (SPEC B2).
DEFAULT_OUTPUT_RESERVE = 16_384
#: Tokens added to the reserve for estimation error.
DEFAULT_MARGIN = 20_000

BudgetComponent = Literal["system", "tools", "conversation", "reserved_output"]
#: What the checks take: an estimate, a calibrated one (its raw estimate tells the parts), or a
#: count of input tokens.
_Estimate: TypeAlias = "RequestEstimate | CalibratedEstimate | int"


@dataclass(frozen=True, slots=True)
class BudgetViolation:
    """Why a request does not fit, with the numbers.

    Attributes:
        component: What is at fault: ``reserved_output`` (the reserve alone fills the window),
            ``system`` (the system prompt alone does not fit beside the reserve), ``tools``
            (the tool schemas do not fit beside the system prompt and the reserve), or
            ``conversation`` (the messages: compact or prune them).
        window: The context window.
        reserve: The output reserve (margin included, capped).
        input_tokens: The request's input estimate.
        over_by: ``input_tokens + reserve - window`` (> 0).
        system: System prompt tokens.
        tools: Tool schema tokens.
        conversation: Conversation tokens.
        framing: Template framing tokens.
        input_fits: The input alone fits the window: lowering the output reserve by
            ``over_by`` would also make the request fit.
        exact: The input count is exact.
    """

    component: BudgetComponent
    window: int
    reserve: int
    input_tokens: int
    over_by: int
    system: int = 0
    tools: int = 0
    conversation: int = 0
    framing: int = 0
    input_fits: bool = False
    exact: bool = False

    @property
    def requested_tokens(self) -> int:
        """Input plus reserve: what was compared with the window."""
        return self.input_tokens + self.reserve

    def __str__(self) -> str:
        return (
            f"{self.component}: input {self.input_tokens:,} + reserve {self.reserve:,} = "
            f"{self.requested_tokens:,} tokens, over the {self.window:,} window by "
            f"{self.over_by:,} (system {self.system:,}, tools {self.tools:,}, conversation "
            f"{self.conversation:,}, framing {self.framing:,})"
        )


class ContextWindowBudget:
    """A model's context window, the output reserve rule, and the checks on a request.

    Args:
        window: Context window in tokens.
        reserved_output: Output to reserve; ``None`` uses the request's ``max_tokens``, else
            ``max_output``, else ``default_output``.
        margin: Added to the reserve (default 20k).
        max_reserve_fraction: Cap on the reserve as a fraction of the window (default 0.25;
            ``None`` for no cap).
        max_output: The model's maximum output, if known.
        max_input: The largest input the provider accepts, when below the window (GPT-5:
            272k of 400k): the reserve is never less than ``window - max_input``.
        default_output: Reserve when nothing else says (default 16k).
        model: Model name, for messages and errors.

    Raises:
        ValueError: A window that is not positive, or a negative reserve or margin.
    """

    __slots__ = (
        "default_output",
        "margin",
        "max_input",
        "max_output",
        "max_reserve_fraction",
        "model",
        "reserved_output",
        "window",
    )

    def __init__(
        self,
        window: int,
        reserved_output: int | None = None,
        *,
        margin: int = DEFAULT_MARGIN,
        max_reserve_fraction: float | None = 0.25,
        max_output: int | None = None,
        max_input: int | None = None,
        default_output: int = DEFAULT_OUTPUT_RESERVE,
        model: str | None = None,
    ) -> None:
        _check_window(window)
        if max_input is not None:
            check_count("max_input", max_input, minimum=1)
        for name, value in (
            ("reserved_output", reserved_output),
            ("margin", margin),
            ("max_output", max_output),
            ("default_output", default_output),
        ):
            if value is not None or name in ("margin", "default_output"):
                check_count(name, value)
        if max_reserve_fraction is not None:
            check_real("max_reserve_fraction", max_reserve_fraction)
            if max_reserve_fraction > 1:
                raise ValueError("max_reserve_fraction must be within [0, 1]")
        self.window = window
        # whole numbers given as floats (2e4) kept as ints: token counts
        self.reserved_output = None if reserved_output is None else int(reserved_output)
        self.margin = int(margin)
        self.max_reserve_fraction = (
            None if max_reserve_fraction is None else float(max_reserve_fraction)
        )
        self.max_output = None if max_output is None else int(max_output)
        self.max_input = None if max_input is None else int(max_input)
        self.default_output = int(default_output)
        self.model = model

    @classmethod
    def for_model(
        cls,
        model: str,
        *,
        window: int | None = None,
        max_output: int | None = None,
        registry: ModelRegistry | None = None,
        **kwargs: object,
    ) -> ContextWindowBudget:
        """A budget from the model registry, with the caller's overrides.

        Raises:
            KeyError: The model is not registered and no ``window`` was given.

        >>> b = ContextWindowBudget.for_model("claude-sonnet-4-5")
        >>> b.window, b.reserve()
        (200000, 50000)
        """
        info = model_info(model, registry=registry)
        if window is None:
            if info is None:
                raise KeyError(f"unknown model {model!r}: pass window= or register it")
            window = info.window
        if max_output is None and info is not None:
            max_output = info.max_output
        if info is not None and info.max_input is not None and "max_input" not in kwargs:
            # the model's input cap, unless the caller's window is already below it
            kwargs["max_input"] = info.max_input if info.max_input < window else None
        return cls(window, max_output=max_output, model=model, **kwargs)  # type: ignore[arg-type]

    # -- the reserve rule

    def reserve(self, max_tokens: int | None = None) -> int:
        """Tokens kept for the answer: base (see class doc) + margin, capped.

        Args:
            max_tokens: The request's output cap, used when the budget has no fixed
                ``reserved_output``.
        """
        if max_tokens is not None and max_tokens < 0:
            raise ValueError(f"max_tokens must not be negative, got {max_tokens}")
        if self.reserved_output is not None:
            base = self.reserved_output
        elif max_tokens is not None:
            base = max_tokens
        elif self.max_output is not None:
            base = self.max_output
        else:
            base = self.default_output
        reserve = base + self.margin
        if self.max_reserve_fraction is not None:
            reserve = min(reserve, int(self.window * self.max_reserve_fraction))
        # Providers refuse a request whose input + max_tokens exceeds the window: the cap trims
        # the margin and a model's default output, never an output size asked for (the
        # request's max_tokens, or the budget's own reserved_output).
        for asked in (self.reserved_output, max_tokens):
            if asked is not None:
                reserve = max(reserve, asked)
        if self.max_input is not None:
            # The provider's input cap holds whatever the output: what lies above it is
            # reserved too.
            reserve = max(reserve, self.window - self.max_input)
        return reserve

    def available(self, max_tokens: int | None = None) -> int:
        """Input tokens a request may have: ``window - reserve``."""
        return self.window - self.reserve(max_tokens)

    # -- checks

    @staticmethod
    def _split(estimate: _Estimate) -> tuple[int, int | None]:
        if isinstance(estimate, RequestEstimate):
            return estimate.total, estimate.reserved_output
        if hasattr(estimate, "total"):  # a CalibratedEstimate or similar
            raw = getattr(estimate, "raw", None)
            return int(estimate.total), getattr(raw, "reserved_output", None)
        return int(estimate), None

    def fits(self, estimate: _Estimate, *, max_tokens: int | None = None) -> bool:
        """``input + reserve <= window``: exactly full fits, one token more does not.

        Args:
            estimate: A :class:`~ctxbudget.request.RequestEstimate` (its
                ``reserved_output`` is the request's ``max_tokens``), a calibrated estimate,
                or an input token count.
            max_tokens: The request's output cap, when ``estimate`` does not carry one.
        """
        total, cap = self._split(estimate)
        return total + self.reserve(max_tokens if max_tokens is not None else cap) <= self.window

    def needs_compaction(self, estimate: _Estimate, *, max_tokens: int | None = None) -> bool:
        """``input + reserve >= window``: compact (or prune) before the next turn (SPEC B3)."""
        total, cap = self._split(estimate)
        return total + self.reserve(max_tokens if max_tokens is not None else cap) >= self.window

    def check(
        self, estimate: _Estimate, *, max_tokens: int | None = None
    ) -> BudgetViolation | None:
        """``None`` when the request fits, else a :class:`BudgetViolation` naming the culprit."""
        total, cap = self._split(estimate)
        reserve = self.reserve(max_tokens if max_tokens is not None else cap)
        over = total + reserve - self.window
        if over <= 0:
            return None
        system, tools, conversation, framing, fixed = _parts(estimate, total)
        available = self.window - reserve
        component: BudgetComponent
        if available <= 0:
            component = "reserved_output"
        elif system > available:
            component = "system"
        elif system + tools > available:
            component = "tools"
        elif fixed > available:  # the request's own framing tips system and tools over
            component = "tools" if tools else "system"
        else:
            component = "conversation"
        return BudgetViolation(
            component=component,
            window=self.window,
            reserve=reserve,
            input_tokens=total,
            over_by=over,
            system=system,
            tools=tools,
            conversation=conversation,
            framing=framing,
            input_fits=total <= self._input_limit(),
            exact=isinstance(estimate, RequestEstimate) and estimate.accuracy is Accuracy.EXACT,
        )

    def _input_limit(self) -> int:
        """The largest input the provider takes, whatever the output reserve: the window, or
        ``max_input`` when below it (an input over that is refused even with no output)."""
        if self.max_input is None:
            return self.window
        return min(self.window, self.max_input)

    def enforce(self, estimate: _Estimate, *, max_tokens: int | None = None) -> None:
        """Raise :class:`~ctxbudget.errors.ContextBudgetError` unless the request fits.

        >>> ContextWindowBudget(1_000, 100, margin=0).enforce(901)
        Traceback (most recent call last):
        ...
        ctxbudget.errors.ContextBudgetError: request over the context budget: ...
        """
        violation = self.check(estimate, max_tokens=max_tokens)
        if violation is None:
            return
        raise ContextBudgetError(
            self.model,
            self.window,
            violation.requested_tokens,
            str(violation),
            input_tokens=violation.input_tokens,
            reserved_output=violation.reserve,
            component=violation.component,
            exact=violation.exact,
        )

    def __repr__(self) -> str:
        return (
            f"ContextWindowBudget(window={self.window}, reserved_output={self.reserved_output}, "
            f"margin={self.margin}, max_reserve_fraction={self.max_reserve_fraction}, "
            f"max_output={self.max_output}, max_input={self.max_input}, model={self.model!r})"
        )


def _parts(estimate: _Estimate, total: int) -> tuple[int, int, int, int, int]:
    """``(system, tools, conversation, framing, fixed)`` of a request of ``total`` tokens.

    ``fixed`` is what no compaction can shrink: system, tools and the request's own framing.
    The per-message framing is in ``framing`` too, but it belongs to the conversation (2,000
    short messages have ~8k of it): it is told apart by the per-message totals, which include
    it, and a system message's text counted back in. A calibrated estimate's parts are its raw
    estimate's, scaled to its total.
    """
    raw = estimate if isinstance(estimate, RequestEstimate) else getattr(estimate, "raw", None)
    if not isinstance(raw, RequestEstimate):
        return 0, 0, total, 0, 0
    scale = total / raw.total if raw.total else 1.0
    messages = sum(raw.per_message) if raw.per_message else raw.conversation
    rest = raw.total - messages  # tools, the request's framing, a system= prompt
    if rest - raw.tools < raw.system:
        # The system prompt is a message, in the per-message totals: fixed all the same (its
        # message framing, a few tokens, is left to the conversation).
        rest += raw.system
    fixed = round(rest * scale)
    if raw is estimate:
        return raw.system, raw.tools, raw.conversation, raw.framing, fixed
    system, tools = round(raw.system * scale), round(raw.tools * scale)
    framing = round(raw.framing * scale)
    return system, tools, max(total - system - tools - framing, 0), framing, fixed
