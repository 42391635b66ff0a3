"""``farm run``: a pipeline carried out, stage by stage, into a run directory.

    run_pipeline("pipelines/smoke.yaml")      # the CLI, the GitLab/GitHub jobs and `farm health` call this

The pieces, a module each: the pipeline file (model) and its experiment (experiment), the run directory
and run.json (rundir), the runner that walks the stages (runner), the hooks it calls (events) and its
listeners (listeners, phases), how a boot settles (settle); around the runner, what ``farm run``'s
options bring: a farm place (place), built images (given), the boot order's seed (seed), a resumed run
(resume); and the run assembled from them (assembly: :func:`run_pipeline`).

This module only re-exports, each name when it is first asked for: farm's listeners import
``farm.run.events`` (its ``hookimpl``) without loading the runner, and labgrid, with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .assembly import Run, run_pipeline
    from .given import given_images, given_load_addr
    from .listeners import Progress
    from .model import load_pipeline
    from .place import FarmRequest, drives_load_generators
    from .rundir import RunDir, new_run_id
    from .seed import recorded_seed

#: each name farm.run offers -> the module of farm.run that declares it
_EXPORTS = {
    "FarmRequest": "place", "drives_load_generators": "place",
    "Progress": "listeners",
    "Run": "assembly", "run_pipeline": "assembly",
    "RunDir": "rundir", "new_run_id": "rundir",
    "given_images": "given", "given_load_addr": "given",
    "load_pipeline": "model",
    "recorded_seed": "seed",
}

__all__ = ["FarmRequest", "Progress", "Run", "RunDir", "drives_load_generators", "given_images", "given_load_addr",
           "load_pipeline", "new_run_id", "recorded_seed", "run_pipeline"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
