"""A run directory and its ``run.json``: one typed model, written in one place, read back by resume.

    results/<run-id>/
        run.json        RunInfo: who, when, what ran (pipeline, envs, setups, images), every stage and boot
        junit.xml       a testcase per stage (the same stages)
        results.csv     every record, appended as soon as a benchmark finishes
        console/        the serial console of every target, as it arrives

:class:`RunDir` listens to the runner's events (farm.run.events) and keeps all of it on disk after every
step, so a run that fails or is interrupted keeps everything it had. Nothing else writes run.json.
"""

from __future__ import annotations

import functools
import getpass
import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any, Callable, Mapping

import attrs

from .. import __version__
from ..config import json_node, load_json
from ..errors import EXIT_INFRA_ERROR, EXIT_JOB_ERROR, EXIT_OK, EXIT_TEST_FAILURE, JobError
from ..results.csvout import append_records, read_records, write_records
from ..results.junit import Case, write_junit
from ..runid import new_run_id
from ..schema import WrongType, setting
from ..results.outdir import RUN_HINT, check_run_entries, prepare_out_dir
from ..results.record import Record, now_iso, to_json, write_text_atomic
from ..results.runjson import MAX_RUN_JSON_BYTES
from ..secrets import mask
from ..values import name_problem
from .events import hookimpl
from .model import Pipeline


#: how a run ended, by its exit code
STATUS_OF_EXIT = {EXIT_OK: "passed", EXIT_TEST_FAILURE: "failed", EXIT_INFRA_ERROR: "infrastructure-error",
                  EXIT_JOB_ERROR: "job-error"}


@attrs.define
class Stage:
    """A testcase of junit.xml and what it was in the run: resume reads ``label`` and ``benchmark``,
    never a testcase's name. ``label``: the boot's (``target/setup[/repeat][#i]``)."""

    case: Case
    label: str | None = None
    benchmark: str | None = None

    def as_dict(self) -> dict[str, Any]:
        extra = {k: v for k, v in (("label", self.label), ("benchmark", self.benchmark)) if v is not None}
        return {**attrs.asdict(self.case), **extra}

    #: what a stage of run.json is, in an error's words
    SHAPE = "a testcase (name, classname, seconds, kind, ...)"

    @classmethod
    def __structure__(cls, value: Any, read_as: Any) -> "Stage":
        """A stage as run.json keeps it (:meth:`as_dict`): the testcase's fields and the stage's, side by side."""
        if not isinstance(value, Mapping):
            raise WrongType(cls.SHAPE, value, shape=True)
        flat = read_as(value, _flat_stage())
        fields = attrs.asdict(flat)
        label, benchmark = fields.pop("label"), fields.pop("benchmark")
        return cls(Case(**fields), label, benchmark)


@functools.cache
def _flat_stage() -> type:
    """A stage's fields as run.json has them: the testcase's and ``label``, ``benchmark``."""
    attrs.resolve_types(Case)
    fields = {f.name: attrs.field(default=f.default, type=f.type) for f in attrs.fields(Case)}
    return attrs.make_class("Stage", {**fields, "label": attrs.field(default=None, type=str | None),
                                      "benchmark": attrs.field(default=None, type=str | None)})


@attrs.define
class RunInfo:
    """run.json. Fields other readers rely on (report, store, dashboard) keep their names and shapes.
    Read back by resume (:meth:`read`) as farm.schema reads a file; a field it does not know (another farm
    version's) is not read."""

    OPEN = "a field another farm version wrote: not read"

    run_id: str = setting(check=lambda value: name_problem(value, "run id"))
    pipeline: str = ""
    pipeline_name: str = ""
    pipeline_sha256: str = ""
    who: str = ""
    started: str = ""
    farm_version: str = ""
    git_sha: str | None = None
    ci_job: str | None = None
    envs: list[str] = attrs.field(factory=list)
    setups: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    repeats_in_boot: int = 1
    #: the experiment's design: boots per setup, order and seed, settle and compare rules, the plan
    #: (farm.run.experiment); {} in a run.json written before it was recorded
    experiment: dict[str, Any] = attrs.field(factory=dict)
    finished: str | None = None
    status: str = "running"  # running, passed, failed, infrastructure-error, job-error, interrupted
    current_stage: str | None = None
    stopped_at: str | None = None
    images: dict[str, dict[str, Any]] = attrs.field(factory=dict)  # image name -> dir + manifest
    #: program name -> sha256, size, sources: what a benchmark built and ran outside an image (exitcost's ELF)
    programs: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    targets: dict[str, dict[str, Any]] = attrs.field(factory=dict)  # name -> {env, arch, boots: [...]}
    place: dict[str, Any] | None = None  # with --farm: the place, its coordinator, owner, tags, health
    stages: list[Stage] = attrs.field(factory=list)
    failures: list[dict[str, Any]] = attrs.field(factory=list)  # benchmarks that failed, with the tool's words
    resumed: list[str] = attrs.field(factory=list)  # when the run was resumed
    replaced: str | None = None  # --force: where the directory's old content went
    #: seconds by phase (build, reserve, boot, benchmarks, publish, other, wall): farm.run.phases.PhaseTimes
    phases: dict[str, float] = attrs.field(factory=dict)

    def as_dict(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=False)
        data["stages"] = [s.as_dict() for s in self.stages]
        return data

    @classmethod
    def read(cls, path: Path) -> "RunInfo":
        """run.json as farm wrote it, checked for what resuming needs; a JobError names the field."""
        from ..schema.read import structure

        return structure(json_node(load_json(path, "run.json", limit=MAX_RUN_JSON_BYTES), path), cls)


def git_sha(where: Path) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() or None


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@attrs.define
class RunDir:
    """A run directory and everything written into it, kept on disk at every step: a listener of the
    runner's hooks (farm.run.events), called before the others (``tryfirst``), so that what a later
    listener says has reached the disk already. How the run ends is the runner's (``run_ended``)."""

    path: Path
    info: RunInfo

    @property
    def run_id(self) -> str:
        return self.info.run_id

    @property
    def results_csv(self) -> Path:
        return self.path / "results.csv"

    @property
    def cases(self) -> list[Case]:
        return [s.case for s in self.info.stages]

    def passed(self) -> list[Stage]:
        return [s for s in self.info.stages if s.case.kind == "pass"]

    def save(self) -> None:
        write_junit(self.path / "junit.xml", f"farm.{self.info.pipeline_name}", self.cases)
        write_text_atomic(self.path / "run.json", mask(to_json(self.info.as_dict())) + "\n")

    # --- the runner's hooks (farm.run.events.RunSpec) ---
    @hookimpl(tryfirst=True)
    def stage_started(self, name: str) -> None:
        """Say which stage runs now, so a run that dies says where it stopped."""
        self.info.current_stage = name
        self.save()

    @hookimpl(tryfirst=True)
    def stage_ended(self, stage: Stage) -> None:
        case = attrs.evolve(stage.case, message=mask(stage.case.message), output=mask(stage.case.output))
        self.info.stages.append(attrs.evolve(stage, case=case))
        self.save()

    @hookimpl(tryfirst=True)
    def boot_recorded(self, target: str, env: str, arch: str, boot: dict[str, Any]) -> None:
        entry = self.info.targets.setdefault(target, {"env": env, "arch": arch, "boots": []})
        entry["boots"].append(boot)
        self.save()

    @hookimpl(tryfirst=True)
    def records(self, records: list[Record]) -> None:
        append_records(self.results_csv, records)

    @hookimpl(tryfirst=True)
    def benchmark_failed(self, failure: dict[str, Any]) -> None:
        self.info.failures.append(failure)

    @hookimpl(tryfirst=True)
    def image_built(self, name: str, entry: dict[str, Any]) -> None:
        self.info.images[name] = entry
        self.save()

    @hookimpl(tryfirst=True)
    def program_built(self, name: str, entry: dict[str, Any]) -> None:
        self.info.programs[name] = entry
        self.save()

    @hookimpl(tryfirst=True)
    def place_taken(self, place: dict[str, Any]) -> None:
        self.info.place = place
        self.save()

    @hookimpl(tryfirst=True)
    def place_health(self, state: str) -> None:
        if self.info.place is not None:
            self.info.place["health"] = state
            self.save()

    @hookimpl(tryfirst=True)
    def run_ended(self, status: int, interrupted: bool) -> None:
        self.info.finished = now_iso()
        if status != EXIT_OK or interrupted:
            self.info.stopped_at = self.info.current_stage
        self.info.status = "interrupted" if interrupted else STATUS_OF_EXIT[status]
        self.save()


def new_run(pipeline: Pipeline, envs: tuple[Path, ...], out: Path | None, force: bool = False,
            experiment: dict[str, Any] | None = None) -> RunDir:
    """A new run in ``out`` (default ``results/<run-id>``), which must be new or empty: a directory
    holding anything is refused, or with ``force`` its old content moved aside (farm.results.outdir).
    ``experiment``: its design as run.json records it (farm.run.experiment.Experiment.describe)."""
    run_id = new_run_id()
    prepared = prepare_out_dir(out or Path("results") / run_id, force=force, hint=RUN_HINT)
    info = RunInfo(
        run_id=run_id, pipeline=str(pipeline.source), pipeline_name=pipeline.name,
        pipeline_sha256=sha256_of(pipeline.source),
        who=os.environ.get("GITLAB_USER_LOGIN") or os.environ.get("GITHUB_ACTOR") or getpass.getuser(),
        started=now_iso(), farm_version=__version__,
        git_sha=git_sha(Path.cwd()) or git_sha(Path(__file__).parent),
        ci_job=os.environ.get("CI_JOB_ID") or os.environ.get("GITHUB_RUN_ID"),
        envs=[str(e) for e in envs], setups={s.name: s.describe() for s in pipeline.setups},
        repeats_in_boot=pipeline.repeats_in_boot, experiment=dict(experiment or {}),
        replaced=str(prepared.moved_to) if prepared.moved_to is not None else None)
    run = RunDir(prepared.path, info)
    run.save()
    return run


def reopen_run(run_dir: Path, pipeline: Pipeline, keep: Callable[[RunInfo], Callable[[Stage], bool]]) -> RunDir:
    """A run directory to finish (``--resume``): the stages ``keep`` says are done stay, the rest are
    dropped, and so are the rows of benchmarks that failed (farm.run.resume decides what is done)."""
    if not run_dir.is_dir():
        raise JobError(f"--resume {run_dir}: not a run directory")
    check_run_entries(run_dir)
    try:
        info = RunInfo.read(run_dir / "run.json")
    except JobError as exc:
        raise JobError(f"{exc} (cannot resume this run)") from None
    if info.pipeline_sha256 != sha256_of(pipeline.source):
        raise JobError(f"{run_dir}: cannot resume: run with another version of {pipeline.source} "
                       "(its sha256 differs); start a new run")
    kept = keep(info)
    info.stages = [s for s in info.stages if kept(s)]
    info.status, info.finished, info.stopped_at = "running", None, None
    info.resumed.append(now_iso())
    run = RunDir(run_dir, info)
    if run.results_csv.exists():
        write_records(run.results_csv, [r for r in read_records(run.results_csv) if r.metric != "failed"])
    run.save()
    return run
