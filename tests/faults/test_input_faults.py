"""Faults 10-13: hostile input is refused before anything runs (no QEMU needed)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from farm.boot.session import EnvFile
from farm.config import load_yaml
from farm.errors import JobError
from farm.pipeline import load_pipeline

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
    assert proc.returncode == 2


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
