"""Benchmarks on a booted target: the suites that run the tools (:mod:`.network`, :mod:`.crypto`)
and the registrations that name them (:mod:`.registry`). The tools' pure parsers and command
builders are in :mod:`farm.measure`, below this package and :mod:`farm.results`."""

from __future__ import annotations

# the names older callers import from here
from farm.measure import (BenchmarkError, ImpossibleValue, check_measurements, check_value,  # noqa: F401
                          merge_params)
