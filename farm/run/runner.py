"""The runner: walks a pipeline's stages and tells its listeners (farm.run.events) what happens.

    build images -> for each target x setup x repeat: boot (a flow) -> benchmarks -> power off

Every stage is a junit testcase. A boot that fails does not stop the run: the next target or setup
still runs, and what was measured before is already in results.csv. A job error (bad input) stops it.
The runner knows boots only through a boot flow (farm.boot.flow), made for each setup by the flow
registry (farm.flows): the flow says which images to build, boots, pins and records the boot, so a
test can inject one that boots nothing and a new way of booting never edits the runner.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import attrs

from ..measure import BenchmarkError
from ..bench.context import BenchContext
from ..bench import registry as benchmark_registry
from ..boot.console_log import ConsoleLog
from ..boot.facts import TargetFacts
from ..boot.flow import BootFlow, BootRequest, FlowSetup
from ..boot.session import EnvFile
from ..boot.target import BootedTarget, not_implemented, what
from ..errors import EXIT_INFRA_ERROR, EXIT_JOB_ERROR, EXIT_OK, EXIT_TEST_FAILURE, FarmError, InfrastructureError, JobError, interrupt_in
from ..images.image import LINUX, Image
from ..images.needs import Needs
from ..images.request import ImageRequest
from ..results.cycles import cycles_per_byte
from ..results.identity import CYCLE_SOURCE_OF_FREQUENCY, with_cpu_scope, with_cycle_source
from ..results.junit import Case
from ..results.sanity import UNSETTLED, flag_records, flags_of
from ..measure import Measurement
from ..measure.ipbench import BENCHMARK as SWEEP
from ..measure.units import human
from ..results.record import RunContext
from .events import Hooks
from .experiment import boot_order
from .settle import Settled, settle
from .model import Benchmark, Pipeline, Setup
from .rundir import RunDir, Stage

def build(request: ImageRequest, carried: Image | None = None) -> Image:
    """Build an image request (farm's cache serves what is unchanged)."""
    return request.build(carried)


@attrs.frozen
class BootPlan:
    """One boot of the run: a target, a setup, its boot number (``repeat``), and the labels of its
    benchmark runs."""

    env: EnvFile
    setup: Setup
    repeat: int
    label: str  # target/setup[/boot]
    bench_labels: tuple[str, ...]  # label, or label#i per repeat inside the boot

    @property
    def job(self) -> str:
        return f"{self.env.target_name}-{self.setup.name}-{self.repeat}"


def plan_boots(pipeline: Pipeline, envs: list[EnvFile], seed: int | None = None) -> list[BootPlan]:
    """The run's boots in the order they run: per target, each setup ``boots`` times, interleaved or
    shuffled per round from ``seed`` (farm.run.experiment.boot_order). A boot's label does not
    depend on the order (resume finds what was done by label)."""
    plans = []
    experiment = pipeline.experiment
    counts = [pipeline.boots_of(s) for s in pipeline.setups]
    for env in envs:
        for index, boot in boot_order(counts, experiment.order, seed):
            setup = pipeline.setups[index]
            label = f"{env.target_name}/{setup.name}" + (f"/{boot}" if counts[index] > 1 else "")
            n = pipeline.repeats_in_boot
            plans.append(BootPlan(env, setup, boot, label,
                                  tuple(f"{label}#{i}" for i in range(n)) if n > 1 else (label,)))
    return plans


def severity(code: int) -> int:
    """Exit codes ordered by how bad they are: a job error outranks the lab's, which outranks a test's."""
    return {EXIT_OK: 0, EXIT_TEST_FAILURE: 1, EXIT_INFRA_ERROR: 2, EXIT_JOB_ERROR: 3}.get(code, 4)


def bench_case_name(suite: str, bench: str, label: str) -> str:
    return f"{suite}.{bench} {label}"


@attrs.define
class Runner:
    pipeline: Pipeline
    run: RunDir
    hooks: Hooks
    flow_for: Callable[[Setup], BootFlow] | None = None  # None: Runner.flow
    #: the benchmarks by name (default: the registered ones, farm.bench.registry)
    registry: Mapping[str, Any] = attrs.field(factory=lambda: benchmark_registry.benchmarks())
    #: (label, benchmark) pairs that passed in the run being resumed: not measured again
    done: frozenset[tuple[str, str]] = frozenset()
    #: how the run ends so far: the worst exit code of what failed (the runner's, told in run_ended)
    status: int = EXIT_OK
    #: (architecture, setup) -> the image its boots boot as it is, nothing built (farm reproduce: the
    #: original run's, fetched from the archive)
    fixed_images: Mapping[tuple[str, str], Image] = attrs.field(factory=dict)

    def fail(self, exc: FarmError) -> None:
        self.fail_code(exc.exit_code)

    def fail_code(self, code: int) -> None:
        self.status = max(self.status, code, key=severity)

    def before_board(self, label: str) -> None:
        """The veto hook: a listener's reason not to touch the board now is an infrastructure error."""
        if (reason := self.hooks.before_board(label=label)) is not None:
            raise InfrastructureError(reason)

    # --- stages ---
    def stage(self, name: str, classname: str, action: Callable[[], Any], *, label: str | None = None) -> Any:
        """Run one stage as a junit testcase; a FarmError is recorded (error/failure) and re-raised."""
        self.hooks.stage_started(name=name)
        self.hooks.say(text=f"{name} ...")
        t0 = time.monotonic()
        try:
            result = action()
        except FarmError as exc:
            seconds = time.monotonic() - t0
            kind = "failure" if exc.kind == "test" else "error"
            self.hooks.stage_ended(stage=Stage(Case(name, classname, seconds, kind, str(exc).splitlines()[0],
                                                    str(exc)), label))
            self.hooks.say(text=f"{name} {kind.upper()} after {seconds:.1f}s: {str(exc).splitlines()[0]}")
            raise
        seconds = time.monotonic() - t0
        cached = " (cached)" if isinstance(result, Image) and result.cached else ""
        self.hooks.stage_ended(stage=Stage(Case(name, classname, seconds, "pass"), label))
        self.hooks.say(text=f"{name} ok in {seconds:.1f}s{cached}")
        return result

    @property
    def needs(self) -> Needs:
        """What the run's benchmarks need on the target (their registrations): the recipe of the image
        they run on gains it."""
        needs = Needs()
        for bench in self.pipeline.benchmarks:
            needs |= self.registry[bench.name].target_needs(bench.params)
        return needs

    def image_request(self, env: EnvFile, setup: Setup, given: Mapping[tuple[str, str], Image]) -> ImageRequest:
        """The image a setup's flow boots: what the flow asks for, given the setup's own (its recipe, or
        the pipeline's for the architecture; ``--image`` gives that one built, not a setup's own; a fixed
        image, farm reproduce's, is booted as it is). A flow that boots another kind of image (a system
        image) is handed the run's ``--image`` of that kind."""
        if (fixed := self.fixed_images.get((env.arch, setup.name))) is not None:
            return ImageRequest(given=fixed, label=f"archived {fixed.name}")
        kind = setup.flow.type.image_kind
        offered = given.get((env.arch, kind)) if setup.image is None else None
        if kind != LINUX:
            return self.flow(setup, env).images(ImageRequest(given=offered, label="--image", kind=kind))
        recipe = self.pipeline.recipe_for(env.arch, setup)
        image = ImageRequest(recipe=recipe, given=offered, label="--image") \
            if offered is not None else ImageRequest(recipe=recipe, needs=self.needs)
        return self.flow(setup, env).images(image)

    def build_images(self, envs: list[EnvFile], given: Mapping[tuple[str, str], Image],
                     builder: Callable[..., Image] | None = None) -> Callable[[EnvFile, Setup], Image]:
        """Build every image the boots need (their flows' requests), once each, an image another carries
        first (the one a host image carries)."""
        builder = builder or build
        requests = {(e.path, s.name): self.image_request(e, s, given) for e in envs for s in self.pipeline.setups}
        tops = list({r.key: r for r in requests.values()}.values())
        many = len(tops) > 1 or any(r.carries for r in tops)
        images: dict[str, Image] = {}

        def get(request: ImageRequest) -> Image:
            if request.key in images:
                return images[request.key]
            carried = get(request.carries) if request.carries else None
            if request.given is not None:  # built already (--image, a lab's system image): used as it is
                image = request.given
                self.hooks.say(text=f"build: {request.name} {image.path} ({image.name}, {image.arch}): not rebuilt")
                images[request.key] = self.stage(f"build {request.name} {image.arch}" if many else "build",
                                                 "farm.build", lambda: image)
                self.hooks.image_built(name=image.name, entry={"dir": str(image.path), **image.manifest, "given": True})
                return image
            name = f"build {request.name}" + (f" (host of {carried.name})" if carried else "") if many else "build"
            built = images[request.key] = self.stage(name, "farm.build", lambda: builder(request, carried))
            self.hooks.image_built(name=built.name, entry={"dir": str(built.path), **built.manifest})
            return built

        for request in tops:
            get(request)
        return lambda env, setup: images[requests[env.path, setup.name].key]

    def flow(self, setup: Setup, env: EnvFile | None = None) -> BootFlow:
        """The setup's boot flow (on ``env``'s target): the injected one, else the one its pipeline file
        chose (farm.flows)."""
        if self.flow_for is not None:
            return self.flow_for(setup)
        ports = tuple(dict.fromkeys(p for b in self.pipeline.benchmarks
                                       for p in self.registry[b.name].ports_for(b.params)))
        return setup.flow.make(FlowSetup(cpu_frequency_khz=setup.cpu_frequency_khz, ports=ports, cpus=setup.cpus,
                                         arch=env.arch if env is not None and env.arch != "unknown" else ""))

    # --- a boot and its benchmarks ---
    def boot_and_bench(self, plan: BootPlan, image: Image, console: ConsoleLog) -> None:
        env, setup, label = plan.env, plan.setup, plan.label
        names = [(lb, b.name) for b in self.pipeline.benchmarks for lb in plan.bench_labels]
        if self.done and all(n in self.done for n in names):
            self.hooks.say(text=f"boot {label}: done in the resumed run, skipped")
            return
        flow = self.flow(setup, env)
        t0 = time.monotonic()
        booted_ok = False
        guarded = False  # past the lock check: a failure from here on is the place's (its health record)
        boot_name = f"boot {label}"
        self.hooks.stage_started(name=boot_name)
        self.hooks.say(text=f"boot {label} ({env.path}) ...")
        try:
            self.before_board(label)
            guarded = True
            request = BootRequest(env, image, f"{self.run.run_id}-{plan.job}", console, setup.bootargs,
                                  self.pipeline.boot_attempts)
            with flow.boot(request) as booted:
                check_handed_over(booted, setup)
                facts = booted.read_facts()
                frequency, source = cpu_frequency(facts, self.pipeline, env, setup)
                ctx = BenchContext(booted, facts, lambda text: self.hooks.say(text=text),
                                   lambda name, entry: self.hooks.program_built(name=name, entry=entry))
                settled = self.settle(ctx, label)
                self.hooks.boot_recorded(target=env.target_name, env=str(env.path), arch=env.arch, boot={
                    "label": label, "setup": setup.name, "repeat": plan.repeat, "image": image.name,
                    "image_key": image.manifest["key"], "flow": flow.kind, **booted.record(), **facts.as_dict(),
                    "frequency_hz": frequency, "frequency_source": source,
                    **({"settle": settled.as_dict()} if settled is not None else {})})
                self.hooks.stage_ended(stage=Stage(Case(boot_name, "farm.boot", time.monotonic() - t0, "pass", output="\n".join(
                    [*(f"retried after {f}" for f in booted.failed_attempts),
                     *(f"retyped (echo differed): {line}" for line in booted.retyped)])), label))
                booted_ok = True
                self.hooks.say(text=f"boot {label} ok in {booted.boot_seconds:.1f}s: {facts.cpus or '?'} cpus, "
                               f"{facts.kernel}, address {facts.address or '-'}")
                self.hooks.boot_outcome(label=label, booted=True, infrastructure_failure=False,
                                        power_ons=len(booted.failed_attempts) + 1)
                boot_flags = (UNSETTLED,) if settled is not None and not settled.settled and not settled.skipped else ()
                n = self.pipeline.repeats_in_boot
                for bench in self.pipeline.benchmarks:
                    spec = self.registry[bench.name]
                    for i, in_boot in enumerate(plan.bench_labels):  # records: repeat * n + i
                        self.run_benchmark(ctx, bench, frequency, RunContext(
                            run_id=self.run.run_id, target=env.target_name, arch=env.arch, setup=setup.name,
                            image=image.name, suite=spec.suite, repeat=plan.repeat * n + i), in_boot,
                            cycle_source=CYCLE_SOURCE_OF_FREQUENCY.get(source), twin=booted.emulated,
                            flags=boot_flags)
        except JobError as exc:
            if not booted_ok:  # bad input found only at boot (e.g. a value the bootloader refuses): the boot's case says so
                self.hooks.stage_ended(stage=Stage(Case(boot_name, "farm.boot", time.monotonic() - t0, "error",
                                                  str(exc).splitlines()[0], str(exc)), label))
            raise
        except Exception as exc:
            if (interrupt := interrupt_in(exc)) is not None:  # Ctrl-C/SIGTERM, whatever its unwinding raised
                raise interrupt from None
            # the lab failed (error), or the image did not boot (failure): either way the next target
            # or setup still runs, and what this boot measured before is already in results.csv
            if not isinstance(exc, FarmError):
                exc = InfrastructureError(f"{env.target_name}: {type(exc).__name__}: {exc}")
            self.fail(exc)
            if booted_ok:  # a benchmark's case already says what happened
                return
            attempts = getattr(exc, "failed_attempts", [])
            if guarded and exc.kind == "infrastructure":
                self.hooks.boot_outcome(label=label, booted=False, infrastructure_failure=True,
                                        power_ons=max(1, len(attempts)))
            kind = "failure" if exc.kind == "test" else "error"
            self.hooks.stage_ended(stage=Stage(Case(boot_name, "farm.boot", time.monotonic() - t0, kind,
                                              str(exc).splitlines()[0], "\n".join([*attempts, str(exc)])), label))
            self.hooks.boot_recorded(target=env.target_name, env=str(env.path), arch=env.arch, boot={
                "label": label, "setup": setup.name, "repeat": plan.repeat, "image": image.name, "flow": flow.kind,
                "failed": str(exc).splitlines()[0], "failed_attempts": attempts})
            self.hooks.say(text=f"boot {label} {kind.upper()}: {exc}")

    def settle(self, ctx: BenchContext, label: str) -> Settled | None:
        """Wait for the boot to settle by the pipeline's rule (farm.run.settle); None without one."""
        rule = self.pipeline.experiment.settle
        if rule is None:
            return None
        settled = settle(ctx.cpu_windows(), rule)
        self.hooks.say(text=f"boot {label}: {settled.describe()}")
        return settled

    def run_benchmark(self, ctx: BenchContext, bench: Benchmark, frequency: float | None, rc: RunContext,
                      label: str, *, cycle_source: str | None = None, twin: bool = False,
                      flags: tuple[str, ...] = ()) -> None:
        """One benchmark run's stage; its cycles/byte figures say where their cycles came from: its own
        (a counter, the clock read around it), else ``cycle_source`` (the run's frequency: ``frequency``),
        and ``twin`` (a QEMU twin's counter or clock: never joined with a board's); its CPU figures say
        which CPU they are of (``cores=``: the booted target's ``cpu_scope`` where they do not say). Its records carry
        the sanity flags (farm.results.sanity): the boot's ``flags`` and what breaks physical sense."""
        spec = self.registry[bench.name]
        name = bench_case_name(spec.suite, bench.name, label)
        classname = f"farm.bench.{spec.suite}"
        if (label, bench.name) in self.done:
            self.hooks.say(text=f"{name}: done in the resumed run, skipped")
            return
        self.hooks.stage_started(name=name)
        self.hooks.say(text=f"{name} ...")
        t0 = time.monotonic()

        def ended(kind: str, message: str = "", output: str = "") -> None:
            self.hooks.stage_ended(stage=Stage(Case(name, classname, time.monotonic() - t0, kind, message, output),
                                         label, bench.name))
        try:
            self.before_board(label)
            measurements = spec.run(ctx, bench.params)
        except BenchmarkError as exc:
            # a row in results.csv too (metric "failed"), so a failure shows where the numbers are read
            failed = Measurement(bench.name, "failed", 1.0, "count", params_text(bench.given))
            self.hooks.records(records=[rc.record(failed)])
            self.hooks.benchmark_failed(failure={"target": rc.target, "setup": rc.setup, "repeat": rc.repeat,
                                         "benchmark": bench.name, "message": str(exc)})
            ended("failure", str(exc))
            self.fail(exc)
            self.hooks.say(text=f"{name} FAILED: {exc}")
            return
        except JobError as exc:
            ended("error", str(exc).splitlines()[0], str(exc))
            raise
        except Exception as exc:  # the board or its console went away mid-benchmark: the boot is over
            if (interrupt := interrupt_in(exc)) is not None:
                raise interrupt from None
            if not isinstance(exc, FarmError):
                exc = InfrastructureError(f"{name}: {type(exc).__name__}: {exc}")
            kind = "failure" if exc.kind == "test" else "error"
            ended(kind, str(exc).splitlines()[0], str(exc))
            self.hooks.say(text=f"{name} {kind.upper()}: {str(exc).splitlines()[0]}")
            raise exc
        records = [rc.record(m) for m in measurements]
        if frequency and spec.cycles_per_byte:  # the registration says whether cycles/byte applies
            records += cycles_per_byte(records, {rc.target: frequency})
        records = with_cycle_source(records, cycle_source, twin=twin)
        # a CPU figure that does not say its CPU (a flow's channel's say it) is of the shell's CPU
        records = with_cpu_scope(records, ctx.cpu_scope)
        window = getattr(bench.params, "seconds", None) if bench.name == SWEEP else None
        records = flag_records(records, window_seconds=window, boot_flags=flags)
        if (flagged := sorted({f for r in records for f in flags_of(r)})):
            self.hooks.say(text=f"{name}: flagged {', '.join(flagged)} (farm.results.sanity)")
        self.hooks.records(records=records)
        if not records:
            ended("failure", "no measurements")
            self.fail_code(EXIT_TEST_FAILURE)
        else:
            ended("pass", output="\n".join(f"{r.metric}[{r.params}] = {human(r.value, r.unit)}" for r in records))
        self.hooks.say(text=f"{name} ok in {time.monotonic() - t0:.1f}s: {len(records)} records")


def check_handed_over(booted: object, setup: Setup) -> None:
    """The booted target is what its setup's flow promised (farm.boot.target: every target a
    ``BootedTarget``, and what ``FlowType.gives``: the pipeline's benchmarks were checked against that
    promise when the file was read); a flow that breaks it is a JobError naming what is missing."""
    if (missing := not_implemented(booted, (BootedTarget, *setup.flow.type.gives))):
        raise JobError(f"setup {setup.name}: its flow, {setup.flow.name}, gives {what(setup.flow.type.gives)}, and "
                       f"handed over a {type(booted).__name__}, which is no {', no '.join(p.__name__ for p in missing)}")


def params_text(params: dict[str, Any]) -> dict[str, str]:
    return {k: ",".join(map(str, v)) if isinstance(v, list) else str(v) for k, v in params.items()}


def cpu_frequency(facts: TargetFacts, pipeline: Pipeline, env: EnvFile,
                  setup: Setup | None = None) -> tuple[float | None, str]:
    """The target's CPU frequency and where it came from: the target itself (cpufreq, cpuinfo), else
    the setup's ``cpu_frequency_khz`` (a twin runs at none: its nominal value), else the pipeline's
    ``cpu_frequency_hz``, else the env file's option of that name."""
    if facts.frequency_hz:
        return facts.frequency_hz, facts.frequency_source
    if setup is not None and setup.cpu_frequency_khz:
        return setup.cpu_frequency_khz * 1e3, "setup"
    if pipeline.cpu_frequency_hz:
        return pipeline.cpu_frequency_hz, "pipeline"
    if env.options.cpu_frequency_hz is not None:  # checked when the env file was read
        return env.options.cpu_frequency_hz, "env"
    return None, "unknown"
