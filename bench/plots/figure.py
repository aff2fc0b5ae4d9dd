"""What the plots share: the type of a plot maker, the floor of the logarithmic axes, a new figure on
matplotlib's Agg backend (imported only when a plot is drawn), logarithmic bin edges and the
"N runs" of a title."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


# One plot: (benchmark name, result) -> the figure.
Maker = Callable[[str, dict[str, Any]], "Figure"]
FLOOR_MS = 0.5  # log axes: anything at or below this (an early delivery included) is drawn here


def _figure(width: float, height: float, rows: int = 1, cols: int = 1) -> tuple[Figure, list[Axes]]:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    axes = [figure.add_subplot(rows, cols, k + 1) for k in range(rows * cols)]
    return figure, axes


def _log_edges(low: float, high: float, count: int) -> list[float]:
    return [low * (high / low) ** (i / count) for i in range(count + 1)]


def _runs_text(result: dict[str, Any]) -> str:
    n = result.get("repetitions", 1)
    return f"{n} run{'s' if n != 1 else ''}"
