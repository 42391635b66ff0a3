"""``farm history --plot``: the medians of each series with their intervals, one line per series."""

from __future__ import annotations

import io
import os
from typing import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from farm.results.record import open_atomic
from farm.store.history import Series


def plot_history(series: Sequence[Series], path: str | os.PathLike[str], *, by: str) -> None:
    """Write a PNG: x = the points in the order they were first measured (a run, image, kernel or
    commit), y = median with its interval as an error bar."""
    fig = Figure(figsize=(9, 4.8))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    labels: list[str] = []
    for s in series:
        for p in s.points:
            if p.x not in labels:
                labels.append(p.x)
    position = {x: i for i, x in enumerate(labels)}
    for s in series:
        xs = [position[p.x] for p in s.points]
        ys = [p.median for p in s.points]
        err = [[p.median - p.lo for p in s.points], [p.hi - p.median for p in s.points]]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=s.label())
    ax.set_xticks(range(len(labels)), [x[:24] for x in labels], rotation=30, ha="right", fontsize=7)
    units = sorted({s.unit for s in series})
    ax.set_ylabel(f"{series[0].metric} ({', '.join(units)})" if series else "")
    ax.set_xlabel({"time": "run", "image": "image key", "kernel": "kernel", "commit": "git commit"}[by])
    ax.grid(True, alpha=0.3)
    if series:
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    with open_atomic(path, "wb") as f:
        f.write(buf.getvalue())
