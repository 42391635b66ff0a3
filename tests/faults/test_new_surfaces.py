"""Issue 46: hostile and unlucky input on the newer surfaces (plugins, the archive and farm reproduce, farm lab's
state, system images), a test per class with its cases as parameters. None boots: fakes and recorded data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from farm.cli import main
from farm.errors import EXIT_OK
from farm.run import run_pipeline
from farm.run.events import ENTRY_POINT_GROUP
from tests.fakes import FakeFlow
from tests.unit.labdist import installed
from tests.unit.test_events import stored_runs
from tests.unit.test_runner import constant, pipeline, registry  # noqa: F401  (fixture)

DATA = Path(__file__).resolve().parents[1] / "data"

# ---------------------------------------------------------------------------------------------------------------
# A lab's listener that raises: reported (its name, the hook, the error); the run's own listeners, the store and
# the archive still hear the run; the exit code is the run's.

RAISING_LISTENER = '''
from farm.hookspecs import hookimpl

HOOK = {hook!r}


def _boom(*args):
    raise RuntimeError("the chat server is down")


globals()[HOOK] = hookimpl(_boom)
'''

RAISES_IN = ["stage_started", "before_board", "records", "run_ended", "run_published"]


@pytest.fixture
def raising_listener(tmp_path, monkeypatch, request):
    hook = request.param
    source = RAISING_LISTENER.format(hook=hook).replace("def _boom(*args)", f"def _boom({_args(hook)})")
    yield from installed(tmp_path / "site", monkeypatch, dist="mylab-chat", group=ENTRY_POINT_GROUP,
                         entry="chat = mylab_chat", module="mylab_chat", source=source)


def _args(hook: str) -> str:
    from farm.hookspecs import RunSpec
    import inspect

    return ", ".join(list(inspect.signature(getattr(RunSpec, hook)).parameters)[1:])


@pytest.mark.parametrize("raising_listener", RAISES_IN, indirect=True)
def test_a_labs_listener_that_raises_costs_the_run_nothing(raising_listener, pipeline, tmp_path,  # noqa: F811
                                                           monkeypatch, capsys, request):
    hook = request.node.callspec.params["raising_listener"]
    store = tmp_path / "results.db"
    monkeypatch.setenv("FARM_DB", str(store))
    run = run_pipeline(pipeline(setups=("a",)), out=tmp_path / "run", flow_for=lambda s: FakeFlow(),
                       registry=registry(count=constant))
    assert run.status == EXIT_OK
    assert stored_runs(str(store)) == {run.run_id: 1}
    err = capsys.readouterr().err
    assert (f"farm: warning: the listener 'chat' (mylab-chat 1.0, entry-point group farm) failed in {hook}: "
            "RuntimeError: the chat server is down") in err


@pytest.mark.parametrize("raising_listener", ["run_published"], indirect=True)
def test_an_import_is_stored_when_a_labs_listener_raises(raising_listener, tmp_path, monkeypatch, capsys):
    store = tmp_path / "results.db"
    monkeypatch.setenv("FARM_DB", str(store))
    out = tmp_path / "imported"
    assert main(["import", "iperf3", str(DATA / "iperf3-tcp.json"), "--setup", "lab", "--out", str(out)]) == EXIT_OK
    assert len(stored_runs(str(store))) == 1  # the import, stored
    err = capsys.readouterr().err
    assert "failed in run_published: RuntimeError: the chat server is down" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------------------------
# Nothing of the lab's history deleted on a guess: gc keeps a baseline's run by every run id farm takes it for,
# and refuses (exit 2, naming the baseline) when none can be read; --keep out of range is a job error.

def _archived_run(tmp_path, monkeypatch):
    from tests.unit.archive_helpers import archived_run

    return archived_run(tmp_path, monkeypatch, 1.0)


def _copied_by_hand(run, baseline: Path) -> None:
    baseline.mkdir(parents=True)
    for name in ("results.csv", "run.json"):
        (baseline / name).write_bytes((run.path / name).read_bytes())


BASELINE_DAMAGE = {
    "baseline.json unreadable": lambda b: (b / "baseline.json").write_text("{not json"),
    "baseline.json of another shape": lambda b: (b / "baseline.json").write_text('{"run_id": ["x"]}'),
    "copied by hand (no baseline.json)": lambda b: (b / "baseline.json").unlink(),
    "run.json gone, baseline.json unreadable": lambda b: ((b / "run.json").unlink(),
                                                          (b / "baseline.json").write_text("[]")),
}


@pytest.mark.parametrize("damage", BASELINE_DAMAGE, ids=list(BASELINE_DAMAGE))
def test_gc_keeps_a_baseline_s_run_whatever_its_baseline_json_says(tmp_path, monkeypatch, damage):
    from farm.archive import open_archive
    from farm.results.baselines import save_baseline

    run = _archived_run(tmp_path, monkeypatch)
    save_baseline(run.path, "release-1")
    BASELINE_DAMAGE[damage](tmp_path / "baselines" / "release-1")
    assert main(["archive", "gc", "--keep", "0"]) == EXIT_OK
    assert open_archive().run_ids() == [run.run_id]


def test_gc_refuses_when_no_run_id_of_a_baseline_can_be_read(tmp_path, monkeypatch, capsys):
    from farm.archive import open_archive

    run = _archived_run(tmp_path, monkeypatch)
    baseline = tmp_path / "baselines" / "by-hand"
    _copied_by_hand(run, baseline)
    (baseline / "run.json").write_text("{}")
    (baseline / "results.csv").write_text("target,value\nx,1\n")
    objects = open_archive().object_shas()
    assert main(["archive", "gc", "--keep", "0"]) == 2
    assert f"{baseline}: baseline by-hand: no run id can be read" in capsys.readouterr().err
    assert open_archive().run_ids() == [run.run_id] and open_archive().object_shas() == objects


@pytest.mark.parametrize("keep", ["99999999999w", "99999999999999999999d"])
def test_gc_refuses_an_age_out_of_range(tmp_path, monkeypatch, capsys, keep):
    monkeypatch.setenv("FARM_ARCHIVE", str(tmp_path / "archive"))
    assert main(["archive", "gc", "--keep", keep]) == 2
    err = capsys.readouterr().err
    assert f"--keep {keep!r}: an age of at most" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------------------------
# Archive records and objects are checked against their names: a record renamed or copied by hand is refused
# (naming the file and field), never another run reproduced; an http object longer than its size is refused
# without reading the rest; an http "archive" that is no archive is a clear error.

def test_a_record_whose_run_id_is_not_its_file_name_is_refused(tmp_path, monkeypatch, capsys):
    from farm.archive import open_archive

    run = _archived_run(tmp_path, monkeypatch)
    runs = tmp_path / "archive" / "runs"
    forged = runs / "20260101-000000-0000.json"
    forged.write_bytes((runs / f"{run.run_id}.json").read_bytes())
    with pytest.raises(Exception, match=rf"{forged}: run_id: '{run.run_id}' is not the run its file names "
                                        r"\('20260101-000000-0000'\)"):
        open_archive().record("20260101-000000-0000")
    assert main(["reproduce", "20260101-000000-0000", "--out", str(tmp_path / "again")]) == 2
    assert "is not the run its file names" in capsys.readouterr().err
    assert not (tmp_path / "again").exists()


class _Stream:
    """An http response body of ``size`` bytes, made as it is read; how much was read."""

    def __init__(self, size: int):
        self.left, self.read_bytes = size, 0

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        self.read_bytes += n
        return b"\0" * n


def test_an_http_object_longer_than_its_size_is_refused_unread(monkeypatch):
    import contextlib

    from farm.archive import ArchiveError
    from farm.archive.http import HttpArchive
    from farm.archive.record import Entry

    body = _Stream(200 << 20)
    archive = HttpArchive("http://archive.invalid/")
    monkeypatch.setattr(HttpArchive, "_get", lambda self, path, what: contextlib.nullcontext(body))
    with pytest.raises(ArchiveError, match="larger than its 4096 bytes: refused, the rest not read"):
        archive.read(Entry("0" * 64, 4096), "object x")
    assert body.read_bytes <= 4096 + 1


@pytest.mark.parametrize("answer", [b"<html>a web server</html>", b'{"runs": []}', b"[" * 100_000])
def test_an_http_archive_that_is_no_archive_is_a_clear_error(monkeypatch, answer):
    import contextlib
    import io

    from farm.archive import ArchiveError
    from farm.archive.http import HttpArchive

    monkeypatch.setattr(HttpArchive, "_get", lambda self, path, what: contextlib.nullcontext(io.BytesIO(answer)))
    with pytest.raises(ArchiveError, match=r"answered /runs/ with no list of run ids"):
        HttpArchive("http://archive.invalid/").run_ids()


@pytest.mark.parametrize("method", ["TRACE", "PROPFIND", "MKCOL", "CONNECT", "BREW"])
def test_archive_serve_refuses_every_method_but_get_and_head_405(tmp_path, method):
    import http.client
    import threading

    from farm.archive.directory import DirArchive
    from farm.archive.http import make_server

    server = make_server(DirArchive(tmp_path / "archive"), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
        conn.request(method, "/runs/")
        answer = conn.getresponse()
        assert (answer.status, answer.getheader("Allow")) == (405, "GET, HEAD")
        conn.close()
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------------------------------------------------------
# A reproduction that did not run (the lab failed before it measured anything) is recorded as "not run
# (infrastructure)", never as a verdict: not in the store as a result that failed to hold.

def _coordinator_down(monkeypatch):
    import contextlib

    import farm.places
    from farm.errors import InfrastructureError

    @contextlib.contextmanager
    def acquired_place(*args, **kwargs):
        raise InfrastructureError("coordinator 127.0.0.1:20408: unreachable (connection refused)")
        yield
    monkeypatch.setattr(farm.places, "acquired_place", acquired_place)
    from farm.run import FarmRequest

    return {"farm": FarmRequest({"board": "maaxboard"}, timeout=1.0)}


def _no_board_boots(monkeypatch):
    from farm.errors import InfrastructureError

    return {"flow": FakeFlow({"a": InfrastructureError("maaxboard-twin: no U-Boot prompt")})}


@pytest.mark.parametrize("outage", [_coordinator_down, _no_board_boots], ids=["coordinator down", "no board boots"])
def test_a_reproduction_the_lab_failed_is_not_run_never_a_verdict(tmp_path, monkeypatch, outage):
    from farm.archive.reproduce import reproduce
    from farm.errors import EXIT_INFRA_ERROR
    from farm.store.db import open_store
    from farm.store.reproductions import reproductions_of
    from tests.unit.archive_helpers import ENV, values

    run = _archived_run(tmp_path, monkeypatch)
    how = outage(monkeypatch)
    flow = how.get("flow", FakeFlow())
    done = reproduce(run.run_id, out=tmp_path / "again", cache=tmp_path / "cache", envs=[ENV], farm=how.get("farm"),
                     flow_for=lambda s: flow, registry=values(1.0))
    assert done.exit_code == EXIT_INFRA_ERROR
    assert done.reproduction.verdict == "not run (infrastructure)" and done.reproduction.figures == ()
    saved = json.loads((tmp_path / "again" / "reproduction.json").read_text())
    assert saved["verdict"] == "not run (infrastructure)" and saved["headline"].startswith("NOT RUN: ")
    with open_store().connect() as c:
        [row] = reproductions_of(c, run.run_id)
    assert row.verdict == "not run (infrastructure)"


# ---------------------------------------------------------------------------------------------------------------
# farm lab's state is data, not instructions: lab.json's paths lie inside the lab's directory, a process is
# signalled only when its command line is the one farm started, writes never follow a planted symlink.
# (Malformed lab.json, [] {} nested deep: tests/unit/test_state_files.py.)

def _planted_lab(tmp_path: Path, edit) -> tuple[Path, Path]:
    from farm.virtual.lab import plan_lab

    lab_dir = tmp_path / "lab"
    lab = plan_lab(lab_dir, {"maaxboard": 1})
    lab_dir.mkdir(exist_ok=True)
    lab.save()
    victim = tmp_path / "precious.txt"
    victim.write_text("the lab's notes\n")
    state = json.loads(lab.state_file.read_text())
    edit(state, lab_dir, victim)
    lab.state_file.write_text(json.dumps(state))
    return lab_dir, victim


def _qmp_outside(state, lab_dir, victim):
    state["boards"][0]["qmp_socket"] = str(victim)


def _qmp_up_and_out(state, lab_dir, victim):
    state["boards"][0]["qmp_socket"] = str(lab_dir / "boards" / ".." / ".." / victim.name)


def _qmp_through_a_symlink(state, lab_dir, victim):
    (lab_dir / "boards").mkdir()
    (lab_dir / "boards" / "1").symlink_to(victim.parent)
    state["boards"][0]["qmp_socket"] = str(lab_dir / "boards" / "1" / victim.name)


def _log_outside(state, lab_dir, victim):
    state["processes"] = [{"name": "sshd", "pid": 1, "start": 0, "argv": ["sshd"], "log": str(victim)}]


PLANTED_PATHS = {"qmp socket outside": (_qmp_outside, "boards[0].qmp_socket"),
                 "qmp socket ../..": (_qmp_up_and_out, "boards[0].qmp_socket"),
                 "qmp socket through a symlink": (_qmp_through_a_symlink, "boards[0].qmp_socket"),
                 "log outside": (_log_outside, "processes[0].log")}


@pytest.mark.parametrize("case", PLANTED_PATHS, ids=list(PLANTED_PATHS))
def test_lab_down_refuses_a_path_of_lab_json_outside_the_lab(tmp_path, case):
    from farm.errors import JobError
    from farm.virtual import lab

    edit, field = PLANTED_PATHS[case]
    lab_dir, victim = _planted_lab(tmp_path, edit)
    with pytest.raises(JobError, match=rf"lab\.json: {re.escape(field)}: .* is not in {lab_dir}"):
        lab.down(lab_dir)
    assert victim.read_text() == "the lab's notes\n"


def test_lab_down_writes_no_file_through_a_planted_symlink(tmp_path):
    from farm.virtual import lab

    lab_dir, victim = _planted_lab(tmp_path, lambda state, lab_dir, victim: None)
    for name in ("lab.tmp", "lab.json.tmp"):  # the old fixed name, and one like it
        (lab_dir / name).symlink_to(victim)
    lab.down(lab_dir)
    assert victim.read_text() == "the lab's notes\n"
    assert not (lab_dir / "lab.json").is_symlink() and json.loads((lab_dir / "lab.json").read_text())["processes"] == []


def test_lab_down_signals_only_the_command_farm_started(tmp_path):
    """A foreign process recorded under a QEMU's name, with its real pid and start time, is left alone;
    the lab's own (a script under its interpreter, as labgrid's tools are) is stopped."""
    import subprocess
    import sys

    from farm.proc import start_time
    from farm.virtual import lab
    from farm.virtual.processes import spawn

    foreign = subprocess.Popen(["sleep", "60"])
    script = tmp_path / "labtool"
    script.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    script.chmod(0o755)
    ours = spawn("coordinator", [str(script), "-l", "127.0.0.1:1"], tmp_path / "lab" / "logs" / "coordinator.log")
    try:
        def edit(state, lab_dir, victim):
            state["processes"] = [
                ours.as_dict(),
                {"name": "qemu maaxboard-1", "pid": foreign.pid, "start": start_time(foreign.pid),
                 "argv": ["qemu-system-aarch64", "-name", "maaxboard-1", "-S"], "log": str(lab_dir / "logs" / "q.log")}]
        lab_dir, _ = _planted_lab(tmp_path, edit)
        said = []
        lab.down(lab_dir, say=said.append)
        assert foreign.poll() is None  # not signalled
        assert [line.split() for line in said] == [["qemu", "maaxboard-1", "not", "running"], ["coordinator", "stopped"]]
        assert start_time(ours.pid) is None
    finally:
        foreign.kill()
        foreign.wait()
        if start_time(ours.pid) == ours.start:
            import os
            import signal

            os.kill(ours.pid, signal.SIGKILL)


# ---------------------------------------------------------------------------------------------------------------
# Patterns with a bound: a pipeline's console patterns that can backtrack catastrophically (Python's re, which
# nothing interrupts) are refused when the file is read, naming the file, line and field; the repository's pass.

def _system_pipeline(tmp_path: Path, system: str, benchmarks: str = "[{console: {}}]") -> Path:
    from tests.unit.archive_helpers import ENV

    path = tmp_path / "p.yaml"
    path.write_text(f"name: sys\ntargets: [{{env: {ENV}}}]\nsetups:\n  - name: sel4\n    system: {system}\n"
                    f"benchmarks: {benchmarks}\n")
    return path


EXPLODING = [r"^(a+)+$", r"(\w+\s?)*$", r"(a{1,5})+$", r"(?:ab|a)+$", r"(?>(a+)+)$"]
FIELDS = {
    "ready": (lambda p: f"{{ready: '{p}'}}", "[{console: {}}]", "setups[0].system.ready"),
    "fatal": (lambda p: f"{{ready: r, fatal: ['{p}']}}", "[{console: {}}]", "setups[0].system.fatal"),
    "address": (lambda p: f"{{ready: r, address: '(?P<address>{p})'}}", "[{console: {}}]", "setups[0].system.address"),
    "stats": (lambda p: f"{{ready: r, stats: [{{pattern: '(?P<n>{p})', metric: seen}}]}}", "[{console: {}}]",
              "setups[0].system.stats"),
    "console until": (lambda p: "{ready: r}", None, "benchmarks[0].console"),
}


@pytest.mark.parametrize("pattern", EXPLODING)
@pytest.mark.parametrize("field", FIELDS)
def test_a_pattern_that_backtracks_catastrophically_is_refused_when_read(tmp_path, field, pattern):
    from farm.errors import JobError
    from farm.run.model import load_pipeline

    system, benchmarks, where = FIELDS[field]
    benchmarks = benchmarks or f"[{{console: {{until: '{pattern}'}}}}]"
    path = _system_pipeline(tmp_path, system(pattern), benchmarks)
    with pytest.raises(JobError) as info:
        load_pipeline(path)
    text = str(info.value)
    assert text.startswith(f"{path}:") and where in text and "can backtrack" in text, text


@pytest.mark.parametrize("pattern", [r"farm-standin: (fault|abort)", r"(\d{1,3}\.){3}\d{1,3}", r"(?:a|b)+$",
                                     r"(a+)++$", r"component (?P<c>\w+): ticks (?P<t>\d+) of \d+ \((?P<s>[0-9.]+)%\)"])
def test_patterns_that_cannot_explode_are_taken(pattern):
    from farm.schema import regex_problem

    assert regex_problem(pattern) is None


def test_the_repositorys_system_pipelines_read():
    from farm.run.model import load_pipeline

    for name in ("system-standin.yaml", "system-standin-net.yaml"):
        load_pipeline(Path(__file__).resolve().parents[2] / "pipelines" / name)


# ---------------------------------------------------------------------------------------------------------------
# A system image that is a private file (0600), given as it is or through a symlink from the pipeline's tree, is
# refused before anything is copied into the cache (and so into the lab's archive).

@pytest.mark.parametrize("through", ["the file", "a symlink", "a directory image"])
def test_a_private_system_image_is_refused_before_it_is_copied(tmp_path, through):
    from farm.errors import JobError
    from farm.images.system import system_image

    private = tmp_path / "secret" / "loader.bin"
    private.parent.mkdir()
    private.write_bytes(b"\x00" * 256)
    private.chmod(0o600)
    given = private
    if through == "a symlink":
        given = tmp_path / "tree" / "loader.bin"
        given.parent.mkdir()
        given.symlink_to(private)
    elif through == "a directory image":
        given = private.parent
        (given / "manifest.json").write_text(json.dumps({
            "kind": "system", "name": "loader", "arch": "arm64", "boot": {"go": "loader.bin"},
            "load_addr": "0x50000000", "formats": {"loader.bin": "raw"},
            "artifacts": {"loader.bin": {"sha256": __import__("hashlib").sha256(private.read_bytes()).hexdigest(),
                                         "size": 256}}}))
    cache = tmp_path / "cache"
    with pytest.raises(JobError, match=r"readable by its owner only \(mode 0600\)"):
        system_image(given, arch="arm64", load_addr=0x50000000, cache=cache)
    assert not list(cache.glob("images/*"))
    private.chmod(0o644)  # the owner says it may be shared
    system_image(given, arch="arm64", load_addr=0x50000000, cache=cache)


# ---------------------------------------------------------------------------------------------------------------
# Bad input that got a traceback: a clear error naming what is wrong, exit 2 (or 3: the lab's), nothing written.

@pytest.mark.parametrize("argv", [["serve", "--port", "99999"], ["archive", "serve", "--port", "99999"],
                                  ["serve", "--port", "-1"], ["archive", "serve", "--port", "http"]])
def test_a_port_out_of_range_is_refused_when_parsed(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "argument --port" in err and "Traceback" not in err


@pytest.mark.parametrize("given", ["missing", "directory", "/dev/zero"])
def test_reproduce_pipeline_that_is_no_file_is_a_job_error(tmp_path, monkeypatch, capsys, given):
    run = _archived_run(tmp_path, monkeypatch)
    path = {"missing": str(tmp_path / "nope.yaml"), "directory": str(tmp_path), "/dev/zero": "/dev/zero"}[given]
    assert main(["reproduce", run.run_id, "--pipeline", path, "--out", str(tmp_path / "again")]) == 2
    err = capsys.readouterr().err
    assert f"farm: job error: {path}: --pipeline file " in err and "Traceback" not in err
    assert not (tmp_path / "again").exists()


def test_a_forged_run_json_nested_deep_in_the_archive_is_refused(tmp_path, monkeypatch, capsys):
    import attrs

    from farm.archive import open_archive

    run = _archived_run(tmp_path, monkeypatch)
    archive = open_archive()
    record = archive.record(run.run_id)
    entry, _ = archive.put_bytes(b"[" * 100_000 + b"]" * 100_000)
    archive.write_record(attrs.evolve(record, files={**record.files, "run.json": entry}))
    code = main(["reproduce", run.run_id, "--out", str(tmp_path / "again")])
    err = capsys.readouterr().err
    assert code in (2, 3) and "archived run.json nested deeper than" in err and "Traceback" not in err, err


# ---------------------------------------------------------------------------------------------------------------
# farm import vmexit refuses impossible values and a result line whose value is no number, naming file and line.

@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e999", "12x", "3.5", "99999999999999999999"])
def test_import_vmexit_refuses_what_is_no_count_of_cycles(tmp_path, capsys, value):
    capture = tmp_path / "vmexit.txt"
    capture.write_text(f"enabling apic\ncpuid 3374\nvmcall {value}\n")
    out = tmp_path / "imported"
    assert main(["import", "vmexit", str(capture), "--setup", "lab", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(capture) in err and "line 3" in err and "Traceback" not in err, err
    assert not (out / "results.csv").exists()


# ---------------------------------------------------------------------------------------------------------------
# Checks that came too late or not at all, now when the pipeline is read: a DPDK setup's lcores beyond its cores,
# a guest's extra_args opening a monitor or a debugger, or undoing -no-reboot.

def _dpdk_pipeline(tmp_path: Path, setup: str) -> Path:
    from tests.unit.archive_helpers import ENV, ROOT

    path = tmp_path / "p.yaml"
    path.write_text(f"name: d\nimage: {ROOT / 'images' / 'maaxboard-dpdk.yaml'}\ntargets: [{{env: {ENV}}}]\n"
                    f"setups:\n  - name: dpdk\n{setup}\nbenchmarks: []\n")
    return path


@pytest.mark.parametrize("setup, words", [
    ("    cpus: 2\n    dpdk: {lcores: 0-3}", "setups[0].dpdk.lcores: lcores 2, 3 on 2 cores (the setup's cpus: 2"),
    ("    cpus: 1\n    dpdk: {lcores: '0,1'}", "setups[0].dpdk.lcores: lcore 1 on 1 core (the setup's cpus: 1"),
    ("    dpdk: {lcores: 0-2, guest: {vcpus: 2}}", "setups[0].dpdk.lcores: core 2: the guest has 2 vCPUs"),
])
def test_dpdk_lcores_beyond_the_setups_cores_are_refused_when_read(tmp_path, setup, words):
    from farm.errors import JobError
    from farm.run.model import load_pipeline

    path = _dpdk_pipeline(tmp_path, setup)
    with pytest.raises(JobError, match=re.escape(words)) as info:
        load_pipeline(path)
    assert str(info.value).startswith(f"{path}:")


def test_dpdk_lcores_within_the_cores_are_taken(tmp_path):
    from farm.run.model import load_pipeline

    load_pipeline(_dpdk_pipeline(tmp_path, "    cpus: 4\n    dpdk: {lcores: 0-3}"))
    load_pipeline(_dpdk_pipeline(tmp_path, "    dpdk: {lcores: 0-3}"))  # the board's cores: EAL says


@pytest.mark.parametrize("arg", ["-qmp", "--qmp", "-qmp-pretty", "-mon", "-gdb", "-s", "-action", "-no-reboot"])
def test_a_guest_extra_arg_that_opens_a_monitor_or_undoes_no_reboot_is_refused(arg):
    from farm.guest.spec import _extra_args
    from farm.schema import Invalid

    with pytest.raises(Invalid, match=rf"item 0 '{re.escape(arg)}': -"):
        _extra_args([arg, "tcp:0.0.0.0:4444,server=on"])
    assert _extra_args(["-overcommit", "mem-lock=on"]) == ("-overcommit", "mem-lock=on")


# ---------------------------------------------------------------------------------------------------------------
# A path farm cannot write, or a full disk: one line naming the file, exit 2 (the path's) or 3 (the disk's: the
# lab's), never a traceback; nothing half written.

def _imported(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("FARM_DB", str(tmp_path / "results.db"))
    out = tmp_path / "imported"
    assert main(["import", "iperf3", str(DATA / "iperf3-tcp.json"), "--setup", "lab", "--out", str(out)]) == EXIT_OK
    return out


@pytest.mark.parametrize("command", ["history --plot", "dashboard --out"])
def test_an_unwritable_output_path_is_a_job_error(tmp_path, monkeypatch, capsys, command):
    out = _imported(tmp_path, monkeypatch)
    metric = (out / "results.csv").read_text().splitlines()[1].split(",")[10]
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    argv = (["history", metric, "--plot", str(blocker / "x.png")] if command == "history --plot"
            else ["dashboard", "--out", str(blocker / "site")])
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"farm: job error: {blocker}/" in err and "Not a directory" in err and "Traceback" not in err, err


def test_a_full_disk_during_an_import_is_the_labs_error_and_leaves_nothing_half_written(tmp_path, monkeypatch,
                                                                                        capsys):
    import errno
    import tempfile

    import farm.results.record

    real = tempfile.mkstemp
    written = []

    def mkstemp(*args, **kwargs):
        if len(written) >= 1:  # results.csv fits, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device", kwargs.get("dir"))
        written.append(kwargs.get("dir"))
        return real(*args, **kwargs)
    monkeypatch.setattr(farm.results.record.tempfile, "mkstemp", mkstemp)
    monkeypatch.setenv("FARM_DB", "none")
    out = tmp_path / "imported"
    code = main(["import", "iperf3", str(DATA / "iperf3-tcp.json"), "--setup", "lab", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 3 and f"farm: infrastructure error: {out}: No space left on device" in err, err
    assert "Traceback" not in err
    assert not [p for p in out.rglob("*.tmp")]  # no temporary left behind


def test_a_full_disk_during_a_report_is_the_labs_error_and_leaves_nothing_half_written(tmp_path, monkeypatch,
                                                                                        capsys):
    import errno
    import tempfile

    out = _imported(tmp_path, monkeypatch)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def mkstemp(*args, **kwargs):  # every file farm writes whole goes through a temporary beside it
        raise OSError(errno.ENOSPC, "No space left on device", kwargs.get("dir"))
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    capsys.readouterr()
    code = main(["report", str(out)])
    err = capsys.readouterr().err
    assert code == 3 and "No space left on device" in err and f"{out}" in err and "Traceback" not in err, err
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert {k: v for k, v in after.items() if k in before} == before  # what the run had is untouched
    assert not [p for p in out.rglob("*.tmp")]


def test_a_full_archive_share_is_the_labs_error_and_leaves_no_object_half_written(tmp_path, monkeypatch, capsys):
    import errno

    from farm.archive import directory

    out = _archived_run(tmp_path, monkeypatch).path  # a run with its image (archived where it ran)
    archive = tmp_path / "another-archive"
    monkeypatch.setenv("FARM_ARCHIVE", str(archive))

    def copy_until_full(src, dst):  # a first block fits, then the share is full
        dst.write(src.read(1024))
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(directory, "_copy", copy_until_full)
    capsys.readouterr()
    code = main(["archive", str(out)])
    err = capsys.readouterr().err
    assert code == 3 and "No space left on device" in err and "Traceback" not in err, err
    objects = [p for p in (archive / "objects").rglob("*") if p.is_file()] if (archive / "objects").exists() else []
    assert objects == []  # no object under its final name that is not whole
    assert not (archive / "runs").exists() or not list((archive / "runs").iterdir())  # nor a record naming one


# ---------------------------------------------------------------------------------------------------------------
# A broken plugin (an import error, a hook that raises, a misspelt hook, a flow that is no FlowType, in the group
# farm or the older farm.flows) is a job error naming it, exit 2, never a traceback.

BROKEN_PLUGINS = {
    "import error (farm)": ("farm", "lab = mylab_broken", "import not_a_module_anywhere\n",
                            "failed to load: ModuleNotFoundError"),
    "a registration that raises (farm)": ("farm", "lab = mylab_broken",
                                          "from farm.hookspecs import hookimpl\n\n@hookimpl\n"
                                          "def farm_flows():\n    raise RuntimeError('oops')\n",
                                          "its farm_flows() failed: RuntimeError: oops"),
    "misspelt hook (farm)": ("farm", "lab = mylab_broken",
                             "from farm.hookspecs import hookimpl\n\n@hookimpl\ndef farm_flow():\n    return []\n",
                             "farm_flow"),
    "not a FlowType (farm)": ("farm", "lab = mylab_broken",
                              "from farm.hookspecs import hookimpl\n\n@hookimpl\ndef farm_flows():\n"
                              "    return ['frob']\n", "'frob' is not a flow"),
    "import error (farm.flows)": ("farm.flows", "frob = mylab_broken:FLOW", "import not_a_module_anywhere\n",
                                  "(entry-point group farm.flows) failed to load: ModuleNotFoundError"),
    "not a FlowType (farm.flows)": ("farm.flows", "frob = mylab_broken:FLOW", "FLOW = 42\n", "42 is not a flow"),
}


@pytest.mark.parametrize("case", BROKEN_PLUGINS, ids=list(BROKEN_PLUGINS))
def test_a_broken_plugin_is_a_job_error_naming_it(tmp_path, monkeypatch, capsys, case):
    group, entry, source, words = BROKEN_PLUGINS[case]
    for _ in installed(tmp_path / "site", monkeypatch, dist="mylab-broken", group=group, entry=entry,
                       module="mylab_broken", source=source):
        assert main(["schema", "pipeline"]) == 2
        err = capsys.readouterr().err
        assert "farm: job error: " in err and words in err and "Traceback" not in err, err


# ---------------------------------------------------------------------------------------------------------------
# The same run ingested twice at once is one run, and every ingest exits 0: the transaction that lost the race
# (the run id's uniqueness, or SQLite's stale snapshot) is tried again and finds the run stored.

@pytest.mark.parametrize("lost", ["UNIQUE constraint failed: runs.run_id", "database is locked"])
def test_an_ingest_that_loses_the_race_to_the_same_run_succeeds(tmp_path, monkeypatch, capsys, lost):
    import sqlite3

    import sqlalchemy as sa

    import farm.store.ingest
    from farm.store.db import open_store
    from tests.store.rundirs import make_run

    store = tmp_path / "results.db"
    monkeypatch.setenv("FARM_DB", str(store))
    run_dir = make_run(tmp_path / "r", "20261201-100000-aaaa", started="2026-12-01T10:00:00.000+00:00")
    real, raced = farm.store.ingest.write_run, []

    def write_run(connection, rows):
        if not raced:  # the other ingest commits the run first; this transaction's insert then fails
            raced.append("the other ingest")
            monkeypatch.setattr(farm.store.ingest, "write_run", real)
            farm.store.ingest.ingest(open_store(), [run_dir])
            monkeypatch.setattr(farm.store.ingest, "write_run", write_run)
            error = (sa.exc.IntegrityError if "UNIQUE" in lost else sa.exc.OperationalError)
            raise error("INSERT INTO runs", {}, sqlite3.IntegrityError(lost) if "UNIQUE" in lost
                        else sqlite3.OperationalError(lost))
        return real(connection, rows)
    monkeypatch.setattr(farm.store.ingest, "write_run", write_run)
    assert main(["db", "ingest", str(run_dir)]) == EXIT_OK
    assert raced and list(stored_runs(str(store))) == ["20261201-100000-aaaa"]
    assert "Traceback" not in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------------
# A target name holding a secret: the import masks it, and farm report makes the files of the masked name
# (a file name says "masked"), instead of refusing it.

def test_report_takes_the_masked_target_name_its_import_wrote(tmp_path, monkeypatch, capsys):
    from farm import secrets

    monkeypatch.setattr(secrets, "_secrets", set(secrets._secrets))  # this test's secret goes with it
    monkeypatch.setattr(secrets, "_forms", list(secrets._forms))
    monkeypatch.setenv("LG_SECRET_TOKEN", "hunter2secret")
    monkeypatch.setenv("FARM_DB", "none")
    out = tmp_path / "imported"
    assert main(["import", "ipbench", str(DATA / "ipbench-sample.csv"), "--setup", "lab", "--target",
                 "boardhunter2secret", "--out", str(out)]) == EXIT_OK
    assert ",board*****," in (out / "results.csv").read_text()
    assert main(["report", str(out)]) == EXIT_OK
    assert (out / "sweep-boardmasked-lab.csv").is_file()
    assert "hunter2secret" not in capsys.readouterr().err


HANGING_LISTENER = '''
import threading

from farm.hookspecs import hookimpl

release = threading.Event()
calls = []


@hookimpl
def run_published(run_dir):
    calls.append(str(run_dir))
    release.wait(30)  # a chat server that never answers
'''


@pytest.fixture
def hanging_listener(tmp_path, monkeypatch):
    import sys

    for _ in installed(tmp_path / "site", monkeypatch, dist="mylab-hang", group=ENTRY_POINT_GROUP,
                       entry="hang = mylab_hang", module="mylab_hang", source=HANGING_LISTENER):
        yield lambda: sys.modules["mylab_hang"]
        sys.modules["mylab_hang"].release.set()


def test_a_labs_listener_that_hangs_is_left_behind(hanging_listener, tmp_path, monkeypatch, capsys):
    import time

    from farm import plugins

    monkeypatch.setattr(plugins, "LISTENER_TIMEOUT_S", 0.5)
    store = tmp_path / "results.db"
    monkeypatch.setenv("FARM_DB", str(store))
    started = time.monotonic()
    assert main(["import", "iperf3", str(DATA / "iperf3-tcp.json"), "--setup", "lab",
                 "--out", str(tmp_path / "imported")]) == EXIT_OK
    assert time.monotonic() - started < 15 and len(stored_runs(str(store))) == 1
    assert hanging_listener().calls == [str(tmp_path / "imported")]
    assert ("the listener 'hang' (mylab-hang 1.0, entry-point group farm) did not return from run_published "
            "within 0.5 s") in capsys.readouterr().err
