"""``farm reproduce RUN``: that run's exact images from the archive, its pipeline again, and the verdict.

    done = reproduce("20261129-224818-e762")     # a run id, or a run directory
    done.reproduction.passed, done.run.path

1. The run's record from the archive (farm.archive.record): a run that is not archived is a job error.
2. Its run.json and results.csv, every image it booted (each artifact sha256-checked as it is read:
   a missing or corrupt one is an :class:`~farm.archive.ArchiveError` naming the run, the image and
   the file, before anything boots) and its pipeline file as run with its recipes, into farm's cache
   (farm.archive.fetch).
3. The pipeline again (farm.run.run_pipeline), each setup booting the image the original booted for
   its architecture, nothing built; the same setups, parameters and extra kernel arguments
   (``--bootarg`` of the original run, recorded in run.json's setups), a shuffled order's boots in
   the same order (run.json's ``experiment.seed``, drawn when the pipeline gave none); on the
   original's env files, or ``--env``, or a place of the farm (``--farm``: its board type, by default the original's); a
   target of another architecture is refused, one of another board type (``options.board``, against
   the original's place tag or env file) too unless ``--allow-other-board``.
   Every setup boots at least the rule's ``min_boots`` times: an original of fewer boots (a 1-boot
   smoke or network run) is reproduced with enough boots for its figures to be judged.
4. Its figures against the original's, one value per boot on each side (farm.results.reproduction,
   farm compare's ratio rule, or for an original of fewer boots than its minimum the reproduction's
   prediction interval: reproduced, not reproduced or inconclusive): a listener of the run's
   ``run_published`` hook, called first, writes ``reproduction.json``, ``reproduction.md`` and
   ``reproduction.xml`` (junit) into the new run directory before the results store ingests it (which
   so learns that this run reproduces that one) and the archive archives it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import attrs

from ..errors import EXIT_INCONCLUSIVE, EXIT_INFRA_ERROR, EXIT_OK, EXIT_TEST_FAILURE, JobError
from ..images.image import Image, default_cache
from ..results.csvout import read_records
from ..results.junit import Case, write_junit
from ..results.record import Record, write_text_atomic
from ..results.ratio import MIN_BOOTS, recorded_rule, repeats_in_boot
from ..results.reproduction import (DEFAULT_THRESHOLD, INCONCLUSIVE, REPRODUCED, Reproduction, dumps, judge,
                                    junit_cases, markdown, measured_nothing, not_run)
from ..run.events import hookimpl
from ..values import name_problem
from . import ArchiveError, NotArchived, open_archive
from .fetch import fetch_image, fetch_run, fetch_tree
from .record import RunRecord

if TYPE_CHECKING:
    from ..boot.session import EnvFile

#: what a reproduction writes into its run directory
FILES = ("reproduction.json", "reproduction.md", "reproduction.xml")


@attrs.frozen
class Original:
    """The run to reproduce, as the archive holds it."""

    record: RunRecord
    info: dict[str, Any]        # its run.json
    records: tuple[Record, ...]  # its results.csv
    path: Path                  # its run.json and results.csv, fetched into the cache

    @property
    def run_id(self) -> str:
        return self.record.run_id


def _say(text: str) -> None:
    print(f"farm: {text}", file=sys.stderr, flush=True)


def run_id_of(spec: str) -> tuple[str, bool]:
    """The run id ``spec`` names (a run directory's, or itself) and whether it was a directory."""
    path = Path(spec)
    if path.is_dir():
        from .archiving import run_info

        return run_info(path)["run_id"], True
    if (problem := name_problem(spec, "run id")):
        raise JobError(f"{spec}: neither a run directory nor a run id ({problem})")
    return spec, False


def find_original(spec: str, archive: Any, cache: Path) -> Original:
    run_id, is_dir = run_id_of(spec)
    record = archive.record(run_id)
    if record is None:
        hint = (f"archive it first: farm archive {spec}" if is_dir else
                "is FARM_ARCHIVE the lab's archive? (farm archive list shows what it holds)")
        raise NotArchived(f"run {run_id} is not in the archive {archive.location}: {hint}")
    path = fetch_run(record, archive, cache)
    from ..config import load_json
    from ..errors import FarmError
    from .archiving import MAX_RUN_JSON_BYTES

    try:  # bounded as farm's files are: size, nesting (a forged one 100k deep), a JSON object
        info = load_json(path / "run.json", "archived run.json", limit=MAX_RUN_JSON_BYTES)
    except FarmError as exc:
        raise ArchiveError(f"run {run_id}: {exc}") from None
    records = tuple(read_records(path / "results.csv")) if (path / "results.csv").is_file() else ()
    # CPU figures written before records said their CPU: a guest setup's were its vCPUs' (run.json)
    from farm.results.identity import with_cpu_scope_of_run

    records = tuple(with_cpu_scope_of_run(records, info))
    return Original(record, info if isinstance(info, dict) else {}, records, path)


def boot_images(original: Original) -> dict[tuple[str, str], str]:
    """(architecture, setup) -> the name of the image the original booted there (its boot records)."""
    out: dict[tuple[str, str], str] = {}
    targets = original.info.get("targets") if isinstance(original.info.get("targets"), dict) else {}
    for facts in targets.values():
        if not isinstance(facts, dict):
            continue
        for boot in facts.get("boots") or []:
            if isinstance(boot, dict) and isinstance(boot.get("image"), str) and isinstance(boot.get("setup"), str):
                out.setdefault((str(facts.get("arch")), boot["setup"]), boot["image"])
    return out


def fetch_images(original: Original, archive: Any, cache: Path) -> dict[tuple[str, str], Image]:
    """Every image the original booted, fetched (sha256-checked), by (architecture, setup)."""
    wanted = boot_images(original)
    if not wanted:
        raise JobError(f"run {original.run_id}: its run.json records no boot: nothing to reproduce")
    fetched: dict[str, Image] = {}
    for name in sorted(set(wanted.values())):
        image = original.record.images.get(name)
        if image is None:
            why = [m for m in original.record.missing if m.startswith(f"image {name}: ")]
            raise ArchiveError(f"run {original.run_id}: image {name} is not in the archive"
                               + (f" ({'; '.join(why)})" if why else ""))
        fetched[name] = fetch_image(original.run_id, image, archive, cache)
        _say(f"fetched image {name} ({len(image.artifacts)} artifacts, sha256-checked) into {fetched[name].path}")
    return {key: fetched[name] for key, name in wanted.items()}


def pipeline_file(original: Original, archive: Any, cache: Path, given: Path | None) -> Path:
    """The pipeline file as run: ``given`` (checked against the original's sha256), else the archive's."""
    want = str(original.info.get("pipeline_sha256") or "")
    if given is not None:
        from ..config import read_bytes

        if hashlib.sha256(read_bytes(given, "--pipeline file")).hexdigest() != want:
            raise JobError(f"--pipeline {given}: not the pipeline file run {original.run_id} ran (its sha256 is not "
                           f"{want})")
        return Path(given)
    pipeline = original.record.pipeline
    if pipeline is None:
        why = [m for m in original.record.missing if m.startswith("pipeline file")]
        raise JobError(f"run {original.run_id}: its pipeline file is not in the archive"
                       + (f" ({why[0]})" if why else "") + "; give the file as run with --pipeline FILE")
    if pipeline.masked:
        raise JobError(f"run {original.run_id}: its pipeline file held secrets and is archived masked; give the "
                       f"file as run with --pipeline FILE (sha256 {want})")
    return fetch_tree(original.run_id, pipeline, original.record.recipes, archive, cache)


def target_envs(original: Original, envs: Sequence[Path] | None, board: str | None) -> list[Path]:
    """Where to reproduce: ``envs`` (``--env``), the env file of ``board`` (``--farm``) beside the
    original's, else the original's own env files."""
    if envs:
        return list(envs)
    recorded = [Path(str(e)) for e in original.info.get("envs") or []]
    if board is not None:
        folder = recorded[0].parent if recorded and recorded[0].parent.is_dir() else Path("env")
        path = folder / f"{board}.yaml"
        if not path.is_file():
            raise JobError(f"--farm board={board}: no env file {path} (give one with --env)")
        return [path]
    lost = [str(p) for p in recorded if not p.is_file()]
    if not recorded or lost:
        raise JobError(f"run {original.run_id} ran on {', '.join(map(str, recorded)) or 'no env file'}, "
                       f"{'which is' if len(lost) == 1 else 'which are'} not here: give a target of the same board "
                       "type with --env FILE, or --farm")
    return recorded


def default_board(original: Original) -> str:
    """The board type of the original: its farm place's ``board`` tag, else its env file's name."""
    place = original.info.get("place")
    tags = place.get("tags") if isinstance(place, dict) and isinstance(place.get("tags"), dict) else {}
    if isinstance(tags.get("board"), str):
        return tags["board"]
    envs = original.info.get("envs") or []
    if not envs:
        raise JobError(f"run {original.run_id}: no board type recorded: give it, --farm board=NAME")
    return Path(str(envs[0])).stem


def original_board(original: Original) -> tuple[str, str] | None:
    """The board type the original ran on and where that is said: its farm place's ``board`` tag,
    else its env file's ``options.board`` (when the file is here); None when neither says."""
    from ..boot.session import EnvFile

    place = original.info.get("place")
    tags = place.get("tags") if isinstance(place, dict) and isinstance(place.get("tags"), dict) else {}
    if isinstance(tags.get("board"), str) and tags["board"]:
        return tags["board"], "its farm place's board tag"
    for env in original.info.get("envs") or []:
        if Path(str(env)).is_file() and (board := env_board(EnvFile.load(Path(str(env))))):
            return board, f"options.board of its env file {env}"
    return None


def env_board(env: "EnvFile") -> str | None:
    """An env file's board type: its target's ``options.board`` (labgrid's env files, farm's places)."""
    return env.options.board or None


def check_board(original: Original, env: "EnvFile", allow_other: bool) -> None:
    """Refuse to reproduce on ``env`` when its board type is not the original's (a JobError naming
    both), unless ``allow_other`` (``--allow-other-board``: said, then done)."""
    want = original_board(original)
    if want is None:
        _say(f"warning: run {original.run_id} records no board type (no farm place, its env file is not here): "
             f"only the architecture of {env.path} is checked")
        return
    got = env_board(env)
    if got == want[0]:
        return
    text = (f"{env.path}: board {got or '(none: no options.board)'}, but run {original.run_id} ran on board "
            f"{want[0]} ({want[1]})")
    if allow_other:
        _say(f"warning: {text}: reproducing there anyway (--allow-other-board)")
        return
    raise JobError(f"{text}: reproduce on a target of the same board type, or give --allow-other-board to run "
                   "it there anyway")


def extra_bootargs(original: Original, pipeline) -> list[str]:
    """The kernel arguments the original run added to every setup (``farm run --bootarg``)."""
    setups = original.info.get("setups") if isinstance(original.info.get("setups"), dict) else {}
    extra: list[str] | None = None
    for setup in pipeline.setups:
        recorded = list((setups.get(setup.name) or {}).get("bootargs") or [])
        own = list(setup.bootargs)
        if recorded[:len(own)] != own:
            raise JobError(f"run {original.run_id}: setup {setup.name}'s recorded kernel arguments {recorded} do not "
                           f"start with the pipeline file's {own}")
        if extra is not None and recorded[len(own):] != extra:
            raise JobError(f"run {original.run_id}: its setups added different kernel arguments: cannot tell "
                           "which --bootarg it ran with")
        extra = recorded[len(own):]
    return extra or []


class ReproductionWriter:
    """Judges the new run against the original when its results are complete (``run_published``, called
    before the store and the archive take the run) and writes the verdict into its run directory."""

    def __init__(self, original: Original, threshold: float, min_boots: int):
        self.original, self.threshold, self.min_boots = original, threshold, min_boots
        self.status: int | None = None
        self.result: Reproduction | None = None
        self.error: str | None = None

    @hookimpl
    def run_ended(self, status: int, interrupted: bool) -> None:
        self.status = status

    @hookimpl(tryfirst=True)
    def run_published(self, run_dir: Path, qualification: dict[str, Any] | None) -> None:
        try:
            run_dir = Path(run_dir)
            new = read_records(run_dir / "results.csv") if (run_dir / "results.csv").is_file() else []
            run_id = json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("run_id", "")
            boots = {**repeats_in_boot(self.original.path), **repeats_in_boot(run_dir)}  # run id -> N
            if self.status not in (EXIT_OK, EXIT_TEST_FAILURE) and measured_nothing(new):  # the lab failed
                rep = not_run(self.original.run_id, run_id, self.status, self.threshold, self.min_boots)
            else:
                rep = judge(self.original.records, new, threshold=self.threshold, min_boots=self.min_boots,
                            repeats_in_boot=boots, original_run_id=self.original.run_id, run_id=run_id)
            write_text_atomic(run_dir / "reproduction.json", dumps(rep))
            write_text_atomic(run_dir / "reproduction.md", markdown(rep))
            ran = "pass" if self.status == EXIT_OK else ("failure" if self.status == EXIT_TEST_FAILURE else "error")
            run_case = Case(f"reproduction run {run_id} of {self.original.run_id}", "farm.reproduce", 0.0, ran,
                            "" if ran == "pass" else f"the reproduction run ended with exit code {self.status}: "
                            "see its junit.xml")
            write_junit(run_dir / "reproduction.xml", "farm.reproduce", [run_case, *junit_cases(rep)])
            self.result = rep
        except Exception as exc:  # noqa: BLE001 - a listener must not fail the run; the command reports it
            self.error = f"{type(exc).__name__}: {exc}"
            _say(f"warning: reproduce: no verdict written into {run_dir}: {self.error}")


@attrs.frozen
class Reproduced:
    original: Original
    run: Any                      # farm.run.Run
    reproduction: Reproduction | None
    error: str | None = None

    @property
    def exit_code(self) -> int:
        """The run's own failure first (the lab's, the job's); else by the verdict: 0 reproduced,
        4 inconclusive (nothing failed, a figure could not be told), 1 not reproduced."""
        if self.run.status != EXIT_OK:
            return self.run.status
        if self.reproduction is None:
            return EXIT_INFRA_ERROR
        return {REPRODUCED: EXIT_OK, INCONCLUSIVE: EXIT_INCONCLUSIVE}.get(self.reproduction.verdict,
                                                                          EXIT_TEST_FAILURE)


def reproduce(spec: str, *, envs: Sequence[Path] | None = None, farm: Any = None, out: Path | None = None,
              threshold: float = DEFAULT_THRESHOLD, min_boots: int | None = None, pipeline: Path | None = None,
              force: bool = False, allow_other_board: bool = False,
              progress: object | None = None, archive: Any = None, cache: Path | None = None,
              flow_for: Any = None, registry: Any = None) -> Reproduced:
    """Reproduce the run ``spec`` names (module docstring). ``farm``: a farm.run.FarmRequest (its
    tags may leave out the board: the original's); ``min_boots``: the fewest boots a side for a
    verdict (default the original pipeline's ``compare.min_boots``, else 5); ``allow_other_board``:
    run on a target whose board type is not the original's (:func:`check_board`); ``archive``: default ``FARM_ARCHIVE``'s;
    ``cache``: where fetched things go (default farm's cache, ``FARM_CACHE``); ``flow_for``,
    ``registry``: the runner's (farm.run.run_pipeline: a test's flow that boots nothing)."""
    from ..boot.session import EnvFile
    from ..run import recorded_seed, run_pipeline
    from ..run.experiment import SHUFFLED
    from ..run.model import load_pipeline

    archive = archive if archive is not None else open_archive()
    if archive is None:
        raise JobError("the archive is off (FARM_ARCHIVE=none): set FARM_ARCHIVE to the lab's archive")
    cache = cache or default_cache()
    with archive.reading():
        original = find_original(spec, archive, cache)
        r = original.record
        _say(f"reproduce run {r.run_id} ({r.pipeline_name}, {r.status}, started {r.started}) from {archive.location}")
        images = fetch_images(original, archive, cache)
        pipeline_path = pipeline_file(original, archive, cache, pipeline)
    if farm is not None and "board" not in farm.tags and not envs:
        farm = attrs.evolve(farm, tags={**farm.tags, "board": default_board(original)})
    env_paths = target_envs(original, envs, farm.tags["board"] if farm is not None and not envs else None)
    loaded = load_pipeline(pipeline_path, registry)
    for env in (EnvFile.load(p) for p in env_paths):
        for setup in loaded.setups:
            if (env.arch, setup.name) not in images:
                archs = sorted({a for a, _ in images})
                raise JobError(f"{env.path}: {env.arch}, but run {r.run_id} booted setup {setup.name} on "
                               f"{', '.join(archs)} only: reproduce on a target of the same board type")
        check_board(original, env, allow_other_board)
    if min_boots is None:
        recorded = recorded_rule(original.path)
        min_boots = recorded.min_n if recorded is not None else MIN_BOOTS
    seed = recorded_seed(original.path) if loaded.experiment.order == SHUFFLED else None
    if loaded.experiment.order == SHUFFLED and seed is None:
        _say(f"warning: run {r.run_id}'s run.json records no seed of its shuffled boot order: its boots run in "
             "an order drawn anew")
    writer = ReproductionWriter(original, threshold, min_boots)
    fewest = min((loaded.boots_of(s) for s in loaded.setups), default=min_boots)
    if fewest < min_boots:  # the original cannot decide a ratio: boot enough to say where its values lie
        _say(f"run {r.run_id} booted a setup {fewest} time{'s' * (fewest != 1)}, fewer than the rule's {min_boots}: "
             f"each setup boots {min_boots} times, and each figure of the original is judged against the "
             "reproduction's prediction interval")
    run = run_pipeline(pipeline_path, out=out, env_override=env_paths, extra_bootargs=extra_bootargs(original, loaded),
                       farm=farm, force=force, progress=progress, images=images, listeners=[writer],
                       flow_for=flow_for, registry=registry, seed=seed, boots_at_least=min_boots)
    return Reproduced(original, run, writer.result, writer.error)
