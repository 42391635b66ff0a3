"""``farm run``: a pipeline carried out, stage by stage, into a run directory.

    run_pipeline("pipelines/smoke.yaml")      # the CLI, the GitLab/GitHub jobs and `farm health` call this

The pieces: the pipeline file (model), the run directory and run.json (rundir), the runner that walks
the stages (runner) and the listeners it tells what happens (events, listeners). Everything measured is
appended to results.csv as soon as a benchmark finishes, run.json and junit.xml are rewritten after
every stage, and the console log is written as it arrives: a run that fails or is interrupted keeps all
it had.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import attrs

from ..boot.console_log import ConsoleLog
from ..boot.flow import BootFlow
from ..boot.session import EnvFile
from ..errors import EXIT_OK, EXIT_TEST_FAILURE, FarmError, InfrastructureError, JobError
from ..images.image import Image, load_image, verify_artifacts
from ..results.junit import Case
from .events import Hooks
from .listeners import PlaceGuard, Progress
from .model import Pipeline, Setup, load_pipeline
from .phases import PhaseTimes
from .rundir import RunDir, RunInfo, Stage, new_run, new_run_id, reopen_run
from .runner import Runner, plan_boots

__all__ = ["FarmRequest", "Progress", "Run", "RunDir", "load_pipeline", "new_run_id", "run_pipeline"]


@attrs.frozen
class FarmRequest:
    """``farm run --farm TAG=VAL...``: take a place of the farm for the run's boots."""

    tags: dict[str, str]
    timeout: float = 3600.0
    coordinator: str | None = None
    #: a health check: may take a place tagged unhealthy (farm_health), which a passing boot puts back
    health_check: bool = False
    #: the reservation's priority (higher goes first); the place's load generators are reserved with it
    prio: float = 0.0


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


def farm_env(pipeline: Pipeline, request: FarmRequest) -> Path:
    """The env file of a farm place: ``env/<board>.yaml`` beside the pipeline's own env files."""
    board = request.tags.get("board")
    if board is None:
        raise JobError("--farm: name the board (board=maaxboard) or give the place's env file with --env")
    path = pipeline.envs[0].parent / f"{board}.yaml"
    if not path.exists():
        raise JobError(f"--farm board={board}: no env file {path} (give one with --env)")
    return path


def given_load_addr(pipeline: Pipeline) -> int | None:
    """The load address of a raw image given by ``--image FILE``: the one the pipeline's setups' flows
    give it (farm.flows.FlowType.given_load_addr; none of them, or setups that differ: a JobError)."""
    found = {s.name: a for s in pipeline.setups if (a := s.flow.given_load_addr()) is not None}
    if len(set(found.values())) > 1:
        named = ", ".join(f"{name}: {a:#x}" for name, a in found.items())
        raise JobError(f"{pipeline.source}: setups boot the run's --image at different load addresses ({named}): "
                       "one image has one load address")
    return next(iter(found.values()), None)


def given_images(paths: list[Path], arches: set[str], kinds: set[str] | None = None, *,
                 load_addr: int | None = None) -> dict[tuple[str, str], Image]:
    """``--image PATH``: built images by (architecture, kind), each artifact's sha256 checked against its
    manifest (an artifact passed between CI jobs may be truncated or stale); a JobError names the path.

    A path is an image directory (``farm build``'s, or a system image's with its manifest.json) or a
    system image's file (a lab's ``loader.img``, farm.images.system), for setups of the flow system;
    ``kinds``: the kinds of image the pipeline's setups boot (a given image of another kind is refused);
    ``load_addr``: a raw binary's load address (the setups' flows', :func:`given_load_addr`)."""
    from ..images.image import LINUX, SYSTEM

    given: dict[tuple[str, str], Image] = {}
    for path in paths:
        if Path(path).is_file():
            from ..images.system import system_image

            try:
                image = system_image(path, arch=next(iter(arches)) if len(arches) == 1 else None, load_addr=load_addr)
            except JobError as exc:
                raise JobError(f"--image {exc}") from None
        else:
            image = load_image(path)
        try:
            image = attrs.evolve(verify_artifacts(image), cached=True)
        except JobError as exc:
            raise JobError(f"--image {exc}") from None
        if image.kind == SYSTEM:
            from ..images.system import content_keyed

            image = content_keyed(image)  # a lab's directory whose manifest wrote no key
        key = (image.arch, image.kind)
        if key in given:
            what = f"{image.arch} image" if image.kind == LINUX else f"{image.arch} {image.kind} image"
            raise JobError(f"--image {path}: a second {what} (first: {given[key].path})")
        if image.arch not in arches:
            raise JobError(f"--image {path}: is {image.arch}, but the run's targets are {', '.join(sorted(arches))}")
        if kinds is not None and image.kind not in kinds:
            what = {SYSTEM: "a system image (booted by setups of the flow system)",
                    LINUX: "a Linux image (kernel + initrd)"}.get(image.kind, f"a {image.kind} image")
            raise JobError(f"--image {path}: {what}, and no setup of the pipeline boots one")
        given[key] = image
    return given


def resumed_work(run: RunDir) -> frozenset[tuple[str, str]]:
    """What a resumed run need not do again: the (label, benchmark) pairs that passed there."""
    return frozenset((s.label, s.benchmark) for s in run.passed() if s.label and s.benchmark)


def _json_params(params: Any) -> dict[str, Any]:
    """A benchmark's typed params as run.json records them (every field, its defaults too)."""
    if not attrs.has(type(params)):
        return {}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in attrs.asdict(params, recurse=False).items()}


def run_seed(pipeline: Pipeline, given: int | None = None) -> int | None:
    """The seed of a new run's boot order: ``given`` (farm reproduce: the original run's), else the
    pipeline's, else (shuffled) one drawn now."""
    from .experiment import SHUFFLED, draw_seed

    if pipeline.experiment.order != SHUFFLED:
        return None
    for seed in (given, pipeline.experiment.seed):
        if seed is not None:
            return seed
    return draw_seed()


def recorded_seed(run_dir: Path) -> int | None:
    """The seed run.json recorded (a resumed run keeps its order)."""
    try:
        seed = RunInfo.read(run_dir / "run.json").experiment.get("seed")
    except JobError:
        return None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def _reopen(path: Path, pipeline: Pipeline, envs: list[EnvFile], seed: int | None) -> RunDir:
    """--resume: keep the benchmarks that passed, and the boots whose benchmarks all passed."""
    plans = plan_boots(pipeline, envs, seed)

    def keep(info: RunInfo) -> Callable[[Stage], bool]:
        passed = {(s.label, s.benchmark) for s in info.stages if s.case.kind == "pass"}
        done_boots = {p.label for p in plans
                      if all((lb, b.name) in passed for b in pipeline.benchmarks for lb in p.bench_labels)}
        return lambda s: s.case.kind == "pass" and bool(s.label) and (
            s.benchmark is not None or (s.case.classname == "farm.boot" and s.label in done_boots))
    return reopen_run(path, pipeline, keep)


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


def drives_load_generators(pipeline: Pipeline) -> bool:
    """Whether a benchmark of ``pipeline`` sends its load from a load generator (a sweep whose
    ``generator`` is not the lab host): its farm place is then taken with its load clients."""
    from ..bench.loadgen import HOST

    return any(getattr(b.params, "generator", HOST) != HOST for b in pipeline.benchmarks)


@contextlib.contextmanager
def _place(runner: Runner, farm: FarmRequest | None) -> Iterator[None]:
    """With ``--farm``: reserve, wait for, lock a place for the boots, and always give it back
    (powered off) however the run ends. Images are built before, so a build never holds a board."""
    if farm is None:
        yield
        return
    from ..places import acquired_place

    hooks = runner.hooks
    tags = " ".join(f"{k}={v}" for k, v in farm.tags.items())
    with contextlib.ExitStack() as stack:
        lease = runner.stage(f"reserve {tags}", "farm.place", lambda: stack.enter_context(acquired_place(
            farm.tags, timeout=farm.timeout, coordinator=farm.coordinator, job=runner.run.run_id,
            on_wait=lambda text: hooks.say(text=text), healthy_only=not farm.health_check, prio=farm.prio,
            loadgens=drives_load_generators(runner.pipeline))))
        hooks.place_taken(place={"name": lease.place, "coordinator": lease.coordinator, "owner": lease.owner,
                                 "tags": dict(lease.tags), "health_check": farm.health_check, "prio": farm.prio,
                                 "loadgens": {name: place for name, place, _ in getattr(lease, "loadgens", ())}})
        hooks.say(text=f"on place {lease.place} ({lease.coordinator})")
        guard = PlaceGuard(lease, hooks)
        hooks.add(guard)
        try:
            yield
        finally:
            hooks.remove(guard)


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


def run_pipeline(pipeline_path: str | Path, *, out: Path | None = None, env_override: list[Path] | None = None,
                 extra_bootargs: list[str] | None = None, farm: FarmRequest | None = None,
                 resume: Path | None = None, progress: object | None = None, force: bool = False,
                 image_dirs: list[Path] | None = None, flow_for: Callable[[Setup], BootFlow] | None = None,
                 listeners: list[object] | None = None, registry: Mapping[str, Any] | None = None,
                 images: Mapping[tuple[str, str], Image] | None = None, seed: int | None = None) -> Run:
    """Carry out a pipeline file. ``flow_for``: the boot flow of a setup (default: the one its pipeline
    file chose, farm.flows); ``listeners``: more hooks
    (farm.run.events), besides the run directory, ``progress`` and farm's and the lab's listeners
    (the results store, the archive, entry points); ``registry``: the benchmarks (default: the registered
    ones, farm's and the lab's plugins', farm.bench.registry); ``images``: (architecture, setup) -> the image to boot as it is, nothing
    built (``farm reproduce``: the original run's, from the archive); ``seed``: a shuffled boot
    order's seed instead of the pipeline's or a drawn one (``farm reproduce``: the original's, so its
    boots run in the same order)."""
    pipeline = load_pipeline(pipeline_path, registry)
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
        run = _reopen(resume, pipeline, env_files, seed)
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
            with _place(runner, farm):
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
