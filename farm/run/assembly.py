"""A run assembled and carried out: :func:`run_pipeline` reads the pipeline and env files, makes (or with
``--resume`` reopens) the run directory, registers the listeners, has the runner build the images, take a
farm place, boot and benchmark, and publishes what was measured; :class:`Run` is what it hands back.

Everything measured is appended to results.csv as soon as a benchmark finishes, run.json and junit.xml
are rewritten after every stage, and the console log is written as it arrives: a run that fails or is
interrupted keeps all it had.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import attrs

from ..boot.console_log import ConsoleLog
from ..boot.flow import BootFlow
from ..boot.session import EnvFile
from ..errors import EXIT_OK, EXIT_TEST_FAILURE, FarmError, InfrastructureError, JobError
from ..images.image import Image
from ..results.junit import Case
from .events import Hooks
from .given import given_images, given_load_addr
from .listeners import Progress
from .model import Pipeline, Setup, load_pipeline
from .phases import PhaseTimes
from .place import FarmRequest, farm_env, held_place
from .resume import reopen_passed, resumed_work
from .rundir import RunDir, RunInfo, Stage, new_run
from .runner import Runner, plan_boots
from .seed import recorded_seed, run_seed


@attrs.frozen
class Run:
    """A run carried out: its directory and how it ended (the runner's exit code)."""

    dir: RunDir
    status: int

    @property
    def path(self) -> Path:
        return self.dir.path

    @property
    def run_id(self) -> str:
        return self.dir.run_id

    @property
    def info(self) -> RunInfo:
        return self.dir.info

    @property
    def cases(self) -> list[Case]:
        return self.dir.cases

    @property
    def results_csv(self) -> Path:
        return self.dir.results_csv


def _json_params(params: Any) -> dict[str, Any]:
    """A benchmark's typed params as run.json records them (every field, its defaults too)."""
    if not attrs.has(type(params)):
        return {}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in attrs.asdict(params, recurse=False).items()}


def _never_green(runner: Runner, stopped_by: FarmError | None) -> None:
    """A run that failed is never green in junit.xml: it has a testcase of its exit class (a test
    failure a ``failure``, a job or infrastructure error an ``error``). The stages record theirs; an
    error raised outside any stage's testcase gets one here, named by the stage it stopped in."""
    run = runner.run
    if runner.status == EXIT_OK:
        return
    kind = "failure" if runner.status == EXIT_TEST_FAILURE else "error"
    if any(c.kind == kind for c in run.cases):
        return
    stage = run.info.current_stage or "run"
    message = str(stopped_by) if stopped_by is not None else f"the run failed during {stage}"
    runner.hooks.stage_ended(stage=Stage(Case(stage, "farm.run", 0.0, kind, message.splitlines()[0], message)))


def _publish(run: RunDir, hooks: Hooks) -> None:
    """Wide CSVs, plots, summary.md, metrics.txt; a failure here is reported, never loses the run."""
    from ..results.publish import publish

    t0 = time.monotonic()
    try:
        report = publish(run.path)
    except Exception as exc:  # noqa: BLE001 - publishing must not hide what was measured
        hooks.stage_ended(stage=Stage(Case("publish", "farm.publish", time.monotonic() - t0, "error",
                                           f"{type(exc).__name__}: {exc}")))
        hooks.say(text=f"publish ERROR: {exc}")
        return
    hooks.stage_ended(stage=Stage(Case("publish", "farm.publish", time.monotonic() - t0, "pass")))
    hooks.say(text=f"publish ok: {report.summary.name}, {report.metrics.name}"
              + (f", {len(report.plots)} plot(s)" if report.plots else ""))
    with contextlib.suppress(Exception):  # summary.md again, now counting publish; the job summary once
        from ..results.report import write_summary

        write_summary(run.path, step_summary=os.environ.get("GITHUB_STEP_SUMMARY") or None)


def at_least_boots(pipeline: Pipeline, n: int) -> Pipeline:
    """``pipeline`` with every setup booting at least ``n`` times (its own ``boots:`` or the pipeline's)."""
    setups = tuple(attrs.evolve(s, boots=max(s.boots, n)) if s.boots is not None else s for s in pipeline.setups)
    experiment = attrs.evolve(pipeline.experiment, boots=max(pipeline.experiment.boots, n))
    return attrs.evolve(pipeline, setups=setups, experiment=experiment)


def run_pipeline(pipeline_path: str | Path, *, out: Path | None = None, env_override: list[Path] | None = None,
                 extra_bootargs: list[str] | None = None, farm: FarmRequest | None = None,
                 resume: Path | None = None, progress: object | None = None, force: bool = False,
                 image_dirs: list[Path] | None = None, flow_for: Callable[[Setup], BootFlow] | None = None,
                 listeners: list[object] | None = None, registry: Mapping[str, Any] | None = None,
                 images: Mapping[tuple[str, str], Image] | None = None, seed: int | None = None,
                 boots_at_least: int | None = None) -> Run:
    """Carry out a pipeline file. ``flow_for``: the boot flow of a setup (default: the one its pipeline
    file chose, farm.flows); ``listeners``: more hooks
    (farm.run.events), besides the run directory, ``progress`` and farm's and the lab's listeners
    (the results store, the archive, entry points); ``registry``: the benchmarks (default: the registered
    ones, farm's and the lab's plugins', farm.bench.registry); ``images``: (architecture, setup) -> the image to boot as it is, nothing
    built (``farm reproduce``: the original run's, from the archive); ``seed``: a shuffled boot
    order's seed instead of the pipeline's or a drawn one (``farm reproduce``: the original's, so its
    boots run in the same order); ``boots_at_least``: every setup boots at least this often (``farm
    reproduce`` of an original of fewer boots than its rule's minimum: enough to decide)."""
    pipeline = load_pipeline(pipeline_path, registry)
    if boots_at_least is not None:
        pipeline = at_least_boots(pipeline, boots_at_least)
    if extra_bootargs:
        pipeline = attrs.evolve(pipeline, setups=tuple(attrs.evolve(s, bootargs=(*s.bootargs, *extra_bootargs))
                                                       for s in pipeline.setups))
    envs = tuple(env_override) if env_override else pipeline.envs
    if farm is not None:
        envs = envs[:1] if env_override else (farm_env(pipeline, farm),)
    env_files = [EnvFile.load(e) for e in envs]  # bad env files fail now, before anything is built
    given = given_images(image_dirs or [], {e.arch for e in env_files},  # --image: built already, verified now
                         {s.flow.type.image_kind for s in pipeline.setups}, load_addr=given_load_addr(pipeline))
    progress = progress or Progress()
    if resume is not None:
        seed = recorded_seed(resume) if pipeline.experiment.order == "shuffled" else None
        if pipeline.experiment.order == "shuffled" and seed is None:
            raise JobError(f"--resume {resume}: run.json has no seed of its shuffled boot order (cannot resume "
                           "in the same order); start a new run")
        run = reopen_passed(resume, pipeline, env_files, seed)
        progress.say(f"resume run {run.run_id} in {resume}: {len(run.info.stages)} stages done")
    else:
        seed = run_seed(pipeline, seed)
        plan = [p.label for p in plan_boots(pipeline, env_files, seed)]
        boots = {s.name: pipeline.boots_of(s) for s in pipeline.setups}
        asked = [{"benchmark": b.name, "params": _json_params(b.params)} for b in pipeline.benchmarks]
        run = new_run(pipeline, envs, out, force,
                      experiment=pipeline.experiment.describe(seed, boots, pipeline.repeats_in_boot, plan, asked))
        if run.info.replaced:
            progress.say(f"--force: the old content of {run.path} moved to {run.info.replaced}")
        progress.say(f"run {run.run_id} -> {run.path}")
    # the phases after the run directory: both tryfirst, pluggy calls the later first, so run.json counts them
    hooks = Hooks([run, PhaseTimes(run.info), progress, *(listeners or [])], farm_listeners=True)
    if resume is None and run.info.replaced:  # before anything is stored under run.path again
        hooks.results_moved(old=run.path, new=Path(run.info.replaced))
    runner = Runner(pipeline, run, hooks, flow_for=flow_for, done=resumed_work(run), fixed_images=images or {},
                    **({"registry": registry} if registry is not None else {}))
    stopped_by: FarmError | None = None
    interrupted = False
    with ConsoleLog(run.path / "console") as console:
        try:
            image_for = runner.build_images(env_files, given)
            with held_place(runner, farm):
                for plan in plan_boots(pipeline, env_files, seed):
                    runner.boot_and_bench(plan, image_for(plan.env, plan.setup), console)
        except FarmError as exc:
            runner.fail(exc)
            stopped_by = exc
            hooks.say(text=f"stopped: {exc}")
        except KeyboardInterrupt:
            interrupted = True
            hooks.stage_ended(stage=Stage(Case("interrupted", "farm.run", 0.0, "error",
                                               f"interrupted (Ctrl-C or SIGTERM) during {run.info.current_stage}; "
                                               "board powered off")))
            raise
        except Exception as exc:  # a defect of farm's: the run failed, and its junit.xml says so too
            stopped_by = InfrastructureError(f"{type(exc).__name__}: {exc}")
            runner.fail(stopped_by)
            raise
        finally:
            _never_green(runner, stopped_by)
            hooks.run_ended(status=runner.status, interrupted=interrupted)
            _publish(run, hooks)
    # complete, its console closed: the store and the lab's listeners take it (not after an interrupt)
    hooks.run_published(run_dir=run.path, qualification=None)
    return Run(run, runner.status)
