"""farm's pytest plugin: a labgrid user's tests on farm's targets.

Loaded by its entry point (``pytest11``) wherever farm is installed, beside labgrid's own plugin::

    pytest --lg-env=env/qemu-maaxboard.yaml tests/     (before farm is installed: -p farm.pytestplugin)

labgrid's ``env``, ``target`` and ``strategy`` fixtures work on farm's env files: labgrid's ``target``
is the env file's ``main`` target, and farm's files name theirs after the board (``maaxboard-twin``),
so the plugin makes the env file's only target (or ``--farm-target NAME``) answer for ``main``.
``strategy.transition("shell")`` then boots the env file's ``images: farm-image``.

farm adds fixtures:

- ``farm_image``: the image to boot: ``--farm-image DIR`` (printed by ``farm build``), else
  ``--farm-recipe RECIPE``, else the env file's ``images: farm-image``, built on demand (cached).
- ``farm_target``: the target booted with farm's boot stage (session-wide): the image staged in a
  job folder of its own, infrastructure failures retried (``--farm-boot-attempts``, default 2),
  known fatal console lines ending the boot at once, the console in ``<out>/console/<target>.log``;
  powered off and unstaged at the end. ``farm_target.run(cmd)`` runs a shell command.
- ``farm_record(metric, value, unit, params=None, benchmark=None)``: a measurement, appended to
  ``<out>/results.csv`` as a farm record (``farm report``/``compare``/``qualify`` read it) and given
  to the test's JUnit testcase as a property. ``<out>`` is ``--farm-out DIR``, else
  ``results/pytest-<run id>``. At the end of the session the directory is published like a run's
  (farm.run.events ``run_published``): the results store ingests it.

Failures keep farm's classes: an infrastructure failure (``InfrastructureError``: the lab, the
console, TFTP) is a pytest *error*, also inside a test; a test failure (``TestFailure``: e.g. the
kernel under test panicked while booting) is a pytest *failure*, also inside a fixture. A job
error (bad input) is an error with its one-line message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import attr
import attrs
import pytest
from labgrid import Environment

from .errors import FarmError, InfrastructureError, JobError, TestFailure

FARM_FIXTURES = ("farm_image", "farm_target", "farm_record", "farm_results")


def pytest_addoption(parser) -> None:
    group = parser.getgroup("farm")
    group.addoption("--farm-image", metavar="DIR", help="the image directory to boot (`farm build` prints it)")
    group.addoption("--farm-recipe", metavar="RECIPE",
                    help="an image recipe to build (cached) and boot; default: the env file's images: farm-image")
    group.addoption("--farm-target", metavar="NAME",
                    help="the env file's target that labgrid's `target` fixture gives (default: `main`, else the only one)")
    group.addoption("--farm-out", metavar="DIR", help="where farm's records go (default results/pytest-<run id>)")
    group.addoption("--farm-boot-attempts", metavar="N", type=int, default=2,
                    help="boots tried when the lab fails (default 2)")
    group.addoption("--farm-bootarg", metavar="ARG", action="append", default=[],
                    help="a kernel argument for farm_target's boot (repeatable)")


@attr.s(eq=False)
class FarmEnvironment(Environment):
    """labgrid's Environment whose ``main`` is the target farm was told to use (labgrid asks for ``main``)."""

    main = attr.ib(default=None)

    def get_target(self, role: str = "main"):
        if role == "main" and self.main and "main" not in self.config.get_targets():
            role = self.main
        return super().get_target(role)


def main_target_name(targets: list[str], chosen: str | None, config_file: str) -> str | None:
    """Which target answers for labgrid's ``main`` (pure: the env file's target names in, a name out)."""
    if chosen:
        if chosen not in targets:
            raise pytest.UsageError(f"--farm-target {chosen}: {config_file} has no such target "
                                    f"(have: {', '.join(targets)})")
        return chosen
    if "main" in targets:
        return None
    if len(targets) == 1:
        return targets[0]
    return None  # several and none named main: labgrid's target fixture says so; --farm-target picks one


def _env_key():
    from labgrid.pytestplugin.hooks import LABGRID_ENV_KEY

    return LABGRID_ENV_KEY


def pytest_configure(config) -> None:
    """Secrets as the ``farm`` command takes them: a ``FARM_SECRET_*`` too short to mask safely is
    refused (naming the variable) before any test runs, not silently left unmasked."""
    from .secrets import register_environment

    try:
        register_environment()
    except JobError as exc:
        raise pytest.UsageError(f"farm: {exc}") from None


def pytest_sessionstart(session) -> None:
    """After labgrid's plugin made the Environment (its pytest_configure): answer ``main`` for it."""
    config = session.config
    key = _env_key()
    env = config.stash.get(key, None)
    if env is None or isinstance(env, FarmEnvironment):
        return
    targets = list(env.config.get_targets())
    main = main_target_name(targets, config.option.farm_target, env.config_file)
    if main is None:
        return
    farm_env = FarmEnvironment(config_file=env.config_file, main=main)
    coordinator = (env.config.data.get("options") or {}).get("coordinator_address")  # --lg-coordinator
    if coordinator:
        farm_env.config.set_option("coordinator_address", coordinator)
    config.stash[key] = farm_env


@attrs.define
class FarmResults:
    """Where this session's records and console logs go."""

    path: Path
    run_id: str
    console: Any  # farm.boot.console_log.ConsoleLog
    image: str = ""  # the image's name once farm_image was used

    @property
    def csv(self) -> Path:
        return self.path / "results.csv"


@pytest.fixture(scope="session")
def farm_results(request) -> Iterator[FarmResults]:
    from .boot.console_log import ConsoleLog
    from .run import new_run_id
    from .results.outdir import prepare_out_dir

    run_id = new_run_id()
    out = request.config.option.farm_out
    path = Path(out) if out else Path("results") / f"pytest-{run_id}"
    try:
        path = prepare_out_dir(path, hint="name a new or empty one").path
    except JobError as exc:
        raise JobError(str(exc).replace("--out", "--farm-out", 1)) from None
    with ConsoleLog(path / "console") as console:
        results = FarmResults(path, run_id, console)
        yield results
    if results.csv.exists():  # what the session recorded reaches the results store as a run's does
        from .run.events import published

        published(path)


@pytest.fixture(scope="session")
def farm_image(request, env, farm_results):
    from .boot.netboot import image_at
    from .images.build import load_image

    option = request.config.option
    if option.farm_image:
        image = load_image(option.farm_image)
    elif option.farm_recipe:
        image = image_at(option.farm_recipe)
    else:
        try:
            path = env.config.get_image_path("farm-image")
        except KeyError:
            raise pytest.UsageError(f"which image? give --farm-image DIR or --farm-recipe RECIPE, or name one in "
                                    f"{env.config_file} as images: farm-image") from None
        image = image_at(path)
    farm_results.image = image.name
    return image


@pytest.fixture(scope="session")
def farm_target(request, env, target, farm_image, farm_results):
    from .boot.session import boot_opened_target

    option = request.config.option
    arch = str(env.config.get_target_option(target.name, "arch", "unknown"))
    if arch not in ("unknown", farm_image.arch):
        raise JobError(f"{env.config_file}: options.arch: target {target.name} is {arch} but image "
                       f"'{farm_image.name}' is {farm_image.arch}")
    job = f"{farm_results.run_id}-{target.name}"
    strategy = target.get_strategy()
    if getattr(strategy.status, "name", "") == "shell":  # a test booted it with labgrid's strategy: boot ours
        strategy.transition("off")
    with boot_opened_target(target, arch, farm_image, job, farm_results.console, list(option.farm_bootarg),
                            attempts=option.farm_boot_attempts) as booted:
        yield booted


@pytest.fixture
def farm_record(request, env, target, farm_results) -> Callable[..., None]:
    """``farm_record(metric, value, unit, params=None, benchmark=None)``: one measured value."""
    from .results.csvout import append_records
    from .measure import Measurement, impossible
    from .results.record import RunContext
    from .secrets import mask

    arch = str(env.config.get_target_option(target.name, "arch", "unknown"))
    context = RunContext(run_id=farm_results.run_id, target=target.name, arch=arch, setup="default",
                         image=farm_results.image, suite="pytest")

    def record(metric: str, value: float, unit: str, params: dict | None = None, benchmark: str | None = None) -> None:
        value = float(value)
        why = impossible(value)
        if why:
            raise TestFailure(f"{request.node.name}: {metric} {why}: not recorded")
        name = benchmark or request.node.name
        append_records(farm_results.csv, [context.record(Measurement(name, metric, value, unit, params or {}))])
        label = f"{metric}[{';'.join(f'{k}={v}' for k, v in sorted((params or {}).items()))}]" if params else metric
        # the testcase's <properties> in junit.xml (record_property's list, without its xunit2 warning);
        # pytest writes them as they are: masked here, as farm's own files are
        request.node.user_properties.append((mask(f"farm.{label}"), mask(f"{property_value(value)} {unit}")))

    return record


def property_value(value: float) -> str:
    """A measured value as a JUnit property's text, every digit kept (pure): whole numbers as integers
    (``1025638400``, not ``1.02564e+09``), others as the shortest text that reads back the same float."""
    return str(int(value)) if value.is_integer() and abs(value) < 1e18 else repr(value)


def failure_phase(exc: BaseException | None, when: str) -> str:
    """The phase a failed report should say, so that pytest calls it an error or a failure (pure).

    pytest calls a failure in setup or teardown an *error*, one in the test body a *failure*. farm's
    classes decide instead: the lab's failure is an error wherever it happened, the image under
    test failing (TestFailure) is a failure even when a fixture met it.
    """
    from .boot.session import root_cause

    root = root_cause(exc) if exc is not None else None
    if isinstance(root, InfrastructureError) and when == "call":
        return "setup"
    if isinstance(root, TestFailure) and when == "setup":
        return "call"
    return when


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.excinfo is None or not set(FARM_FIXTURES) & set(getattr(item, "fixturenames", ())):
        return
    exc = call.excinfo.value
    report.when = failure_phase(exc, report.when)
    root = _root(exc)
    if isinstance(root, FarmError):  # one clear line, as farm's commands say it
        report.longrepr = f"farm: {root.kind} error: {root}" if not isinstance(root, TestFailure) \
            else f"farm: test failure: {root}"


def _root(exc: BaseException) -> BaseException:
    from .boot.session import root_cause

    return root_cause(exc)

