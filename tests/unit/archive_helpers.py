"""A run that booted a real image directory, without QEMU: the real runner and run directory, an
injected flow that boots nothing (tests/unit/test_runner.py's), the real archive listener."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from farm.bench.registry import BenchmarkSpec
from farm.images.image import load_image
from farm.results.record import Measurement

ROOT = Path(__file__).resolve().parent.parent.parent
ENV = ROOT / "env" / "qemu-maaxboard.yaml"


def fake_image(folder: Path, name: str = "fake", seed: bytes = b"kernel", size: int = 200_000) -> Path:
    """An image directory as farm build makes one: a kernel, an initrd, a DTB and manifest.json."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"Image": b"MZ\xff\xfe" + (seed * (size // len(seed) + 1))[:size - 4],  # binary, as a kernel is
             "initrd.cpio.gz": b"\x1f\x8b initrd " + seed * 100,
             "board.dtb": b"\xd0\x0d\xfe\xed" + seed}
    for n, data in files.items():
        (folder / n).write_bytes(data)
    manifest = {"name": name, "arch": "arm64", "key": hashlib.sha256(seed).hexdigest(), "kernel": "Image",
                "initrd": "initrd.cpio.gz", "kernel_version": "6.1.0-fake", "dtbs": ["board.dtb"],
                "artifacts": {n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)} for n, d in files.items()}}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return folder


def pipeline_tree(root: Path, extra: str = "") -> Path:
    """pipelines/p.yaml naming ../images/fake.yaml, as the repository lays them out."""
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "images" / "fake.yaml").write_text("name: fake\narch: arm64\nkernel: {package: linux-image-arm64}\n")
    (root / "pipelines").mkdir(exist_ok=True)
    path = root / "pipelines" / "p.yaml"
    path.write_text(f"name: archived\nimage: ../images/fake.yaml\ntargets: [{{env: {ENV}}}]\n"
                    f"setups: [{{name: a}}]\nbenchmarks: [{{count: {{}}}}]\n{extra}")
    return path


def values(*numbers: float):
    """A benchmark measuring ``numbers`` in turn, one a run."""
    left = list(numbers)

    def run(ctx, params):
        return [Measurement("count", "value", left.pop(0) if left else numbers[-1], "count", {})]
    return {"count": BenchmarkSpec("count", "test", run)}


def use_image(monkeypatch, image_dir: Path, built: list | None = None) -> None:
    """The runner's build gives ``image_dir`` (and records that it was asked)."""
    import farm.run.runner

    def build(request, carried=None):
        if built is not None:
            built.append(request)
        return load_image(image_dir)
    monkeypatch.setattr(farm.run.runner, "build", build)


def archived_run(tmp_path: Path, monkeypatch, *numbers: float, extra: str = ""):
    """A run of :func:`pipeline_tree`'s pipeline on the fake flow with a fake image (its benchmark measuring
    ``numbers``, see :func:`values`), stored in ``tmp_path``'s own store (results.db) and archived in its own
    archive (archive/) when it ends; its baselines (baselines/) there too."""
    from farm.run import run_pipeline
    from tests.fakes import FakeFlow

    monkeypatch.setenv("FARM_ARCHIVE", str(tmp_path / "archive"))
    monkeypatch.setenv("FARM_DB", str(tmp_path / "results.db"))
    monkeypatch.setenv("FARM_BASELINES", str(tmp_path / "baselines"))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    use_image(monkeypatch, fake_image(tmp_path / "img"))
    return run_pipeline(pipeline_tree(tmp_path / "repo", extra=extra), out=tmp_path / "run",
                        flow_for=lambda s: FakeFlow(), registry=values(*(numbers or (1.0,))))
