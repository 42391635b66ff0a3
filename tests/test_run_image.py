"""`farm run --image DIR`: a built image (a CI job's artifact) is checked before anything runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from .conftest import run_farm


def fake_image(path: Path, arch: str = "arm64") -> Path:
    path.mkdir(parents=True)
    artifacts = {}
    for name, data in (("Image", b"kernel"), ("initrd.cpio.gz", b"initrd")):
        (path / name).write_bytes(data)
        artifacts[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    (path / "manifest.json").write_text(json.dumps({"name": "maaxboard-bench", "arch": arch, "kernel": "Image",
                                                    "initrd": "initrd.cpio.gz", "key": "k" * 64,
                                                    "artifacts": artifacts}))
    return path


@pytest.mark.parametrize("damage, message", [
    (lambda d: (d / "manifest.json").unlink(), "not an image directory (no manifest.json"),
    (lambda d: (d / "initrd.cpio.gz").write_bytes(b"initr"), "initrd.cpio.gz does not match the sha256"),
    (lambda d: (d / "Image").unlink(), "artifact listed in manifest.json is missing"),
])
def test_run_refuses_a_damaged_image_before_anything_runs(tmp_path, damage, message):
    image = fake_image(tmp_path / "img")
    damage(image)
    proc = run_farm("run", "pipelines/smoke.yaml", "--image", str(image), "--out", str(tmp_path / "r"))
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r").exists()  # refused before the run directory was made


def test_run_refuses_an_image_of_another_arch(tmp_path):
    image = fake_image(tmp_path / "img", arch="amd64")
    proc = run_farm("run", "pipelines/smoke.yaml", "--image", str(image), "--out", str(tmp_path / "r"))
    assert proc.returncode == 2
    assert f"--image {image}: is amd64, but the run's targets are arm64" in proc.stderr


def test_run_refuses_two_images_of_one_arch(tmp_path):
    a, b = fake_image(tmp_path / "a"), fake_image(tmp_path / "b")
    proc = run_farm("run", "pipelines/smoke.yaml", "--image", str(a), "--image", str(b), "--out", str(tmp_path / "r"))
    assert proc.returncode == 2
    assert f"--image {b}: a second arm64 image (first: {a})" in proc.stderr
