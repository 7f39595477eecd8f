"""The figures a bench prints, each with the statistic it is and, where one is set, the goal beside it.

A bench declares each figure it compares to a goal (`Declared`: its name, the statistic it reports and
the goal, whose wording names the statistic the goal is stated for) and prints it through
`Declared.figure(value).line()`, which gives the verdict. Two ways a bench flattered are refused here,
not left to each print:
- a statistic other than the goal's (a median of 10 s windows printed beside a time-averaged goal:
  one window in three at 2% does not move the median, it doubles the average);
- a negative figure (a latency less a typing delay the agent never paid): the figure raises instead
  of printing, since no CPU share, duration or size can be below zero and a negative one means the
  measurement subtracted something that did not happen.

`cindy_site/tests/test_benches.py` checks every declaration of the benches and their reductions.
"""

from __future__ import annotations

import enum
import statistics
from dataclasses import dataclass


class Statistic(enum.StrEnum):
    #: Total over the whole measured span divided by its wall time (CPU seconds / wall seconds).
    TIME_AVERAGE = "time average"
    #: Total over the samples divided by their number (CPU per message: what the tree pays for each).
    MEAN = "mean"
    MEDIAN = "median"
    #: The largest sample (the worst window, the slowest pass).
    WORST = "worst"


#: The words a goal's wording uses for each statistic (the wording must say which one the goal is for).
WORDS = {
    Statistic.TIME_AVERAGE: ("time-averaged", "time average"),
    Statistic.MEAN: ("mean", "on average"),
    Statistic.MEDIAN: ("median",),
    Statistic.WORST: ("worst", "slowest", "every", "each"),
}
AVERAGES = frozenset({Statistic.TIME_AVERAGE, Statistic.MEAN})


class FigureError(ValueError):
    """A figure that cannot be printed as measured: negative, or not the statistic its goal is for."""


@dataclass(frozen=True)
class Goal:
    """`bound` in the figure's unit; `wording` as printed, naming the statistic (`WORDS`)."""

    bound: float
    wording: str
    statistic: Statistic
    at_most: bool = True

    def met(self, value: float) -> bool:
        return value <= self.bound if self.at_most else value >= self.bound

    def problems(self) -> list[str]:
        words = WORDS[self.statistic]
        if not any(word in self.wording for word in words):
            return [
                f'goal "{self.wording}" is for the {self.statistic} but does not say so: '
                f"put one of {', '.join(repr(w) for w in words)} in its wording"
            ]
        others = [
            word
            for statistic, many in WORDS.items()
            if statistic is not self.statistic
            for word in many
            if word in self.wording and not any(word in own for own in words)
        ]
        if others:
            return [f'goal "{self.wording}" is for the {self.statistic} but its wording also says {others}']
        return []


def _render(value: float, unit: str) -> str:
    if unit == "% of a core":
        return f"{value:.2%} of a core"
    return f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"


@dataclass(frozen=True)
class Figure:
    name: str
    value: float
    statistic: Statistic
    unit: str
    goal: Goal | None = None

    def __post_init__(self) -> None:
        if self.value != self.value or self.value < 0:  # NaN or negative
            raise FigureError(
                f"{self.name}: {self.statistic} is {self.value!r} {self.unit}: a figure cannot be negative; "
                "the measurement subtracted something that did not happen (fix the bench, not the figure)"
            )
        if self.goal is not None and self.goal.statistic is not self.statistic:
            raise FigureError(
                f"{self.name}: the {self.statistic} compared to a goal for the {self.goal.statistic} "
                f'("{self.goal.wording}"): report the {self.goal.statistic}, or print this one without the goal'
            )

    @property
    def text(self) -> str:
        return f"{self.statistic} {_render(self.value, self.unit)}"

    def line(self) -> str:
        """'<statistic> <value>; goal <wording>, meets|MISSES', or just the first part without a goal."""
        if self.goal is None:
            return self.text
        verdict = "meets" if self.goal.met(self.value) else "MISSES"
        return f"{self.text}; goal {self.goal.wording}, {verdict}"


@dataclass(frozen=True)
class Declared:
    """A figure a bench prints: its name, statistic, unit and goal (None: printed without a verdict)."""

    name: str
    statistic: Statistic
    unit: str
    goal: Goal | None = None

    def problems(self) -> list[str]:
        if self.goal is None:
            return []
        if self.goal.statistic is not self.statistic:
            return [
                f"{self.name}: declared as the {self.statistic} beside a goal for the {self.goal.statistic} "
                f'("{self.goal.wording}")'
            ]
        return self.goal.problems()

    def figure(self, value: float, *, goal: bool = True) -> Figure:
        """The figure measured; `goal=False` for a figure shown without a verdict (the before figure)."""
        return Figure(self.name, value, self.statistic, self.unit, self.goal if goal else None)


def declared_in(namespace: dict[str, object]) -> list[Declared]:
    """Every figure declaration among a module's globals."""
    return [value for value in namespace.values() if isinstance(value, Declared)]


# --- reductions of samples -------------------------------------------------------------------------------


def samples(declared: Declared, values: list[float]) -> list[float]:
    """The samples a figure is reduced from, each refused as a figure would be if it is negative: a
    mean can hide one negative sample among positive ones, never make it right."""
    for value in values:
        Figure(f"{declared.name}, one sample", value, declared.statistic, declared.unit)
    return values


@dataclass(frozen=True)
class Windows:
    """CPU shares over consecutive windows of one span: `(cpu seconds, wall seconds)` each."""

    windows: tuple[tuple[float, float], ...]

    def __post_init__(self) -> None:
        if not self.windows or any(wall <= 0 or cpu < 0 for cpu, wall in self.windows):
            raise FigureError(
                f"windows {self.windows!r}: need at least one, each with wall time above 0 and CPU time not "
                "below 0"
            )

    @property
    def time_average(self) -> float:
        """CPU seconds over the whole span / its wall seconds: a busy window weighs what it lasted."""
        return sum(cpu for cpu, _ in self.windows) / sum(wall for _, wall in self.windows)

    @property
    def worst(self) -> float:
        return max(cpu / wall for cpu, wall in self.windows)

    @property
    def median(self) -> float:
        return statistics.median(cpu / wall for cpu, wall in self.windows)
