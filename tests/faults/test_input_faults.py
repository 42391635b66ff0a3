"""Faults 10-13: hostile input is refused before anything runs (no QEMU needed)."""

from __future__ import annotations

import pytest

from farm.boot.session import EnvFile
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
