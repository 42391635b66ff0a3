"""The runner: walks a pipeline's stages and tells its listeners (farm.run.events) what happens.

    build images -> for each target x setup x repeat: boot (a flow) -> benchmarks -> power off

Every stage is a junit testcase. A boot that fails does not stop the run: the next target or setup
still runs, and what was measured before is already in results.csv. A job error (bad input) stops it.
The runner knows boots only through a boot flow (farm.boot.flow), so a test can inject one that
boots nothing, and the guest flow composes with the netboot flow without the runner knowing.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Mapping

import attrs

from ..measure import BenchmarkError
from ..bench.context import BenchContext
from ..bench.registry import BENCHMARKS
from ..boot.console_log import ConsoleLog
from ..boot.facts import TargetFacts, pin_frequency, read_facts
from ..boot.flow import BootFlow, BootRequest, NetbootFlow
from ..boot.session import EnvFile
from ..errors import EXIT_INFRA_ERROR, EXIT_JOB_ERROR, EXIT_OK, EXIT_TEST_FAILURE, FarmError, InfrastructureError, JobError, interrupt_in
from ..images.build import Image, build
from ..results.cycles import cycles_per_byte
from ..results.junit import Case
from ..measure import Measurement
from ..measure.units import human
from ..results.record import RunContext
from .events import Hooks
from .model import Benchmark, Pipeline, Setup
from .rundir import RunDir, Stage

@attrs.frozen
class BootPlan:
    """One boot of the run: a target, a setup, a repeat, and the labels of its benchmark runs."""

    env: EnvFile
    setup: Setup
    repeat: int
    label: str  # target/setup[/repeat]
    bench_labels: tuple[str, ...]  # label, or label#i per repeat inside the boot

    @property
    def job(self) -> str:
        return f"{self.env.target_name}-{self.setup.name}-{self.repeat}"


def plan_boots(pipeline: Pipeline, envs: list[EnvFile]) -> list[BootPlan]:
    plans = []
    for env in envs:
        for setup in pipeline.setups:
            for repeat in range(pipeline.repeats):
                label = f"{env.target_name}/{setup.name}" + (f"/{repeat}" if pipeline.repeats > 1 else "")
                n = pipeline.repeats_in_boot
                plans.append(BootPlan(env, setup, repeat, label,
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
    registry: Mapping[str, Any] = BENCHMARKS
    #: (label, benchmark) pairs that passed in the run being resumed: not measured again
    done: frozenset[tuple[str, str]] = frozenset()
    #: how the run ends so far: the worst exit code of what failed (the runner's, told in run_ended)
    status: int = EXIT_OK

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

    def build_images(self, envs: list[EnvFile], given: dict[str, Image],
                     builder: Callable[..., Image] | None = None) -> Callable[[EnvFile, Setup], Image]:
        """Build every image the boots need, once each: a setup's own recipe or the pipeline's for the
        architecture (``--image`` gives that one built), and for a setup with a guest, the guest's image
        and then the host image (the recipe plus QEMU and the guest, farm.images.host)."""
        builder = builder or build
        images: dict[str, Image] = {}

        def bare(env: EnvFile, setup: Setup) -> str:  # a setup's own image is built even with --image
            return f"--image {env.arch}" if setup.image is None and env.arch in given \
                else str(self.pipeline.recipe_for(env.arch, setup))

        def key(env: EnvFile, setup: Setup) -> str:
            if setup.guest is None:
                return bare(env, setup)
            guest = str(setup.guest.image) if setup.guest.image else bare(env, setup)
            return f"{self.pipeline.recipe_for(env.arch, attrs.evolve(setup, guest=None))} +guest {guest}"

        def get(k: str) -> Image:
            if k in images:
                return images[k]
            if " +guest " in k:
                host, guest = k.split(" +guest ")
                guest_image = get(guest)
                name = f"build {Path(host).stem} (host of {guest_image.name})"
                images[k] = self.stage(name, "farm.build", lambda: builder(Path(host), guest=guest_image))
            elif k.startswith("--image "):
                image = given[k.split()[-1]]
                self.hooks.say(text=f"build: --image {image.path} ({image.name}, {image.arch}): not rebuilt")
                images[k] = self.stage(name_of(k), "farm.build", lambda: image)
                self.hooks.image_built(name=image.name, entry={"dir": str(image.path), **image.manifest, "given": True})
                return images[k]
            else:
                images[k] = self.stage(name_of(k), "farm.build", lambda: builder(Path(k)))
            self.hooks.image_built(name=images[k].name, entry={"dir": str(images[k].path), **images[k].manifest})
            return images[k]

        keys = list(dict.fromkeys(key(e, s) for e in envs for s in self.pipeline.setups))
        many = len(keys) > 1 or any(" +guest " in k for k in keys)

        def name_of(k: str) -> str:
            return f"build {Path(k).stem}" if many else "build"

        for k in keys:
            get(k)
        return lambda env, setup: images[key(env, setup)]

    def flow(self, setup: Setup) -> BootFlow:
        """The setup's boot flow: the injected one, else netboot, or host-then-guest for a setup with a guest."""
        if self.flow_for is not None:
            return self.flow_for(setup)
        if setup.guest is None:
            return NetbootFlow()
        from ..boot.guestflow import GuestFlow

        ports = tuple(dict.fromkeys(p for b in self.pipeline.benchmarks for p in self.registry[b.name].ports))
        return GuestFlow(setup.guest, ports, host_cpu_khz=setup.cpu_frequency_khz)

    # --- a boot and its benchmarks ---
    def boot_and_bench(self, plan: BootPlan, image: Image, console: ConsoleLog) -> None:
        env, setup, label = plan.env, plan.setup, plan.label
        names = [(lb, b.name) for b in self.pipeline.benchmarks for lb in plan.bench_labels]
        if self.done and all(n in self.done for n in names):
            self.hooks.say(text=f"boot {label}: done in the resumed run, skipped")
            return
        flow = self.flow(setup)
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
                if setup.cpu_frequency_khz and setup.guest is None:  # a guest flow pins its host
                    pin_frequency(booted.shell, booted.name, setup.cpu_frequency_khz)
                facts = read_facts(booted.shell)
                if getattr(booted, "reach_address", None):  # a guest: the lab host reaches it through its host's address
                    facts = attrs.evolve(facts, address=booted.reach_address)
                frequency, source = cpu_frequency(facts, self.pipeline, env)
                self.hooks.boot_recorded(target=env.target_name, env=str(env.path), arch=env.arch, boot={
                    "label": label, "setup": setup.name, "repeat": plan.repeat, "image": image.name,
                    "image_key": image.manifest["key"], "flow": flow.kind,
                    "boot_seconds": round(booted.boot_seconds, 3), "failed_attempts": booted.failed_attempts,
                    "retyped": booted.retyped, **facts.as_dict(), "frequency_hz": frequency,
                    "frequency_source": source, **({"topology": t} if (t := getattr(booted, "topology", None)) else {}),
                    **({"guest_seconds": round(g, 3)} if (g := getattr(booted, "guest_seconds", None)) else {}),
                    **({"dtb": d} if (d := getattr(booted, "dtb", None)) else {})})
                self.hooks.stage_ended(stage=Stage(Case(boot_name, "farm.boot", time.monotonic() - t0, "pass", output="\n".join(
                    [*(f"retried after {f}" for f in booted.failed_attempts),
                     *(f"retyped (echo differed): {line}" for line in booted.retyped)])), label))
                booted_ok = True
                self.hooks.say(text=f"boot {label} ok in {booted.boot_seconds:.1f}s: {facts.cpus} cpus, "
                               f"{facts.kernel}, address {facts.address or '-'}")
                self.hooks.boot_outcome(label=label, booted=True, infrastructure_failure=False)
                ctx = BenchContext(booted, facts, lambda text: self.hooks.say(text=text))
                n = self.pipeline.repeats_in_boot
                for bench in self.pipeline.benchmarks:
                    spec = self.registry[bench.name]
                    for i, in_boot in enumerate(plan.bench_labels):  # records: repeat * n + i
                        self.run_benchmark(ctx, bench, frequency, RunContext(
                            run_id=self.run.run_id, target=env.target_name, arch=env.arch, setup=setup.name,
                            image=image.name, suite=spec.suite, repeat=plan.repeat * n + i), in_boot)
        except JobError as exc:
            if not booted_ok:  # bad input found only at boot (e.g. a value U-Boot refuses): the boot's case says so
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
            if guarded and exc.kind == "infrastructure":
                self.hooks.boot_outcome(label=label, booted=False, infrastructure_failure=True)
            kind = "failure" if exc.kind == "test" else "error"
            attempts = getattr(exc, "failed_attempts", [])
            self.hooks.stage_ended(stage=Stage(Case(boot_name, "farm.boot", time.monotonic() - t0, kind,
                                              str(exc).splitlines()[0], "\n".join([*attempts, str(exc)])), label))
            self.hooks.boot_recorded(target=env.target_name, env=str(env.path), arch=env.arch, boot={
                "label": label, "setup": setup.name, "repeat": plan.repeat, "image": image.name, "flow": flow.kind,
                "failed": str(exc).splitlines()[0], "failed_attempts": attempts})
            self.hooks.say(text=f"boot {label} {kind.upper()}: {exc}")

    def run_benchmark(self, ctx: BenchContext, bench: Benchmark, frequency: float | None, rc: RunContext,
                      label: str) -> None:
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
            self.hooks.records(records=[rc.record(Measurement(bench.name, "failed", 1.0, "count", params_text(bench.params)))])
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
        self.hooks.records(records=records)
        if not records:
            ended("failure", "no measurements")
            self.fail_code(EXIT_TEST_FAILURE)
        else:
            ended("pass", output="\n".join(f"{r.metric}[{r.params}] = {human(r.value, r.unit)}" for r in records))
        self.hooks.say(text=f"{name} ok in {time.monotonic() - t0:.1f}s: {len(records)} records")


def params_text(params: dict[str, Any]) -> dict[str, str]:
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
