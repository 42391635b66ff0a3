"""A pipeline file (``pipelines/*.yaml``) and the run that carries it out, stage by stage.

    build image -> for each target x setup x repeat: boot -> benchmarks -> power off -> publish

Everything measured is appended to ``results.csv`` as soon as a benchmark finishes, ``run.json`` and
``junit.xml`` are rewritten after every stage, and the console log is written as it arrives: a run
that fails or is interrupted keeps all it had.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import secrets
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import attrs

from . import __version__
from .bench import BenchmarkError
from .bench.context import BenchContext
from .bench.registry import BENCHMARKS
from .boot.console_log import ConsoleLog
from .boot.facts import TargetFacts, pin_frequency_command, read_facts
from .boot.session import EnvFile, boot_target
from .config import Node, field, load_json, load_yaml, reject_unknown, require, string_list
from .errors import (EXIT_INFRA_ERROR, EXIT_JOB_ERROR, EXIT_OK, EXIT_TEST_FAILURE, FarmError,
                     InfrastructureError, JobError, TestFailure)
from .images.build import Image, build, load_image
from .images.recipe import ARCHES
from .results.csvout import append_records, read_records, write_records
from .results.cycles import cycles_per_byte
from .results.junit import Case, write_junit
from .results.outdir import RUN_HINT, check_run_entries, prepare_out_dir
from .results.record import Measurement, RunContext, now_iso, to_json, write_text_atomic
from .secrets import mask
from .values import bootarg_problem, name_problem, number_problem

#: bounds of a pipeline's own numbers, checked when the file is read
MAX_REPEATS = 1000
MAX_BOOT_ATTEMPTS = 20
MAX_FREQUENCY_HZ = 10e9  # 10 GHz: a CPU frequency beyond that is a typo
#: a run.json farm wrote holds every stage's output and image manifest: far more than a recipe
MAX_RUN_JSON_BYTES = 64 << 20


@attrs.frozen
class Benchmark:
    name: str
    params: dict[str, Any]


@attrs.frozen
class Setup:
    """A way of booting the targets: kernel arguments (``maxcpus=1``) and/or another image."""

    name: str
    bootargs: tuple[str, ...] = ()
    image: Path | None = None
    cpu_frequency_khz: int | None = None  # pinned through cpufreq after boot, where the board has it


ANY_ARCH = "*"


@attrs.frozen
class Pipeline:
    name: str
    source: Path
    images: dict[str, Path]  # arch -> recipe; ANY_ARCH when one recipe serves every target
    envs: tuple[Path, ...]
    setups: tuple[Setup, ...]
    benchmarks: tuple[Benchmark, ...]
    repeats: int
    cpu_frequency_hz: float | None = None
    boot_attempts: int = 2
    repeats_in_boot: int = 1  # each benchmark run this often per boot; record repeat = boot repeat * N + i

    def recipe_for(self, arch: str, setup: Setup) -> Path:
        if setup.image is not None:
            return setup.image
        if arch in self.images:
            return self.images[arch]
        if ANY_ARCH in self.images:
            return self.images[ANY_ARCH]
        raise JobError(f"{self.source}: images: no image for architecture {arch} (have: {', '.join(self.images)})")


def _relative(node: Node, key: str, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else Path(node.file).parent / path


def _name(node: Node, key: str, value: str, what: str) -> str:
    """A name that becomes part of paths, job ids and TFTP folders (farm.values.NAME)."""
    if (problem := name_problem(value, what)):
        raise node.error(key, problem)
    return value


def load_pipeline(path: str | Path) -> Pipeline:
    doc = load_yaml(path, "pipeline file")
    reject_unknown(doc, {"name", "description", "image", "images", "targets", "setups", "benchmarks", "repeats",
                         "repeats_in_boot", "cpu_frequency_hz", "boot_attempts"})
    name = _name(doc, "name", require(doc, "name", str), "pipeline name")
    field(doc, "description", str, "")
    if ("image" in doc) == ("images" in doc):
        raise doc.error(None, "give either 'image' (one recipe) or 'images' (a recipe per architecture)")
    if "image" in doc:
        images = {ANY_ARCH: _relative(doc, "image", require(doc, "image", str))}
    else:
        per_arch = require(doc, "images", Node)
        reject_unknown(per_arch, ARCHES)
        images = {arch: _relative(per_arch, arch, require(per_arch, arch, str)) for arch in per_arch}
    targets = require(doc, "targets", list)
    envs = []
    for i, item in enumerate(targets):
        if not isinstance(item, Node):
            raise doc.error("targets", f"item {i} must be a mapping like {{env: ../env/x.yaml}}")
        reject_unknown(item, {"env"})
        envs.append(_relative(item, "env", require(item, "env", str)))
    if not envs:
        raise doc.error("targets", "at least one target is needed")
    setups = []
    for i, item in enumerate(field(doc, "setups", list, None) or [Node(name="default")]):
        if not isinstance(item, Node):
            raise doc.error("setups", f"item {i} must be a mapping with a name")
        if not hasattr(item, "key_lines"):
            item.key_lines, item.file, item.path = {}, str(path), f"setups[{i}]"
        reject_unknown(item, {"name", "bootargs", "image", "cpu_frequency_khz"})
        setup_image = field(item, "image", str, None)
        khz = field(item, "cpu_frequency_khz", int, None)
        if khz is not None and (problem := number_problem(khz, 0, MAX_FREQUENCY_HZ / 1e3, whole=True, low_open=True,
                                                          unit="kHz")):
            raise item.error("cpu_frequency_khz", problem)
        setup_name = _name(item, "name", require(item, "name", str), "setup name")
        if (first := next((j for j, s in enumerate(setups) if s.name == setup_name), None)) is not None:
            raise item.error("name", f"{setup_name!r} is already the name of setups[{first}]: results are "
                             "keyed by setup name, two setups of one name would be pooled into one median")
        setups.append(Setup(setup_name, tuple(string_list(item, "bootargs", check=bootarg_problem)),
                            _relative(item, "image", setup_image) if setup_image else None, khz))
    benchmarks = []
    for i, item in enumerate(require(doc, "benchmarks", list)):
        if not isinstance(item, Node) or len(item) != 1:
            raise doc.error("benchmarks", f"item {i} must be one 'name: {{params}}' pair, e.g. 'iperf3: {{duration: 3}}'")
        bench_name, params = next(iter(item.items()))
        if bench_name not in BENCHMARKS:
            raise item.error(bench_name, f"unknown benchmark (known: {', '.join(sorted(BENCHMARKS))})")
        params = params or Node()
        if not isinstance(params, Node):
            raise item.error(bench_name, "parameters must be a mapping")
        if not hasattr(params, "key_lines"):
            params.key_lines, params.file, params.path = {}, str(path), f"benchmarks[{i}].{bench_name}"
        spec = BENCHMARKS[bench_name]
        reject_unknown(params, spec.params)
        for key, kind in spec.params.items():
            field(params, key, kind, None)
        try:
            spec.check(params)  # every value checked now, not after a board was booted
        except JobError as exc:
            raise item.error(bench_name, str(exc)) from None
        benchmarks.append(Benchmark(bench_name, dict(params)))
    repeats = field(doc, "repeats", int, 1)
    if not 1 <= repeats <= MAX_REPEATS:
        raise doc.error("repeats", f"must be 1-{MAX_REPEATS}")
    repeats_in_boot = field(doc, "repeats_in_boot", int, 1)
    if not 1 <= repeats_in_boot <= MAX_REPEATS:
        raise doc.error("repeats_in_boot", f"must be 1-{MAX_REPEATS}")
    frequency = field(doc, "cpu_frequency_hz", float, None)
    if frequency is not None and (problem := number_problem(frequency, 0, MAX_FREQUENCY_HZ, low_open=True, unit="Hz")):
        raise doc.error("cpu_frequency_hz", problem)
    boot_attempts = field(doc, "boot_attempts", int, 2)
    if not 1 <= boot_attempts <= MAX_BOOT_ATTEMPTS:
        raise doc.error("boot_attempts", f"must be 1-{MAX_BOOT_ATTEMPTS} (1: never retry a failed boot)")
    return Pipeline(name=name, source=Path(path), images=images, envs=tuple(envs), setups=tuple(setups),
                    benchmarks=tuple(benchmarks), repeats=repeats, cpu_frequency_hz=frequency,
                    boot_attempts=boot_attempts, repeats_in_boot=repeats_in_boot)


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def git_sha(where: Path) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() or None


class Progress:
    """One line per stage on stderr: what runs, where, and how long it took."""

    def __init__(self, stream=sys.stderr):
        self.stream, self.t0 = stream, time.monotonic()

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.t0:7.1f}s] {mask(text)}", file=self.stream, flush=True)


@attrs.define
class RunDir:
    """A run directory and everything written into it, kept on disk at every step."""

    path: Path
    run_id: str
    info: dict[str, Any]
    cases: list[Case] = attrs.field(factory=list)
    status: int = EXIT_OK
    #: called before every boot and benchmark; raises InfrastructureError when the run may not go on
    #: (with --farm: the place's lock was lost, e.g. the coordinator restarted)
    guard: Callable[[], None] = lambda: None
    #: with --farm: the PlaceLease of the place the boots run on (its health is recorded per boot)
    lease: Any = None

    @property
    def results_csv(self) -> Path:
        return self.path / "results.csv"

    def fail(self, exc: FarmError) -> None:
        self.status = max(self.status, exc.exit_code, key=_severity)

    #: testcases of a resumed run that passed there: not done again
    done: frozenset[str] = frozenset()

    def case(self, case: Case) -> None:
        case = attrs.evolve(case, message=mask(case.message), output=mask(case.output))
        self.cases.append(case)
        self.info.setdefault("stages", []).append(attrs.asdict(case))
        self.save()

    def begin(self, stage: str) -> None:
        """Say which stage runs now (run.json), so a run that dies says where it stopped."""
        self.info["current_stage"] = stage
        self.save()

    def add_boot(self, env: EnvFile, boot: dict[str, Any]) -> None:
        """What one boot of a target was (or why it failed), in run.json."""
        target = self.info["targets"].setdefault(env.target_name, {"env": str(env.path), "arch": env.arch, "boots": []})
        target["boots"].append(boot)
        self.save()

    def save(self) -> None:
        write_junit(self.path / "junit.xml", f"farm.{self.info['pipeline_name']}", self.cases)
        write_text_atomic(self.path / "run.json", mask(to_json(self.info)) + "\n")


def _severity(code: int) -> int:
    return {EXIT_OK: 0, EXIT_TEST_FAILURE: 1, EXIT_INFRA_ERROR: 2, EXIT_JOB_ERROR: 3}.get(code, 4)


@attrs.frozen
class FarmRequest:
    """``farm run --farm TAG=VAL...``: take a place of the farm for the run's boots."""

    tags: dict[str, str]
    timeout: float = 3600.0
    coordinator: str | None = None
    #: a health check: may take a place tagged unhealthy (farm_health), which a passing boot puts back
    health_check: bool = False


def farm_env(pipeline: Pipeline, request: FarmRequest) -> Path:
    """The env file of a farm place: ``env/<board>.yaml`` beside the pipeline's own env files."""
    board = request.tags.get("board")
    if board is None:
        raise JobError("--farm: name the board (board=maaxboard) or give the place's env file with --env")
    path = pipeline.envs[0].parent / f"{board}.yaml"
    if not path.exists():
        raise JobError(f"--farm board={board}: no env file {path} (give one with --env)")
    return path


def _label(env: EnvFile, setup: Setup, repeat: int, pipeline: Pipeline) -> str:
    return f"{env.target_name}/{setup.name}" + (f"/{repeat}" if pipeline.repeats > 1 else "")


def _bench_case_name(bench: Benchmark, label: str) -> str:
    return f"{BENCHMARKS[bench.name].suite}.{bench.name} {label}"


def _in_boot_labels(label: str, pipeline: Pipeline) -> list[str]:
    """The labels of a boot's benchmark runs: ``label``, or ``label#i`` per repeat in the boot."""
    n = pipeline.repeats_in_boot
    return [f"{label}#{i}" for i in range(n)] if n > 1 else [label]


def _resume(run_dir: Path, pipeline: Pipeline, env_files: list[EnvFile]) -> RunDir:
    """Reopen a run directory to finish it: benchmarks that passed there are kept (their records
    and testcases) and not measured again; boots whose benchmarks all passed are not booted again.
    Everything else runs anew; the rows of failed benchmarks are dropped first."""
    check_run_entries(run_dir)
    info = _resume_info(run_dir)
    if info.get("pipeline_sha256") != _sha256(pipeline.source):
        raise JobError(f"{run_dir}: cannot resume: run with another version of {pipeline.source} "
                       "(its sha256 differs); start a new run")
    passed = {c["name"] for c in info.get("stages", []) if c["kind"] == "pass"}
    labels_done = {_label(e, s, r, pipeline) for e in env_files for s in pipeline.setups for r in range(pipeline.repeats)
                   if all(_bench_case_name(b, lb) in passed for b in pipeline.benchmarks
                          for lb in _in_boot_labels(_label(e, s, r, pipeline), pipeline))}
    keep = [Case(**c) for c in info.get("stages", []) if c["kind"] == "pass" and (
        c["classname"].startswith("farm.bench") or (c["classname"] == "farm.boot" and c["name"][5:] in labels_done))]
    info.update(status="running", finished=None, stopped_at=None, stages=[attrs.asdict(c) for c in keep],
                resumed=[*info.get("resumed", []), now_iso()])
    run = RunDir(run_dir, info["run_id"], info, cases=keep, done=frozenset(c.name for c in keep))
    if run.results_csv.exists():
        write_records(run.results_csv, [r for r in read_records(run.results_csv) if r.metric != "failed"])
    run.save()
    return run


def _resume_info(run_dir: Path) -> dict[str, Any]:
    """A run directory's run.json, checked for what resuming reads: its run id and its stages."""
    if not run_dir.is_dir():
        raise JobError(f"--resume {run_dir}: not a run directory")
    path = run_dir / "run.json"
    try:
        info = load_json(path, "run.json", limit=MAX_RUN_JSON_BYTES)
    except JobError as exc:
        raise JobError(f"{exc} (cannot resume this run)") from None
    if name_problem(info.get("run_id"), "run id"):
        raise JobError(f"{path}: cannot resume this run: run_id: {name_problem(info.get('run_id'), 'run id')}")
    stages = info.get("stages", [])
    if not isinstance(stages, list):
        raise JobError(f"{path}: cannot resume this run: stages: expected a list, got {type(stages).__name__}")
    for i, stage in enumerate(stages):
        try:
            case = Case(**stage)
            ok = all(isinstance(getattr(case, f), str) for f in ("name", "classname", "kind", "message", "output"))
            ok = ok and isinstance(case.seconds, (int, float)) and not isinstance(case.seconds, bool)
        except (TypeError, ValueError):  # not a mapping, unknown or missing fields, an unknown kind
            ok = False
        if not ok:
            raise JobError(f"{path}: cannot resume this run: stages[{i}]: expected a testcase (name, classname, "
                           f"seconds, kind, ...), got {str(stage)[:80]}")
    return info


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _new_run(pipeline: Pipeline, envs: tuple[Path, ...], out: Path | None, force: bool = False) -> RunDir:
    """A new run in ``out`` (default ``results/<run-id>``), which must be new or empty: a directory
    holding anything is refused, or with ``force`` its old content moved aside (farm.results.outdir)."""
    run_id = new_run_id()
    prepared = prepare_out_dir(out or Path("results") / run_id, force=force, hint=RUN_HINT)
    path = prepared.path
    run = RunDir(path, run_id, {
        "run_id": run_id, "pipeline": str(pipeline.source), "pipeline_name": pipeline.name,
        "who": os.environ.get("GITLAB_USER_LOGIN") or os.environ.get("GITHUB_ACTOR") or getpass.getuser(),
        "started": now_iso(), "finished": None, "status": "running",
        "farm_version": __version__, "git_sha": git_sha(Path.cwd()) or git_sha(Path(__file__).parent),
        "ci_job": os.environ.get("CI_JOB_ID") or os.environ.get("GITHUB_RUN_ID"),
        "envs": [str(e) for e in envs], "images": {}, "targets": {}, "place": None,
        "setups": {s.name: {"bootargs": list(s.bootargs), "image": str(s.image) if s.image else None,
                            "cpu_frequency_khz": s.cpu_frequency_khz} for s in pipeline.setups},
        "pipeline_sha256": _sha256(pipeline.source), "repeats_in_boot": pipeline.repeats_in_boot,
    })
    if prepared.moved_to is not None:
        run.info["replaced"] = str(prepared.moved_to)  # where the directory's old content went
    run.save()
    return run


def run_pipeline(pipeline_path: str | Path, *, out: Path | None = None, env_override: list[Path] | None = None,
                 extra_bootargs: list[str] | None = None, farm: FarmRequest | None = None,
                 resume: Path | None = None, progress: Progress | None = None, force: bool = False,
                 image_dirs: list[Path] | None = None) -> RunDir:
    pipeline = load_pipeline(pipeline_path)
    if extra_bootargs:
        pipeline = attrs.evolve(pipeline, setups=tuple(attrs.evolve(s, bootargs=(*s.bootargs, *extra_bootargs))
                                                       for s in pipeline.setups))
    envs = tuple(env_override) if env_override else pipeline.envs
    if farm is not None:
        envs = envs[:1] if env_override else (farm_env(pipeline, farm),)
    env_files = [EnvFile.load(e) for e in envs]  # bad env files fail now, before anything is built
    given = given_images(image_dirs or [], {e.arch for e in env_files})  # --image: built already, verified now
    progress = progress or Progress()
    if resume is not None:
        run = _resume(resume, pipeline, env_files)
        progress.say(f"resume run {run.run_id} in {resume}: {len(run.done)} stages done")
    else:
        run = _new_run(pipeline, envs, out, force)
        if run.info.get("replaced"):
            progress.say(f"--force: the old content of {run.path} moved to {run.info['replaced']}")
        progress.say(f"run {run.run_id} -> {run.path}")
    path = run.path
    stopped_by: FarmError | None = None
    with ConsoleLog(path / "console") as console:
        try:
            images: dict[Path, Image] = {}

            def key(env: EnvFile, setup: Setup) -> Path:  # a setup's own image is built even with --image
                return Path(f"--image {env.arch}") if setup.image is None and env.arch in given \
                    else pipeline.recipe_for(env.arch, setup)

            recipes = list(dict.fromkeys(key(e, s) for e in env_files for s in pipeline.setups))
            for recipe in recipes:
                name = "build" if len(recipes) == 1 else f"build {recipe.stem}"
                if str(recipe).startswith("--image "):
                    arch = str(recipe).split()[-1]
                    progress.say(f"build: --image {given[arch].path} ({given[arch].name}, {arch}): not rebuilt")
                    images[recipe] = _stage(run, progress, name, "farm.build", lambda a=arch: given[a])
                else:
                    images[recipe] = _stage(run, progress, name, "farm.build", lambda r=recipe: build(r))
                run.info["images"][images[recipe].name] = {"dir": str(images[recipe].path), **images[recipe].manifest,
                                                           **({"given": True} if str(recipe).startswith("--image ") else {})}
            with _place(run, progress, farm):
                for env in env_files:
                    for setup in pipeline.setups:
                        for repeat in range(pipeline.repeats):
                            image = images[key(env, setup)]
                            _boot_and_bench(run, progress, pipeline, env, setup, repeat, image, console)
        except FarmError as exc:
            run.fail(exc)
            stopped_by = exc
            progress.say(f"stopped: {exc}")
        except KeyboardInterrupt:
            run.info["status"] = "interrupted"
            run.case(Case("interrupted", "farm.run", 0.0, "error",
                          f"interrupted (Ctrl-C or SIGTERM) during {run.info.get('current_stage')}; board powered off"))
            raise
        except Exception as exc:  # a defect of farm's: the run failed, and its junit.xml says so too
            stopped_by = InfrastructureError(f"{type(exc).__name__}: {exc}")
            run.fail(stopped_by)
            raise
        finally:
            _never_green(run, stopped_by)
            run.info["finished"] = now_iso()
            if run.status != EXIT_OK or run.info["status"] == "interrupted":
                run.info["stopped_at"] = run.info.get("current_stage")
            if run.info["status"] == "running":
                run.info["status"] = {EXIT_OK: "passed", EXIT_TEST_FAILURE: "failed",
                                      EXIT_INFRA_ERROR: "infrastructure-error", EXIT_JOB_ERROR: "job-error"}[run.status]
            run.save()
            _publish(run, progress)
    return run


def _never_green(run: RunDir, stopped_by: FarmError | None) -> None:
    """A run that failed is never green in junit.xml: it has a testcase of its exit class (a test
    failure a ``failure``, a job or infrastructure error an ``error``). The stages record theirs; an
    error raised outside any stage's testcase gets one here, named by the stage it stopped in."""
    if run.status == EXIT_OK:
        return
    kind = "failure" if run.status == EXIT_TEST_FAILURE else "error"
    if any(c.kind == kind for c in run.cases):
        return
    stage = run.info.get("current_stage") or "run"
    message = str(stopped_by) if stopped_by is not None else f"the run failed during {stage}"
    run.case(Case(stage, "farm.run", 0.0, kind, message.splitlines()[0], message))


@contextlib.contextmanager
def _place(run: RunDir, progress: Progress, farm: FarmRequest | None) -> Iterator[None]:
    """With ``--farm``: reserve, wait for, lock a place for the boots, and always give it back
    (powered off) however the run ends. Images are built before, so a build never holds a board."""
    if farm is None:
        yield
        return
    from .places import acquired_place

    tags = " ".join(f"{k}={v}" for k, v in farm.tags.items())
    with contextlib.ExitStack() as stack:
        lease = _stage(run, progress, f"reserve {tags}", "farm.place", lambda: stack.enter_context(acquired_place(
            farm.tags, timeout=farm.timeout, coordinator=farm.coordinator, job=run.run_id, on_wait=progress.say,
            healthy_only=not farm.health_check)))
        run.info["place"] = {"name": lease.place, "coordinator": lease.coordinator, "owner": lease.owner,
                             "tags": dict(lease.tags), "health_check": farm.health_check}
        run.save()
        progress.say(f"on place {lease.place} ({lease.coordinator})")
        from .places import check_still_held

        run.guard = lambda: check_still_held(lease)
        run.lease = lease
        try:
            yield
        finally:
            run.guard = lambda: None
            run.lease = None


def _publish(run: RunDir, progress: Progress) -> None:
    """Wide CSVs, plots, summary.md, metrics.txt; a failure here is reported, never loses the run."""
    from .results.publish import publish

    t0 = time.monotonic()
    try:
        report = publish(run.path)
    except Exception as exc:  # noqa: BLE001 - publishing must not hide what was measured
        run.case(Case("publish", "farm.publish", time.monotonic() - t0, "error", f"{type(exc).__name__}: {exc}"))
        progress.say(f"publish ERROR: {exc}")
        return
    run.case(Case("publish", "farm.publish", time.monotonic() - t0, "pass"))
    progress.say(f"publish ok: {report.summary.name}, {report.metrics.name}"
                 + (f", {len(report.plots)} plot(s)" if report.plots else ""))
    with contextlib.suppress(Exception):  # summary.md again, now counting publish; the job summary once
        from .results.report import write_summary

        write_summary(run.path, step_summary=os.environ.get("GITHUB_STEP_SUMMARY") or None)


def given_images(dirs: list[Path], arches: set[str]) -> dict[str, Image]:
    """``--image DIR``: built images by architecture, each artifact's sha256 checked against its manifest
    (an artifact passed between CI jobs may be truncated or stale); a JobError names the directory."""
    given: dict[str, Image] = {}
    for path in dirs:
        image = attrs.evolve(load_image(path), cached=True)
        for name, meta in image.manifest["artifacts"].items():
            if "sha256" in meta and _sha256(image.path / name) != meta["sha256"]:
                raise JobError(f"--image {path}: {name} does not match the sha256 in manifest.json (damaged or "
                               "replaced): build it again")
        if image.arch in given:
            raise JobError(f"--image {path}: a second {image.arch} image (first: {given[image.arch].path})")
        if image.arch not in arches:
            raise JobError(f"--image {path}: is {image.arch}, but the run's targets are {', '.join(sorted(arches))}")
        given[image.arch] = image
    return given


def _stage(run: RunDir, progress: Progress, name: str, classname: str, action: Callable[[], Any]) -> Any:
    """Run one stage as a junit testcase; a FarmError is recorded (error/failure) and re-raised."""
    run.begin(name)
    progress.say(f"{name} ...")
    t0 = time.monotonic()
    try:
        result = action()
    except FarmError as exc:
        seconds = time.monotonic() - t0
        kind = "failure" if exc.kind == "test" else "error"
        run.case(Case(name, classname, seconds, kind, str(exc).splitlines()[0], str(exc)))
        progress.say(f"{name} {kind.upper()} after {seconds:.1f}s: {str(exc).splitlines()[0]}")
        raise
    seconds = time.monotonic() - t0
    cached = " (cached)" if isinstance(result, Image) and result.cached else ""
    run.case(Case(name, classname, seconds, "pass"))
    progress.say(f"{name} ok in {seconds:.1f}s{cached}")
    return result


def _boot_and_bench(run: RunDir, progress: Progress, pipeline: Pipeline, env: EnvFile, setup: Setup,
                    repeat: int, image: Image, console: ConsoleLog) -> None:
    label = _label(env, setup, repeat, pipeline)
    if run.done and all(_bench_case_name(b, lb) in run.done for b in pipeline.benchmarks
                        for lb in _in_boot_labels(label, pipeline)):
        progress.say(f"boot {label}: done in the resumed run, skipped")
        return
    job = f"{run.run_id}-{env.target_name}-{setup.name}-{repeat}"
    t0 = time.monotonic()
    booted_ok = False
    guarded = False  # past the lock check: a failure from here on is the place's (its health record)
    run.begin(f"boot {label}")
    progress.say(f"boot {label} ({env.path}) ...")
    try:
        run.guard()
        guarded = True
        with boot_target(env, image, job, console, list(setup.bootargs), attempts=pipeline.boot_attempts) as booted:
            if setup.cpu_frequency_khz:
                _pin_frequency(booted, setup.cpu_frequency_khz)
            facts = read_facts(booted.shell)
            frequency, source = cpu_frequency(facts, pipeline, env)
            run.add_boot(env, {"setup": setup.name, "repeat": repeat, "image": image.name,
                               "image_key": image.manifest["key"], "boot_seconds": round(booted.boot_seconds, 3),
                               "failed_attempts": booted.failed_attempts, "retyped": booted.retyped,
                               **facts.as_dict(),
                               "frequency_hz": frequency, "frequency_source": source})
            run.case(Case(f"boot {label}", "farm.boot", time.monotonic() - t0, "pass",
                          output="\n".join([*(f"retried after {f}" for f in booted.failed_attempts),
                                             *(f"retyped (echo differed): {line}" for line in booted.retyped)])))
            booted_ok = True
            progress.say(f"boot {label} ok in {booted.boot_seconds:.1f}s: {facts.cpus} cpus, "
                         f"{facts.kernel}, address {facts.address or '-'}")
            _record_health(run, progress, infrastructure_failure=False)
            ctx = BenchContext(booted, facts, progress.say)
            n = pipeline.repeats_in_boot
            for bench in pipeline.benchmarks:
                for i, in_boot in enumerate(_in_boot_labels(label, pipeline)):  # records: repeat * n + i
                    _run_benchmark(run, progress, ctx, bench, frequency, RunContext(
                        run_id=run.run_id, target=env.target_name, arch=env.arch, setup=setup.name,
                        image=image.name, suite=BENCHMARKS[bench.name].suite, repeat=repeat * n + i), in_boot)
    except JobError as exc:
        if not booted_ok:  # bad input found only at boot (e.g. a value U-Boot refuses): the boot's case says so
            run.case(Case(f"boot {label}", "farm.boot", time.monotonic() - t0, "error", str(exc).splitlines()[0],
                          str(exc)))
        raise
    except Exception as exc:
        # the lab failed (error), or the image did not boot (failure): either way the next target
        # or setup still runs, and what this boot measured before is already in results.csv
        if not isinstance(exc, FarmError):
            exc = InfrastructureError(f"{env.target_name}: {type(exc).__name__}: {exc}")
        run.fail(exc)
        if booted_ok:  # a benchmark's case already says what happened
            return
        if guarded and exc.kind == "infrastructure":
            _record_health(run, progress, infrastructure_failure=True)
        kind = "failure" if exc.kind == "test" else "error"
        attempts = getattr(exc, "failed_attempts", [])
        run.case(Case(f"boot {label}", "farm.boot", time.monotonic() - t0, kind, str(exc).splitlines()[0],
                      "\n".join([*attempts, str(exc)])))
        run.add_boot(env, {"setup": setup.name, "repeat": repeat, "image": image.name,
                           "failed": str(exc).splitlines()[0], "failed_attempts": attempts})
        progress.say(f"boot {label} {kind.upper()}: {exc}")


def _record_health(run: RunDir, progress: Progress, *, infrastructure_failure: bool) -> None:
    """With --farm: a boot's outcome on the place's health record (farm.places.record_boot_result).
    Best effort: a coordinator that cannot be reached here does not fail the run."""
    if run.lease is None:
        return
    from .places import DEFAULT_UNHEALTHY_AFTER, UNHEALTHY, record_boot_result

    try:
        state = record_boot_result(run.lease, infrastructure_failure)
    except FarmError as exc:
        progress.say(f"place {run.lease.place}: health not recorded: {exc}")
        return
    if state is None:
        return
    run.info["place"]["health"] = state
    run.save()
    if state == UNHEALTHY:
        progress.say(f"place {run.lease.place} is now unhealthy ({DEFAULT_UNHEALTHY_AFTER} infrastructure failures "
                     f"in a row): reservations skip it until `farm health check {run.lease.place}` passes")
    else:
        progress.say(f"place {run.lease.place} is healthy again")


def _pin_frequency(booted, khz: int) -> None:
    """The setup's CPU frequency, through cpufreq; a board without it cannot run this setup."""
    output, _, code = booted.shell.run(pin_frequency_command(khz), timeout=30)
    if code != 0:
        why = {3: "it has no cpufreq", 4: "cpufreq refused the value"}.get(code, " | ".join(output[-3:]))
        raise TestFailure(f"{booted.name}: cannot pin the CPUs to {khz} kHz: {why}")


def _params_text(params: dict[str, Any]) -> dict[str, str]:
    return {k: ",".join(map(str, v)) if isinstance(v, list) else str(v) for k, v in params.items()}


def cpu_frequency(facts: TargetFacts, pipeline: Pipeline, env: EnvFile) -> tuple[float | None, str]:
    """The target's CPU frequency and where it came from: the target itself (cpufreq, cpuinfo),
    else the pipeline's ``cpu_frequency_hz``, else the env file's option of that name."""
    if facts.frequency_hz:
        return facts.frequency_hz, facts.frequency_source
    if pipeline.cpu_frequency_hz:
        return pipeline.cpu_frequency_hz, "pipeline"
    value = env.options.get("cpu_frequency_hz")
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise JobError(f"{env.path}: options.cpu_frequency_hz: {value!r} is not a positive number of Hz")
        return float(value), "env"
    return None, "unknown"


#: suites whose throughput records also get cycles/byte (the cost of the function per byte)
CYCLES_SUITES = ("crypto", "storage")


def _run_benchmark(run: RunDir, progress: Progress, ctx: BenchContext, bench: Benchmark,
                   frequency: float | None, rc: RunContext, label: str) -> None:
    spec = BENCHMARKS[bench.name]
    name = _bench_case_name(bench, label)
    if name in run.done:
        progress.say(f"{name}: done in the resumed run, skipped")
        return
    run.begin(name)
    progress.say(f"{name} ...")
    t0 = time.monotonic()
    try:
        run.guard()
        measurements = spec.run(ctx, bench.params)
    except BenchmarkError as exc:
        # a row in results.csv too (metric "failed"), so a failure shows where the numbers are read
        append_records(run.results_csv, [rc.record(Measurement(bench.name, "failed", 1.0, "count", _params_text(bench.params)))])
        run.info.setdefault("failures", []).append({"target": rc.target, "setup": rc.setup, "repeat": rc.repeat,
                                                    "benchmark": bench.name, "message": str(exc)})
        run.case(Case(name, f"farm.bench.{spec.suite}", time.monotonic() - t0, "failure", str(exc)))
        run.fail(exc)
        progress.say(f"{name} FAILED: {exc}")
        return
    except JobError as exc:
        run.case(Case(name, f"farm.bench.{spec.suite}", time.monotonic() - t0, "error", str(exc).splitlines()[0],
                      str(exc)))
        raise
    except Exception as exc:  # the board or its console went away mid-benchmark: the boot is over
        if not isinstance(exc, FarmError):
            exc = InfrastructureError(f"{name}: {type(exc).__name__}: {exc}")
        kind = "failure" if exc.kind == "test" else "error"
        run.case(Case(name, f"farm.bench.{spec.suite}", time.monotonic() - t0, kind, str(exc).splitlines()[0], str(exc)))
        progress.say(f"{name} {kind.upper()}: {str(exc).splitlines()[0]}")
        raise exc
    records = [rc.record(m) for m in measurements]
    if frequency and rc.suite in CYCLES_SUITES:
        records += cycles_per_byte(records, {rc.target: frequency})
    append_records(run.results_csv, records)
    seconds = time.monotonic() - t0
    if not records:
        run.case(Case(name, f"farm.bench.{spec.suite}", seconds, "failure", "no measurements"))
        run.status = max(run.status, EXIT_TEST_FAILURE, key=_severity)
    else:
        run.case(Case(name, f"farm.bench.{spec.suite}", seconds, "pass",
                      output="\n".join(f"{r.metric}[{r.params}] = {r.value:g} {r.unit}" for r in records)))
    progress.say(f"{name} ok in {seconds:.1f}s: {len(records)} records")
