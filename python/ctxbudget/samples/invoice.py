from dataclasses import dataclass, field
from decimal import Decimal


@dataclass(frozen=True)
class Line:
    name: str
    quantity: int
    unit_price: Decimal

    def amount(self) -> Decimal:
        return self.unit_price * self.quantity


@dataclass
class Invoice:
    lines: list[Line] = field(default_factory=list)
    discount: Decimal = Decimal("0")

    def subtotal(self) -> Decimal:
        return sum((line.amount() for line in self.lines), Decimal("0"))

    def total(self) -> Decimal:
        return self.subtotal() * (1 - self.discount)
