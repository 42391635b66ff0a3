"""How well ``farm changes`` finds a step in a history, beside Otava's defaults: synthetic series with known
steps, fixed seeds.

    .venv/bin/python benchmarks/changepoints.py [--reps 25] [--seed 49]

Each series is ``n`` per-run values (20, 50, 100, 200) of a level with normal noise of coefficient of
variation ``cv`` (2, 5, 10, 20 %); a step series drops by ``step`` (5, 10, 20, 30 %) at a place drawn between
a fifth and four fifths of it (at least 5 points from either end); a null series has no step. Printed:

* **detection rate**: the step series where a change was found within ``max(2, n // 20)`` points of the step;
* **location error**: the mean distance of those found changes from the step, in points;
* **false alarms per 100 points**: the changes found in the null series (any found change is false), and,
  beside it, the changes of the step series that matched no step.

Methods: ``farm`` is farm.results.changes.change_points as ``farm changes`` runs it (p <= 0.001), ``farm p.01``
the same with ``--alpha 0.01``. ``otava`` is Apache
Otava's defaults as its documentation describes them, written here (none of Otava's code): e-divisive means
(the energy statistic of Matteson & James, 2014) in windows of 50 points (overlapping by half), each split kept
when Welch's t-test between its two sides gives p <= 0.001 and its halves searched again; then a second
pass that judges every found point between its neighbours and drops the weakest until each has p <= 0.001.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from farm.results.changes import change_points  # noqa: E402

LENGTHS = (20, 50, 100, 200)
CVS = (0.02, 0.05, 0.10, 0.20)
STEPS = (0.05, 0.10, 0.20, 0.30)
#: Otava's defaults
WINDOW, MAX_P = 50, 0.001


# --- Otava's defaults, from their description ---------------------------------------------------------------

def _best_split(x: np.ndarray, min_size: int = 2) -> int | None:
    """The split of ``x`` with the largest energy statistic Q(tau) = m n / (m + n) * E(tau), where E is twice
    the mean distance between the sides less the mean distances within each (alpha = 1)."""
    n = len(x)
    if n < 2 * min_size:
        return None
    d = np.abs(x[:, None] - x[None, :])
    s = np.zeros((n + 1, n + 1))
    s[1:, 1:] = d.cumsum(0).cumsum(1)  # s[i, j]: the sum of d[:i, :j]

    def block(r0: int, r1: int, c0: int, c1: int) -> float:
        return s[r1, c1] - s[r0, c1] - s[r1, c0] + s[r0, c0]

    best, at = -math.inf, None
    for tau in range(min_size, n - min_size + 1):
        m, k = tau, n - tau
        between = block(0, tau, tau, n) / (m * k)
        within_left = block(0, tau, 0, tau) / (m * (m - 1))  # both orders of each pair, over 2 C(m, 2)
        within_right = block(tau, n, tau, n) / (k * (k - 1))
        q = m * k / (m + k) * (2 * between - within_left - within_right)
        if q > best:
            best, at = q, tau
    return at


def _ttest_p(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import ttest_ind

    if len(a) < 2 or len(b) < 2:
        return 1.0
    p = ttest_ind(a, b, equal_var=False).pvalue
    return 1.0 if math.isnan(p) else float(p)


def _divide(x: np.ndarray, lo: int, hi: int, found: set[int]) -> None:
    tau = _best_split(x[lo:hi])
    if tau is None:
        return
    at = lo + tau
    if _ttest_p(x[lo:at], x[at:hi]) <= MAX_P:
        found.add(at)
        _divide(x, lo, at, found)
        _divide(x, at, hi, found)


def otava_defaults(values: list[float]) -> list[int]:
    """The indices of the first value after each change (module docstring)."""
    x = np.asarray(values, dtype=float)
    n, found = len(x), set()
    starts = range(0, max(1, n - WINDOW // 2), WINDOW // 2) if n > WINDOW else (0,)
    for start in starts:
        _divide(x, start, min(n, start + WINDOW), found)
    kept = sorted(found)
    while kept:
        bounds = [0, *kept, n]
        ps = [_ttest_p(x[bounds[i]:bounds[i + 1]], x[bounds[i + 1]:bounds[i + 2]]) for i in range(len(kept))]
        weakest = int(np.argmax(ps))
        if ps[weakest] <= MAX_P:
            break
        del kept[weakest]
    return kept


def farm_method(values: list[float]) -> list[int]:
    return [s.at for s in change_points(values)]


def farm_loose(values: list[float]) -> list[int]:
    return [s.at for s in change_points(values, alpha=0.01)]


#: farm as farm changes runs it (p <= 0.001), farm with --alpha 0.01, Otava's defaults
METHODS = {"farm": farm_method, "farm p.01": farm_loose, "otava": otava_defaults}


# --- the series and the scoring ------------------------------------------------------------------------------

def series(rng: np.random.Generator, n: int, cv: float, step: float) -> tuple[list[float], int | None]:
    """n values about 1000 with noise of ``cv``; after the step (if ``step``) about 1000 (1 - step)."""
    level = np.full(n, 1000.0)
    at = None
    if step:
        margin = max(5, n // 5)
        at = int(rng.integers(margin, n - margin + 1))
        level[at:] *= 1 - step
    return list(level * (1 + cv * rng.standard_normal(n))), at


def run(reps: int, seed: int) -> dict:
    out: dict = {}
    for mi, (name, method) in enumerate(METHODS.items()):
        for n in LENGTHS:
            for cv in CVS:
                for step in (0.0, *STEPS):
                    rng = np.random.default_rng([seed, n, int(cv * 1000), int(step * 1000)])  # the same series for both
                    hits, errors, false, points = 0, [], 0, 0
                    for _ in range(reps):
                        values, at = series(rng, n, cv, step)
                        found = method(values)
                        points += n
                        tolerance = max(2, n // 20)
                        matched = [f for f in found if at is not None and abs(f - at) <= tolerance]
                        if matched:
                            hits += 1
                            errors.append(min(abs(f - at) for f in matched))
                        false += len(found) - (1 if matched else 0)
                    out[name, n, cv, step] = {"detected": hits / reps, "error": (sum(errors) / len(errors)
                                              if errors else None), "false_per_100": 100 * false / points}
    return out


def _table(title: str, header: list[str], rows: list[list[str]]) -> str:
    lines = [f"**{title}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def report(results: dict, reps: int) -> str:
    cols = [f"{m} n={n}" for m in METHODS for n in LENGTHS]
    det, err = [], []
    for step in STEPS:
        for cv in CVS:
            label = [f"{step:.0%}", f"{cv:.0%}"]
            det.append(label + [f"{results[m, n, cv, step]['detected']:.0%}" for m in METHODS for n in LENGTHS])
            err.append(label + ["–" if (e := results[m, n, cv, step]["error"]) is None else f"{e:.1f}"
                                for m in METHODS for n in LENGTHS])
    null = [[f"{cv:.0%}"] + [f"{results[m, n, cv, 0.0]['false_per_100']:.2f}" for m in METHODS for n in LENGTHS]
            for cv in CVS]
    extra = [[f"{cv:.0%}"] + [f"{np.mean([results[m, n, cv, s]['false_per_100'] for s in STEPS]):.2f}"
                              for m in METHODS for n in LENGTHS] for cv in CVS]
    return "\n".join([
        _table(f"Detection rate ({reps} series a cell)", ["step", "CV", *cols], det),
        _table("Location error (mean points from the step, of those detected)", ["step", "CV", *cols], err),
        _table("False alarms per 100 points, series without a step", ["CV", *cols], null),
        _table("False alarms per 100 points, series with a step (found changes that are not it)", ["CV", *cols],
               extra)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=25, help="series per cell (default 25)")
    parser.add_argument("--seed", type=int, default=49)
    args = parser.parse_args()
    started = time.monotonic()
    results = run(args.reps, args.seed)
    print(report(results, args.reps))
    print(f"({args.reps} series a cell, seed {args.seed}, {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
