"""Faults 10-13: hostile input is refused before anything runs (no QEMU needed)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from farm.boot.session import EnvFile
from farm.config import load_yaml
from farm.errors import JobError
from farm.run import load_pipeline

from ..conftest import ROOT, run_farm

PYTHON_TAGS = ['!!python/object/apply:os.system ["touch {s}"]', "!!python/object/new:subprocess.Popen [[touch, {s}]]"]


# 13. YAML with !!python/object/apply:os.system -> refused, nothing runs
@pytest.mark.parametrize("tag", PYTHON_TAGS)
def test_python_tags_in_a_pipeline_are_refused(tmp_path, tag):
    sentinel = tmp_path / "pwned"
    path = tmp_path / "p.yaml"
    path.write_text(f"name: {tag.format(s=sentinel)}\nimage: x.yaml\ntargets: [{{env: e.yaml}}]\nbenchmarks: []\n")
    with pytest.raises(JobError) as info:
        load_pipeline(path)
    assert str(info.value).startswith(f"{path}:1: invalid YAML")
    proc = run_farm("run", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert not sentinel.exists()


@pytest.mark.parametrize("tag", PYTHON_TAGS)
def test_python_tags_in_an_env_file_are_refused(tmp_path, tag):
    sentinel = tmp_path / "pwned"
    path = tmp_path / "env.yaml"
    text = (ROOT / "env" / "qemu-maaxboard.yaml").read_text().replace(
        "      board: maaxboard", f"      board: {tag.format(s=sentinel)}")
    path.write_text(text)
    with pytest.raises(JobError):
        EnvFile.load(path)
    proc = run_farm("boot", "--env", str(path), "--image", str(tmp_path))
    assert proc.returncode == 2 and "invalid YAML" in proc.stderr
    assert not sentinel.exists()


# 10. Artifact names `../../etc/passwd`, `/abs`, a NUL byte, a sibling-prefix path -> refused
@pytest.mark.parametrize("job", ["../../etc", "/abs", "..", ".hidden", "a/b"])  # NUL: tests/unit/test_staging.py (argv cannot hold one)
def test_hostile_job_ids_are_refused_before_staging(tmp_path, job):
    proc = run_farm("boot", "--env", "env/qemu-maaxboard.yaml", "--image", str(ROOT / "images"), "--job", job)
    # refused for the job id itself (when the argument is parsed), not for the image directory that
    # is not one: the same command with a good job id gets as far as the image
    assert proc.returncode == 2 and f"argument --job: {job!r} is not a valid name" in proc.stderr, proc.stderr
    good = run_farm("boot", "--env", "env/qemu-maaxboard.yaml", "--image", str(ROOT / "images"), "--job", "ok")
    assert good.returncode == 2 and "not an image directory" in good.stderr


def test_hostile_recipe_paths_are_refused(tmp_path):
    for bad in ("/usr/../etc/passwd", "etc/passwd", "/bin/busybox\x00x"):
        path = tmp_path / "r.yaml"
        path.write_text("name: r\narch: arm64\nkernel: {package: linux-image-arm64}\n"
                        f"initrd:\n  packages: [busybox-static]\n  files: [{bad!r}]\n")
        proc = run_farm("build", str(path), env={"FARM_CACHE": str(tmp_path / "cache")})
        assert proc.returncode == 2, bad
        assert "initrd.files" in proc.stderr and "not a valid absolute file path" in proc.stderr


# --- hostile files: bounded size, aliases, nesting; only regular UTF-8 files (issue 17) ---------------------

def _alias_bomb() -> str:
    text, previous = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n', "a"
    for name in "bcdefghij":  # 9^10 values once expanded
        text += f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n"
        previous = name
    return text


HOSTILE_YAML = {
    "alias bomb": (_alias_bomb(), ":7: YAML aliases expand to more than"),
    "self-referring alias": ("name: &a [*a]\n", ":1: a YAML alias refers to the collection that holds it"),
    "deep nesting": ("name: " + "[" * 5000 + "]" * 5000 + "\n", ":1: YAML nested deeper than 64 levels"),
    "not UTF-8": ("name: caf\udce9\n", ":1: pipeline file is not UTF-8 text (byte 0xe9)"),
    "too large": ("name: x\n" + "# padding\n" * 120_000, ": pipeline file too large"),
}


@pytest.mark.parametrize("case", HOSTILE_YAML)
def test_hostile_pipeline_files_are_refused_at_once(tmp_path, case):
    text, message = HOSTILE_YAML[case]
    path = tmp_path / "p.yaml"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    t0 = time.monotonic()
    proc = run_farm("run", str(path), "--out", str(tmp_path / "run"), timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{path}{message}" in proc.stderr
    assert time.monotonic() - t0 < 15
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("where", ["/dev/zero", "fifo", "dir"])
def test_build_refuses_what_is_not_a_regular_file(tmp_path, where):
    if where == "fifo":
        path = tmp_path / "r.yaml"
        os.mkfifo(path)  # opening it would block until a writer comes
    else:
        path = tmp_path if where == "dir" else Path(where)
    proc = run_farm("build", str(path), env={"FARM_CACHE": str(tmp_path / "cache")}, timeout=30)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"farm: job error: {path}: image recipe is not a regular file" in proc.stderr


def test_non_utf8_env_file_names_the_file(tmp_path):
    path = tmp_path / "env.yaml"
    path.write_bytes((ROOT / "env" / "qemu-maaxboard.yaml").read_bytes().replace(b"board: maaxboard", b"board: \xff"))
    proc = run_farm("boot", "--env", str(path), "--image", str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{path}:" in proc.stderr and "env file is not UTF-8 text (byte 0xff)" in proc.stderr


def test_the_repository_files_load_within_the_limits():
    """farm's own recipes, pipelines and env files (a few with merge keys would be fine too)."""
    for path in [*ROOT.glob("images/*.yaml"), *ROOT.glob("pipelines/*.yaml"), *ROOT.glob("env/*.yaml")]:
        if path.name != "gitlab-ci.yml":
            load_yaml(path)


# --- names, kernel arguments and bounds: refused when read, before any build or boot (issue 17) -----------

def _pipeline(tmp_path: Path, setups: str = "", bench: str = "iperf3: {protocol: tcp, duration: 3}") -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(f"name: t\nimage: {ROOT / 'images' / 'maaxboard-bench.yaml'}\n"
                    f"targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}}}]\n{setups}"
                    f"benchmarks:\n  - {bench}\n")
    return path


def _refused_before_the_build(tmp_path: Path, *args: str) -> str:
    """Run farm with an empty cache: exit 2, no traceback, nothing built, no run directory."""
    cache = tmp_path / "cache"
    proc = run_farm(*args, env={"FARM_CACHE": str(cache)}, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not cache.exists() and not (tmp_path / "run").exists()
    return proc.stderr


@pytest.mark.parametrize("name", ["a b", "x/../../t", ".."])
def test_a_bad_setup_name_is_refused_with_file_line_field_before_the_build(tmp_path, name):
    path = _pipeline(tmp_path, f"setups:\n  - name: '{name}'\n")
    err = _refused_before_the_build(tmp_path, "run", str(path), "--out", str(tmp_path / "run"))
    assert f"farm: job error: {path}:5: setups[0].name: {name!r} is not a valid setup name" in err


def test_a_bad_bootarg_is_refused_when_the_argument_is_parsed(tmp_path):
    err = _refused_before_the_build(tmp_path, "run", str(_pipeline(tmp_path)), "--bootarg", "x; reset",
                                    "--out", str(tmp_path / "run"))
    assert "argument --bootarg: 'x; reset' is not an allowed kernel argument" in err
    proc = run_farm("boot", "--env", "env/qemu-maaxboard.yaml", "--image", str(tmp_path), "--bootarg", "a'b")
    assert proc.returncode == 2 and "argument --bootarg: \"a'b\" is not an allowed kernel argument" in proc.stderr


@pytest.mark.parametrize("bench, message", [
    ("iperf3: {duration: 1000000000}", ":5: benchmarks[0].iperf3: iperf3 duration 1000000000: expected whole seconds, 1-86400"),
    ("iperf3: {protocol: udp, length: 100000}", ":5: benchmarks[0].iperf3: iperf3 length 100000: expected 16-65507 bytes for UDP"),
])
def test_out_of_bounds_values_are_refused_when_the_pipeline_is_read(tmp_path, bench, message):
    path = _pipeline(tmp_path, bench=bench)
    err = _refused_before_the_build(tmp_path, "run", str(path), "--out", str(tmp_path / "run"))
    assert f"farm: job error: {path}{message}" in err


def test_a_hostile_target_name_in_an_env_file_is_refused_with_its_line(tmp_path):
    env = tmp_path / "env.yaml"
    env.write_text((ROOT / "env" / "qemu-maaxboard.yaml").read_text().replace("  maaxboard-twin:", "  '../t':"))
    path = tmp_path / "p.yaml"
    path.write_text(_pipeline(tmp_path).read_text().replace(str(ROOT / "env" / "qemu-maaxboard.yaml"), str(env)))
    err = _refused_before_the_build(tmp_path, "run", str(path), "--out", str(tmp_path / "run"))
    assert f"farm: job error: {env}:9: targets.../t: '../t' is not a valid target name" in err


def test_hostile_env_bootargs_are_refused_when_the_env_file_is_read(tmp_path):
    env = tmp_path / "env.yaml"
    env.write_text((ROOT / "env" / "qemu-maaxboard.yaml").read_text().replace('bootargs: "quiet"', 'bootargs: "quiet;reset"'))
    with pytest.raises(JobError, match=r"env.yaml:\d+: targets.maaxboard-twin.drivers.UBootNetbootStrategy.bootargs: "
                                       r"'quiet;reset' is not an allowed kernel argument"):
        EnvFile.load(env)


@pytest.mark.parametrize("option", ["--target", "--setup"])
@pytest.mark.parametrize("name", ["x/../../t", "a b", "../t"])
def test_import_refuses_names_that_would_become_paths(tmp_path, option, name):
    args = {"--setup": "s", "--target": "t", option: name}
    proc = run_farm("import", "ipbench", str(ROOT / "tests" / "data" / "ipbench-sample.csv"), "--setup", args["--setup"],
                    "--target", args["--target"], "--out", str(tmp_path / "imp"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"argument {option}: {name!r} is not a valid name" in proc.stderr
    assert not (tmp_path / "imp").exists()


@pytest.mark.parametrize("command", [
    ["import", "ipbench", str(ROOT / "tests" / "data" / "ipbench-sample.csv"), "--setup", "s"],
    ["build", str(ROOT / "images" / "maaxboard-bench.yaml")],
    ["compare", str(ROOT), str(ROOT)],
    ["qualify", "--baseline", str(ROOT), "--candidate", str(ROOT)],
])
def test_an_unwritable_out_is_refused_at_once(tmp_path, command):
    (tmp_path / "file").write_text("")
    for out in (tmp_path / "file" / "x", "/proc/farm-x"):
        proc = run_farm(*command, "--out", str(out), env={"FARM_CACHE": str(tmp_path / "cache")})
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"argument --out: {out}: " in proc.stderr
    assert not (tmp_path / "cache").exists()


def _resume_dir(tmp_path: Path, text: str) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(text)
    return run_dir


SMOKE_SHA = __import__("hashlib").sha256((ROOT / "pipelines" / "smoke.yaml").read_bytes()).hexdigest()


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000 + "]" * 100_000, "run.json nested deeper than 64 levels"),
    ("[]", "run.json must be a JSON object, not list"),
    ("{\"run_id\": \"r\", \xff}", "run.json is not UTF-8 text"),
    (f'{{"run_id": "r1", "pipeline_sha256": "{SMOKE_SHA}", "stages": 3}}', "stages: expected a list, got int"),
    (f'{{"run_id": "r1", "pipeline_sha256": "{SMOKE_SHA}", "stages": [1]}}',
     "stages: item 0 must be a testcase (name, classname, seconds, kind, ...)"),
    (f'{{"run_id": "r1", "pipeline_sha256": "{SMOKE_SHA}", "stages": [{{"name": "b"}}]}}',
     "stages[0]: missing required field 'stages[0].classname'"),
    (f'{{"run_id": "r1", "pipeline_sha256": "{SMOKE_SHA}", "stages": [{{"name": "b", "classname": "c", "seconds": 1, '
     '"kind": "green"}]}', "stages[0].kind: 'green': expected one of pass, failure, error, skipped"),
    (f'{{"run_id": "r1", "pipeline_sha256": "{SMOKE_SHA}", "targets": []}}', "targets: expected a mapping, got list"),
    ("{}", "missing required field 'run_id'"),
    (f'{{"run_id": "../../x", "pipeline_sha256": "{SMOKE_SHA}"}}', "run_id: '../../x' is not a valid run id"),
])
def test_a_malformed_run_json_given_to_resume_is_a_job_error(tmp_path, text, message):
    run_dir = _resume_dir(tmp_path, "")
    (run_dir / "run.json").write_bytes(text.encode("utf-8", "surrogateescape") if "\xff" not in text
                                       else text.encode("latin-1"))
    before = (run_dir / "run.json").read_bytes()
    proc = run_farm("run", "pipelines/smoke.yaml", "--resume", str(run_dir), env={"FARM_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{run_dir / 'run.json'}" in proc.stderr and message in proc.stderr
    assert (run_dir / "run.json").read_bytes() == before and sorted(p.name for p in run_dir.iterdir()) == ["run.json"]
    assert not (tmp_path / "cache").exists()


def test_baselines_store_that_is_a_file_is_a_job_error(tmp_path):
    store = tmp_path / "store"
    store.write_text("")
    run_dir = tmp_path / "run"
    assert run_farm("import", "ipbench", str(ROOT / "tests" / "data" / "ipbench-sample.csv"), "--setup", "s",
                    "--out", str(run_dir)).returncode == 0
    for args in (["baseline", "list"], ["baseline", "save", str(run_dir), "--name", "v1"],
                 ["qualify", "--baseline", "v1", "--candidate", str(run_dir), "--out", str(tmp_path / "q")]):
        proc = run_farm(*args, env={"FARM_BASELINES": str(store)})
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (args, proc.stderr)
        assert f"$FARM_BASELINES={store}: the baseline store is not a directory" in proc.stderr


@pytest.mark.parametrize("kind", ["ipbench", "iperf3", "openssl"])
def test_import_of_a_device_is_refused_at_once(tmp_path, kind):
    proc = run_farm("import", kind, "/dev/zero", "--setup", "s", "--out", str(tmp_path / "imp"), timeout=30)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "/dev/zero: captured output is not a regular file" in proc.stderr
    assert not (tmp_path / "imp").exists()


def test_report_never_makes_a_path_of_a_hand_edited_target_name(tmp_path):
    run_dir = tmp_path / "run"
    assert run_farm("import", "ipbench", str(ROOT / "tests" / "data" / "ipbench-sample.csv"), "--setup", "s",
                    "--target", "t", "--out", str(run_dir)).returncode == 0
    csv = run_dir / "results.csv"
    csv.write_text(csv.read_text().replace(",t,", ",x/../../../evil,"))  # plots/sweep-x/../../../evil.png
    proc = run_farm("report", str(run_dir))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{csv}: 'x/../../../evil' is not a valid target name" in proc.stderr
    assert not list(tmp_path.rglob("*.png"))
