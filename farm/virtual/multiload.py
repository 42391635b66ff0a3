"""The farm at lab scale, with the lab failing under it: many CI jobs on a multi-host virtual farm.

    python -m farm.virtual.multiload --dir DIR [--jobs 20] [--hosts 3] [--places 4] [--generators 2]
                                     [--form short|full]

:mod:`farm.virtual.multihost` brings up lab hosts, stand-in boards and load generators in network
namespaces around one coordinator. Then JOBS ``farm run PIPELINE --farm board=standin`` processes
start at once, each as a CI job on a runner of its own (its own lock owner, ``LG_HOSTNAME`` /
``LG_USERNAME``), at priorities 10, 5, 0, 0, … (``--farm-prio``); half run a network sweep through
the load generator wired to their board (reserved with it), half a crypto benchmark. A job that
ends with exit 3 (the lab failed) is started again, as GitLab's ``retry: exit_codes: [3]`` does,
up to ``attempts`` times in all. Meanwhile the faults of :data:`FAULTS` happen at their times:

- a board that never boots (from the start; mended later, then ``farm health check``-ed back),
- a lab host's exporter killed mid-job (its supervisor starts it again, as systemd does),
- the coordinator restarted (it forgets every lock and reservation),
- a lab host's network cut for 30 s (its link down on the bridge), then restored.

What is measured, and printed (:func:`report`):

- **holds**: every power-on of every board, with the jobs whose files it loaded over TFTP (the
  board's own log, :mod:`farm.virtual.standin`), every lock as the coordinator told a watcher, and
  every ``farm_load`` run each load generator saw (:mod:`farm.virtual.sessionlog`). A **double hold**
  is a power-on of a board that loaded two jobs' files, two owners of one place at once, or two
  ``farm_load`` runs of one generator at once; there must be none;
- **outcomes**: every job ends, passed, or after a class-3 attempt with a retry that passed;
- **nothing written half**: every attempt's run directory has a final run.json (not ``running``),
  and a results.csv and junit.xml that parse, and no temporary file;
- **healthy again**: at the end every place is free, ``farm_health=ok``, without leases or
  reservations; the waits for a place (the ``reserve`` stage) per priority.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Callable

import attrs

from ..coordinator import Coordinator
from . import multihost

ROOT = Path(__file__).resolve().parents[2]
PRIOS = (10.0, 5.0, 0.0, 0.0)
CUT_SECONDS = 30.0
RETRY_AFTER = 1.0  # seconds between a job's exit 3 and its retry


@attrs.frozen
class Fault:
    at: float            # seconds after the jobs start, at the earliest
    kind: str            # never-boots, kill-exporter, restart-coordinator, cut-network, kill-load, mend
    target: str = ""     # a host, a place, a load generator
    seconds: float = 0.0  # how long (a network cut)
    #: struck only once this many places are locked (of the host; of the farm for the coordinator), so
    #: that it hits jobs at work however fast the machine runs them; at ``at + WAIT_FOR_WORK`` regardless
    when_held: int = 0


#: the longest a fault waits for the jobs it is meant to hit
WAIT_FOR_WORK = 120.0


def faults(form: str, farm: multihost.MultiHostFarm) -> list[Fault]:
    """The fault plan, each striking while jobs work on what it breaks: the short form (CI) one after
    the other, the full form with time between them."""
    hosts = [h.name for h in farm.hosts]
    per_host = len(farm.boards) // len(hosts)
    dead = farm.boards[-1].place  # the last board of the last host never boots
    gap = {"short": 0.0, "full": 20.0}[form]
    return [Fault(0.0, "never-boots", dead),
            Fault(1.0, "kill-exporter", hosts[0], when_held=max(1, per_host // 2)),
            Fault(1.0 + gap, "kill-load", farm.generators[0].name if farm.generators else ""),
            Fault(1.0 + 2 * gap, "restart-coordinator", when_held=max(1, len(farm.boards) // 2)),
            Fault(10.0 + 3 * gap, "cut-network", hosts[1 % len(hosts)], CUT_SECONDS, when_held=max(1, per_host // 2)),
            Fault(20.0 + 3 * gap + CUT_SECONDS, "mend", dead)]


# --- the jobs ----------------------------------------------------------------------------------------

PIPELINE = """\
name: {name}
image: {root}/images/maaxboard-bench.yaml   # not built: every job boots --image (the stand-in image)
targets: [{{env: standin.yaml}}]
boot_attempts: 2
benchmarks:
{benchmarks}"""
BENCHMARKS = {
    "bench": "  - openssl-speed: {algorithms: [sha256], seconds: 1, block: 16384}\n",
    "sweep": "  - sweep: {method: ipbench-echo, loads: [1, 2], packet_size: 1472, duration: 1, warmup: 0.2, cooldown: 0.2, generator: place}\n",
    "health": "",
}


def write_pipelines(farm: multihost.MultiHostFarm) -> dict[str, Path]:
    paths = {}
    for kind, benchmarks in BENCHMARKS.items():
        path = farm.env_file.parent / f"{kind}.yaml"
        path.write_text(PIPELINE.format(name=f"multihost-{kind}", root=ROOT, benchmarks=benchmarks or "  []\n"))
        paths[kind] = path
    return paths


@attrs.define
class Attempt:
    job: str
    number: int
    out: Path
    started: float
    process: subprocess.Popen | None = None
    ended: float | None = None
    code: int | None = None


@attrs.define
class Job:
    name: str
    prio: float
    kind: str             # bench | sweep
    owner: str            # LG_HOSTNAME/LG_USERNAME
    attempts: list[Attempt] = attrs.field(factory=list)

    @property
    def codes(self) -> list[int | None]:
        return [a.code for a in self.attempts]


def start_attempt(job: Job, farm: multihost.MultiHostFarm, pipelines: dict[str, Path], timeout: float) -> Attempt:
    host, user = job.owner.split("/")
    out = farm.directory / "runs" / f"{job.name}-{len(job.attempts) + 1}"
    log = farm.directory / "runs" / f"{job.name}-{len(job.attempts) + 1}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "LG_HOSTNAME": host, "LG_USERNAME": user, "LG_COORDINATOR": farm.coordinator,
           "CI_JOB_ID": job.name, "FARM_DB": "none"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    argv = [sys.executable, "-m", "farm.cli", "run", str(pipelines[job.kind]), "--image", str(farm.image),
            "--farm", f"board={multihost.BOARD}", "--farm-prio", f"{job.prio:g}", "--farm-timeout", f"{timeout:g}",
            "--coordinator", farm.coordinator, "--out", str(out)]
    with open(log, "w") as f:
        proc = subprocess.Popen(argv, cwd=farm.directory, stdout=f, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL)
    attempt = Attempt(job.name, len(job.attempts) + 1, out, time.monotonic(), proc)
    job.attempts.append(attempt)
    return attempt


# --- watching the coordinator ------------------------------------------------------------------------

class LockWatcher(threading.Thread):
    """Who holds each place, as the coordinator says, on every change (reconnects after a restart)."""

    def __init__(self, address: str) -> None:
        super().__init__(daemon=True)
        self.address = address
        self.changes: list[tuple[float, str, str | None]] = []  # (t, place, owner now)
        self.reconnects = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        seen: dict[str, str | None] = {}
        while not self.stopping.is_set():
            try:
                with Coordinator(self.address, connect_timeout=5) as coord:
                    while not self.stopping.is_set() and coord.connected(timeout=2):
                        coord.sync()
                        now = time.monotonic()
                        for name, place in coord.places().items():
                            if seen.get(name, "-") != place.acquired:
                                seen[name] = place.acquired
                                self.changes.append((now, name, place.acquired))
                        coord.wait_for_change(0.5)
            except Exception:  # noqa: BLE001 - the coordinator restarts under it: watch again
                pass
            if not self.stopping.is_set():
                self.reconnects += 1
                for name in seen:  # a new coordinator holds no lock
                    if seen[name] is not None:
                        seen[name] = None
                        self.changes.append((time.monotonic(), name, None))
                time.sleep(0.5)

    def held_now(self) -> set[str]:
        """The places locked now, as last told."""
        now: dict[str, str | None] = {}
        for _, place, owner in list(self.changes):
            now[place] = owner
        return {place for place, owner in now.items() if owner}

    def holds(self) -> list[tuple[str, str, float, float]]:
        """(place, owner, from, to) of every lock seen."""
        open_: dict[str, tuple[str, float]] = {}
        spans = []
        for t, place, owner in sorted(self.changes):
            if place in open_:
                who, since = open_.pop(place)
                spans.append((place, who, since, t))
            if owner:
                open_[place] = (owner, t)
        spans += [(place, who, since, time.monotonic()) for place, (who, since) in open_.items()]
        return spans


# --- the checks (pure, on what the board, generators and coordinator recorded) ------------------------

def board_sessions(events: list[dict]) -> list[dict]:
    """A board's power-ons: from, to, and the jobs whose files it loaded."""
    sessions, current = [], None
    for e in events:
        if e["event"] == "power-on":
            current = {"from": e["t"], "to": None, "jobs": [], "fault": e.get("fault")}
            sessions.append(current)
        elif e["event"] == "tftp" and current is not None and e.get("found") and e.get("job"):
            if e["job"] not in current["jobs"]:
                current["jobs"].append(e["job"])
        elif e["event"] == "power-off" and current is not None:
            current["to"] = e["t"]
            current = None
    return sessions


def double_board_holds(sessions_by_place: dict[str, list[dict]]) -> list[str]:
    """Power-ons of one board that loaded two jobs' files: two jobs drove it at once."""
    return [f"{place}: one power-on at {s['from']:.1f} loaded the files of {', '.join(s['jobs'])}"
            for place, sessions in sorted(sessions_by_place.items()) for s in sessions if len(s["jobs"]) > 1]


def load_runs(events: list[dict]) -> list[tuple[float, float]]:
    """A generator's ``farm_load`` runs (its SSH sessions that ran the load): (from, to)."""
    started: dict[int, float] = {}
    runs = []
    for e in events:
        if e["event"] == "start" and "farm_load" in e.get("command", "") and "timeout -s KILL" in e["command"]:
            started[e["pid"]] = e["t"]
        elif e["event"] == "end" and e["pid"] in started:
            runs.append((started.pop(e["pid"]), e["t"]))
    runs += [(t, float("inf")) for t in started.values()]
    return sorted(runs)


def overlapping(spans: list[tuple[float, float]]) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    spans = sorted(spans)
    return [(a, b) for a, b in zip(spans, spans[1:]) if b[0] < a[1]]


def double_lock_holds(holds: list[tuple[str, str, float, float]]) -> list[str]:
    by_place: dict[str, list[tuple[str, float, float]]] = {}
    for place, owner, since, until in holds:
        by_place.setdefault(place, []).append((owner, since, until))
    found = []
    for place, spans in sorted(by_place.items()):
        spans.sort(key=lambda s: s[1])
        for (o1, _, u1), (o2, s2, _) in zip(spans, spans[1:]):
            if s2 < u1 and o1 != o2:
                found.append(f"{place}: {o2} from {s2:.1f} while {o1} until {u1:.1f}")
    return found


def run_whole(out: Path) -> str | None:
    """Why the run directory ``out`` is not whole, or None."""
    from ..results.csvout import read_records

    try:
        info = json.loads((out / "run.json").read_text())
    except (OSError, ValueError) as exc:
        return f"{out.name}: run.json: {exc}"
    if info.get("status") in (None, "running"):
        return f"{out.name}: run.json says {info.get('status')!r}: not final"
    try:
        if (out / "results.csv").exists():
            read_records(out / "results.csv")
        ET.parse(out / "junit.xml")
    except Exception as exc:  # noqa: BLE001 - any reason is the finding
        return f"{out.name}: {exc}"
    temporary = [p.name for p in out.rglob("*") if p.name.endswith(".tmp")]
    return f"{out.name}: temporary files left: {temporary}" if temporary else None


def why_not_passed(out: Path) -> str:
    """What ended an attempt that did not pass: its first stage that did not pass, and that stage's
    message's first line (run.json), or why run.json cannot tell."""
    try:
        stages = json.loads((out / "run.json").read_text()).get("stages", [])
    except (OSError, ValueError) as exc:
        return f"run.json: {exc}"
    for stage in stages:
        if stage.get("kind") not in ("pass", "skipped"):
            message = (stage.get("message") or "").splitlines()
            return f"{stage.get('name')}: {message[0][:200] if message else stage.get('kind')}"
    return "no stage failed"


def _read_jsonl(path: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except OSError:
        return []


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


# --- the run -----------------------------------------------------------------------------------------

def run(directory: Path, *, jobs: int = 20, hosts: int = 3, places_per_host: int = 4, generators: int = 2,
        form: str = "short", attempts: int = 3, deadline: float = 900.0, say: Callable[[str], None] = print) -> dict:
    t_up = time.monotonic()
    farm = multihost.start(directory, hosts=hosts, places_per_host=places_per_host, generators=generators, say=say)
    try:
        say(f"farm up in {time.monotonic() - t_up:.0f} s")
        return _run(farm, jobs=jobs, form=form, attempts=attempts, deadline=deadline, say=say)
    finally:
        multihost.stop(directory)


def _run(farm: multihost.MultiHostFarm, *, jobs: int, form: str, attempts: int, deadline: float,
         say: Callable[[str], None]) -> dict:
    pipelines = write_pipelines(farm)
    plan = faults(form, farm)
    watcher = LockWatcher(farm.coordinator)
    watcher.start()
    # priorities 10, 5, 0, 0 in turn; sweeps and crypto runs alternate so that each priority has both
    all_jobs = [Job(f"job{n:02d}", PRIOS[n % len(PRIOS)], "sweep" if (n + n // len(PRIOS)) % 2 == 0 else "bench",
                    f"runner-{n % 4}/job{n:02d}") for n in range(jobs)]
    done_faults: list[dict] = []
    t0 = time.monotonic()

    def at(t: float) -> float:
        return round(t - t0, 1)

    def apply(fault: Fault) -> None:
        if fault.kind == "never-boots":
            farm.break_board(fault.target)
        elif fault.kind == "kill-exporter":
            pid = farm.kill_exporter(fault.target)
            done_faults.append({"t": at(time.monotonic()), "fault": f"exporter of {fault.target} killed (pid {pid})",
                                "host": fault.target, "when": time.monotonic()})
            return
        elif fault.kind == "restart-coordinator":
            when = time.monotonic()
            farm.restart_coordinator()
            done_faults.append({"t": at(when), "fault": f"coordinator restarted (back {time.monotonic() - when:.1f} s "
                                                        "later)", "host": "*", "when": when})
            return
        elif fault.kind == "cut-network":
            farm.cut(fault.target)
            done_faults.append({"t": at(time.monotonic()), "fault": f"network of {fault.target} cut for "
                                                                    f"{fault.seconds:g} s",
                                "host": fault.target, "when": time.monotonic()})
            time.sleep(fault.seconds)
            farm.restore(fault.target)
            done_faults.append({"t": at(time.monotonic()), "fault": f"network of {fault.target} restored"})
            return
        elif fault.kind == "kill-load":
            killed = farm.kill_load(fault.target, wait=WAIT_FOR_WORK)
            done_faults.append({"t": at(time.monotonic()), "fault": f"load generator {fault.target} lost mid-sweep "
                                f"(farm_load pid {killed} killed)" if killed else
                                f"load generator {fault.target}: no sweep ran there to lose"})
            return
        elif fault.kind == "mend":
            farm.mend_board(fault.target)
        done_faults.append({"t": at(time.monotonic()), "fault": {
            "never-boots": f"board {fault.target} never boots", "mend": f"board {fault.target} mended"}[fault.kind]})

    host_of = {b.place: b.host for b in farm.boards}

    def busy(fault: Fault) -> bool:
        held = watcher.held_now()
        if fault.kind == "restart-coordinator":
            return len(held & set(host_of)) >= fault.when_held
        return sum(1 for p in held if host_of.get(p) == fault.target) >= fault.when_held

    def fault_thread(later: list[Fault]) -> None:
        for fault in later:
            time.sleep(max(0.0, t0 + fault.at - time.monotonic()))
            give_up = time.monotonic() + WAIT_FOR_WORK
            while fault.when_held and not busy(fault) and time.monotonic() < give_up:
                time.sleep(0.2)
            try:
                apply(fault)
            except Exception as exc:  # noqa: BLE001 - reported, the run goes on
                done_faults.append({"t": at(time.monotonic()), "fault": f"{fault.kind} failed: {exc}"})

    for fault in (f for f in plan if f.at <= 0):  # before the first job
        apply(fault)
    faulting = threading.Thread(target=fault_thread, args=([f for f in plan if f.at > 0],), daemon=True)
    faulting.start()
    job_timeout = max(120.0, deadline / 2)
    for job in all_jobs:
        start_attempt(job, farm, pipelines, job_timeout)
    say(f"{jobs} jobs started (priorities {', '.join(f'{p:g}' for p in PRIOS)}, ...); faults: "
        + "; ".join(f"{f.kind} {f.target} at {f.at:g} s".replace("  ", " ") for f in plan))
    end = t0 + deadline
    while time.monotonic() < end:
        running = 0
        for job in all_jobs:
            last = job.attempts[-1]
            if last.code is None:
                code = last.process.poll()
                if code is None:
                    running += 1
                    continue
                last.code, last.ended = code, time.monotonic()
                say(f"  t={at(last.ended):>6} {job.name} attempt {last.number}: exit {code}")
            if last.code == 3 and len(job.attempts) < attempts:
                if time.monotonic() >= last.ended + RETRY_AFTER:  # as a CI system's retry: a new job, later
                    start_attempt(job, farm, pipelines, job_timeout)
                running += 1
        if not running and not faulting.is_alive():
            break
        time.sleep(0.5)
    stuck = [job.name for job in all_jobs if job.attempts[-1].code is None]
    for job in all_jobs:
        last = job.attempts[-1]
        if last.code is None and last.process is not None:
            last.process.kill()
            last.process.wait()
    jobs_ended = time.monotonic()
    faulting.join(timeout=CUT_SECONDS + 30)

    # the board that never booted, mended: a health check puts it back, as a lab's scheduled job does
    health_checks = []
    with Coordinator(farm.coordinator) as coord:
        unhealthy = [name for name, p in coord.places().items() if p.tags.get("farm_health") == "unhealthy"]
    for place in unhealthy:
        out = farm.directory / "runs" / f"health-{place}"
        proc = subprocess.run([sys.executable, "-m", "farm.cli", "run", str(pipelines["health"]), "--image",
                               str(farm.image), "--farm", f"name={place}", f"board={multihost.BOARD}",
                               "--health-check", "--farm-timeout", "120", "--coordinator", farm.coordinator,
                               "--out", str(out)], cwd=farm.directory, capture_output=True, text=True,
                              env={**os.environ, "FARM_DB": "none"}, timeout=300)
        health_checks.append({"place": place, "exit": proc.returncode})
        say(f"  health check of {place}: exit {proc.returncode}")
    # and the runners' scheduled `farm janitor`: lease records the coordinator's restart brought back
    janitor = subprocess.run([sys.executable, "-m", "farm.cli", "janitor", "--coordinator", farm.coordinator],
                             cwd=farm.directory, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "LG_HOSTNAME": "runner-0", "LG_USERNAME": "janitor"})
    forgot = [line for line in janitor.stdout.splitlines() if line.startswith("forgot")]
    say(f"  farm janitor: exit {janitor.returncode}, {len(forgot)} places with stale lease records")
    watcher.stopping.set()
    watcher.join(timeout=10)
    summary = summarise(farm, all_jobs, done_faults, watcher, stuck, health_checks, t0, jobs_ended)
    summary["janitor"] = {"exit": janitor.returncode, "forgot": forgot}
    return summary


def job_outcomes(jobs: list[Job]) -> tuple[dict[str, int], dict[str, list[int | None]], dict[str, list[str]]]:
    """How the jobs ended (counts by outcome), each job's exit codes, and what ended each attempt of
    a job that had one not pass (from the attempt's run.json)."""
    outcomes = {"passed first time": 0, "passed after a class-3 retry": 0, "class 3, retries spent": 0,
                "test failure": 0, "job error": 0, "other": 0}
    per_job, why = {}, {}
    for job in jobs:
        codes = job.codes
        per_job[job.name] = codes
        if any(code != 0 for code in codes):
            why[job.name] = [why_not_passed(a.out) if a.code != 0 else "passed" for a in job.attempts]
        if codes[-1] == 0:
            outcomes["passed first time" if len(codes) == 1 else "passed after a class-3 retry"] += 1
        elif codes[-1] == 3:
            outcomes["class 3, retries spent"] += 1
        elif codes[-1] == 1:
            outcomes["test failure"] += 1
        elif codes[-1] == 2:
            outcomes["job error"] += 1
        else:
            outcomes["other"] += 1
    return outcomes, per_job, why


def summarise(farm: multihost.MultiHostFarm, jobs: list[Job], done_faults: list[dict], watcher: LockWatcher,
              stuck: list[str], health_checks: list[dict], t0: float, jobs_ended: float) -> dict:
    sessions = {b.place: board_sessions(_read_jsonl(farm.board_dir(b) / "events.jsonl")) for b in farm.boards}
    generator_runs = {g.name: load_runs(_read_jsonl(farm.generator_log(g.name))) for g in farm.generators}
    lock_holds = watcher.holds()
    outcomes, per_job, why = job_outcomes(jobs)
    attempts = [a for job in jobs for a in job.attempts]
    broken = [problem for a in attempts if (problem := run_whole(a.out)) is not None]
    waits: dict[str, list[float]] = {}
    for job in jobs:
        for a in job.attempts:
            try:
                stages = json.loads((a.out / "run.json").read_text()).get("stages", [])
            except (OSError, ValueError):
                continue
            for s in stages:
                if s.get("classname") == "farm.place" and s.get("kind") == "pass":
                    waits.setdefault(f"{job.prio:g}", []).append(float(s["seconds"]))
    with Coordinator(farm.coordinator) as coord:
        coord.sync()
        left = {}
        for name, place in sorted(coord.places().items()):
            problems = []
            if place.acquired:
                problems.append(f"held by {place.acquired}")
            if place.reservation:
                problems.append(f"reserved ({place.reservation})")
            if place.tags.get("farm_health", "ok") != "ok":
                problems.append(f"farm_health={place.tags['farm_health']}")
            if any(k.startswith("farm_lease_") for k in place.tags):
                problems.append("a lease left")
            if problems:
                left[name] = problems
        reservations = len(coord.reservations())
    all_waits = [w for ws in waits.values() for w in ws]
    host_of = {b.place: b.host for b in farm.boards}
    for fault in done_faults:  # how many places of the host (of the farm: *) were held when it struck
        if "when" in fault:
            when = fault.pop("when")
            held = sorted({place for place, _, since, until in lock_holds if since <= when < until
                           and (fault["host"] == "*" or host_of.get(place) == fault["host"])})
            fault["places_held"] = held
    return {
        "jobs": len(jobs), "attempts": len(attempts), "hosts": len(farm.hosts), "places": len(farm.boards),
        "generators": len(farm.generators), "seconds": round(jobs_ended - t0, 1),
        "faults": done_faults,
        "outcomes": outcomes, "per_job": per_job, "why_not_passed": why, "stuck_jobs": stuck,
        "holds": {"board_power_ons": sum(len(s) for s in sessions.values()),
                  "boots": sum(1 for ss in sessions.values() for s in ss if s["jobs"]),
                  "locks_seen": len(lock_holds), "load_runs": sum(len(r) for r in generator_runs.values()),
                  "coordinator_reconnects": watcher.reconnects},
        "double_holds": {"boards": double_board_holds(sessions),
                         "locks": double_lock_holds(lock_holds),
                         "load_generators": [f"{g}: farm_load runs at {a[0]:.1f}-{a[1]:.1f} and {b[0]:.1f}-{b[1]:.1f}"
                                             for g, runs in generator_runs.items() for a, b in overlapping(runs)]},
        "runs_not_whole": broken, "health_checks": health_checks,
        "places_not_healthy_at_end": left, "reservations_left": reservations,
        "wait_for_a_place": {"n": len(all_waits),
                             **({"median_s": round(statistics.median(all_waits), 2),
                                 "p95_s": round(_percentile(all_waits, 0.95), 2)} if all_waits else {}),
                             "by_prio": {p: {"n": len(ws), "median_s": round(statistics.median(ws), 2)}
                                         for p, ws in sorted(waits.items(), key=lambda kv: -float(kv[0]))}},
    }


def report(summary: dict) -> str:
    """The summary as lines a person reads: jobs, holds, faults, outcomes."""
    o = summary["outcomes"]
    d = summary["double_holds"]
    h = summary["holds"]
    w = summary["wait_for_a_place"]
    lines = [
        f"jobs:     {summary['jobs']} jobs ({summary['attempts']} attempts) on {summary['places']} places of "
        f"{summary['hosts']} lab hosts and {summary['generators']} load generators, {summary['seconds']:g} s",
        f"holds:    {h['boots']} boots in {h['board_power_ons']} board power-ons, {h['locks_seen']} locks seen by the "
        f"coordinator, {h['load_runs']} farm_load runs; double holds: {len(d['boards'])} boards, {len(d['locks'])} "
        f"locks, {len(d['load_generators'])} load generators",
        "faults:   " + "; ".join(f"t={f['t']:g} s {f['fault']}" + (
            f" ({len(f['places_held'])} places held{'' if f.get('host') == '*' else ' there'})"
            if "places_held" in f else "") for f in summary["faults"]),
        "outcomes: " + ", ".join(f"{v} {k}" for k, v in o.items() if v) + (
            f"; stuck: {', '.join(summary['stuck_jobs'])}" if summary["stuck_jobs"] else ""),
        f"runs:     {summary['attempts'] - len(summary['runs_not_whole'])} of {summary['attempts']} run directories "
        "written whole" + (f" ({'; '.join(summary['runs_not_whole'][:3])})" if summary["runs_not_whole"] else ""),
        "places:   " + ("all free and healthy at the end, no lease, no reservation"
                        if not summary["places_not_healthy_at_end"] and not summary["reservations_left"]
                        else f"not so at the end: {summary['places_not_healthy_at_end']}, "
                             f"{summary['reservations_left']} reservations")
        + "".join(f"; health check of {c['place']}: exit {c['exit']}" for c in summary["health_checks"]),
        f"waits:    a place in {w.get('median_s', '-')} s median, {w.get('p95_s', '-')} s p95 (n={w['n']}); by prio "
        + ", ".join(f"{p}: {v['median_s']} s (n={v['n']})" for p, v in w["by_prio"].items()),
    ]
    return "\n".join(lines)


def promises_broken(summary: dict) -> list[str]:
    """What the farm promised and did not keep (empty: all kept)."""
    broken = []
    for kind, found in summary["double_holds"].items():
        broken += [f"double hold ({kind}): {f}" for f in found]
    o = summary["outcomes"]
    if o["passed first time"] + o["passed after a class-3 retry"] != summary["jobs"]:
        bad = {job: codes for job, codes in summary["per_job"].items() if codes[-1] != 0}
        broken.append(f"jobs that did not end passed: {bad}")
        for job in bad:
            broken += [f"  {job} attempt {n}: {why}" for n, why in enumerate(summary["why_not_passed"].get(job, []), 1)]
    if summary["stuck_jobs"]:
        broken.append(f"jobs that did not end: {summary['stuck_jobs']}")
    broken += [f"run not whole: {r}" for r in summary["runs_not_whole"]]
    if summary["places_not_healthy_at_end"] or summary["reservations_left"]:
        broken.append(f"places at the end: {summary['places_not_healthy_at_end']}, "
                      f"{summary['reservations_left']} reservations left")
    broken += [f"health check of {c['place']} exit {c['exit']}" for c in summary["health_checks"] if c["exit"] != 0]
    return broken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m farm.virtual.multiload", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--hosts", type=int, default=3)
    parser.add_argument("--places", type=int, default=4, help="places per lab host")
    parser.add_argument("--generators", type=int, default=2)
    parser.add_argument("--form", choices=("short", "full"), default="short")
    parser.add_argument("--json", type=Path, help="also write the whole summary here")
    args = parser.parse_args(argv)
    summary = run(args.dir, jobs=args.jobs, hosts=args.hosts, places_per_host=args.places,
                  generators=args.generators, form=args.form)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    print(report(summary))
    broken = promises_broken(summary)
    for line in broken:
        print(f"BROKEN: {line}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
