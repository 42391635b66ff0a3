"""What a newcomer adds, and nothing else: a benchmark (a parser, its params, its registration), an import kind
with an option of its own, and a boot flow (a fake bootloader), as a lab's package outside farm
(tests/lab_plugin: one module and a pyproject.toml declaring it a plugin in the entry-point group ``farm``),
installed by pip into a virtualenv of its own. farm is not edited and this process never sees the package:
``farm import`` reads the kind, ``farm run`` runs the benchmark on the flow and ``farm schema pipeline``
declares the flow's settings and the benchmark's params (farm.schema classes, as farm's own), each through
the CLI, in a subprocess of that virtualenv's python (docs/architecture.md: where to add what)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from farm.bench.registry import importers, registered
from farm.flows import flow_types
from farm.measure.params import parse_params
from farm.results.csvout import read_records

ROOT = Path(__file__).resolve().parents[2]
LAB_PLUGIN = ROOT / "tests" / "lab_plugin"


@pytest.fixture
def lab_python(tmp_path) -> Path:
    """The python of a new virtualenv with the lab's package installed (pip, from its directory, offline);
    farm and labgrid are this one's (a .pth adds this virtualenv's site-packages: nothing is downloaded)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "farm-under-test.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    package = shutil.copytree(LAB_PLUGIN, tmp_path / "lab-plugin")  # pip builds in the directory it is given
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-build-isolation", "--no-index", str(package)], check=True, capture_output=True, timeout=300)
    return python


#: the identity params of a run's throughput records, one line each
KEYS = """import sys
from farm.results.csvout import read_records
from farm.results.identity import MetricKey
print(*sorted(MetricKey.of(r).params for r in read_records(sys.argv[1]) if r.metric == "throughput"), sep="\\n")
"""


def farm(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONPATH")}
    return subprocess.run([python, "-m", "farm.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=env)


def system_image(path: Path) -> Path:
    """The "system image" the lab's flow boots: a directory with a manifest.json."""
    path.mkdir()
    artifacts = {}
    for name in ("kernel.elf", "initrd"):
        (path / name).write_bytes(b"\0")
        artifacts[name] = {"size": 1, "sha256": hashlib.sha256(b"\0").hexdigest()}
    (path / "manifest.json").write_text(json.dumps({"name": "toy-system", "arch": "arm64", "key": "k" * 64,
                                                    "kernel": "kernel.elf", "initrd": "initrd", "artifacts": artifacts}))
    return path


def test_a_labs_package_adds_a_benchmark_an_import_kind_and_a_flow(lab_python, tmp_path):
    # farm itself knows none of it: only the virtualenv with the package installed does
    assert "frob" not in registered() and "frob" not in importers() and "fakeboot" not in flow_types()

    # farm import KIND FILE, with the option the importer declares
    capture = tmp_path / "frob.txt"
    capture.write_text("frob alpha 100 3\nfrob beta 250.5 4\n")
    done = farm(lab_python, "import", "frob", str(capture), "--setup", "lab", "--flavour", "spicy",
                "--out", str(tmp_path / "imported"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = read_records(tmp_path / "imported" / "results.csv")
    assert sorted((r.suite, r.benchmark, r.metric, r.value, r.params) for r in records) == [
        ("toy", "frob", "effort", 3.0, "flavour=spicy;name=alpha"), ("toy", "frob", "effort", 4.0, "flavour=spicy;name=beta"),
        ("toy", "frob", "throughput", 100.0, "flavour=spicy;name=alpha"),
        ("toy", "frob", "throughput", 250.5, "flavour=spicy;name=beta")]
    help_text = farm(lab_python, "import", "--help", cwd=tmp_path).stdout
    assert "frob (frob's output" in " ".join(help_text.split()) and "--flavour FLAVOUR" in help_text

    # farm run of a pipeline naming the benchmark, on a setup of the lab's flow
    system_image(tmp_path / "system")
    (tmp_path / "toy.yaml").write_text("targets:\n  toy-board:\n    options: {arch: arm64}\n")
    toy = ("name: toy\nimage: unused-by-this-flow.yaml\ntargets: [{env: toy.yaml}]\n"
           "setups:\n  - {name: fake, fakeboot: {image: system}}\n"
           "benchmarks:\n  - frob: {rounds: 3, flavour: spicy}\n"
           "settle: false\n")  # the toy's shell is this (busy, shared) machine's: it never settles
    (tmp_path / "toy-pipeline.yaml").write_text(toy)
    done = farm(lab_python, "run", str(tmp_path / "toy-pipeline.yaml"), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = read_records(tmp_path / "run" / "results.csv")
    throughput = sorted((r for r in records if r.metric == "throughput"), key=lambda r: r.value)
    assert [(parse_params(r.params), r.value) for r in throughput] == [
        ({"flavour": "spicy", "name": f"spicy{i}", "rounds": "3"}, 1000.0 * 10 + i) for i in (1, 2, 3)]
    # the typed params decide the record key: flavour (identity) is in it, rounds (run length) is not (as the
    # lab's farm keys them: this process knows no frob)
    keyed = subprocess.run([lab_python, "-c", KEYS, str(tmp_path / "run" / "results.csv")], capture_output=True,
                           text=True, check=True).stdout.split()
    assert [parse_params(params) for params in keyed] == [{"flavour": "spicy", "name": f"spicy{i}"} for i in (1, 2, 3)]
    assert {(r.suite, r.benchmark, r.target, r.setup, r.image) for r in records} == {
        ("toy", "frob", "toy-board", "fake", "toy-system")}
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    (boot,) = info["targets"]["toy-board"]["boots"]
    assert boot["flow"] == "fakeboot" and boot["bootloader"] == "FakeBoot 1.0" and boot["cpus"] >= 1
    assert info["setups"]["fake"]["flow"] == "fakeboot" and info["setups"]["fake"]["fakeboot"] == {
        "image": str(tmp_path / "system"), "prompt": "fake> "}
    assert "toy-system" in info["images"] and info["images"]["toy-system"]["given"]
    assert [s["name"] for s in info["stages"]] == ["build", "boot toy-board/fake", "toy.frob toy-board/fake",
                                                   "publish"]

    # the lab's flow settings and params are declared (farm.schema) like farm's: in the pipeline file's JSON
    # Schema, and read by the same reader, which names the file, line and field of a misspelt key; a farm
    # benchmark asking for what the lab's flow does not give (a system's console) is refused when the file is read
    schema = json.loads(farm(lab_python, "schema", "pipeline", cwd=tmp_path).stdout)
    assert schema["$defs"]["FakeBootSettings"]["required"] == ["image"]
    assert set(schema["$defs"]["FakeBootSettings"]["properties"]) == {"image", "prompt"}
    assert set(schema["$defs"]["FrobParams"]["properties"]) == {"rounds", "flavour"}
    for name, bad, message in (
            ("misspelt.yaml", toy.replace("{image: system}", "{image: system, promt: 'x> '}"),
             ":5: setups[0].fakeboot.promt: unknown field (allowed: image, prompt); did you mean 'prompt'?"),
            ("console.yaml", toy.replace("frob: {rounds: 3, flavour: spicy}", "console: {}"),
             ":7: benchmarks[0].console: needs a system image's console on the target, and setup fake")):
        (tmp_path / name).write_text(bad)
        done = farm(lab_python, "run", name, "--out", str(tmp_path / "refused"), cwd=tmp_path)
        assert done.returncode == 2 and f"{name}{message}" in done.stderr, done.stderr
        assert not (tmp_path / "refused").exists()  # refused before anything was made
