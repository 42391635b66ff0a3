"""``farm schema``: the JSON Schema of each kind of file farm reads validates every such file of the
repository with check-jsonschema (as an editor with yaml-language-server would) and refuses a misspelt key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT, run_farm

pytest.importorskip("check_jsonschema", reason="check-jsonschema (test extra) validates the files")

#: the files of each kind in the repository (the CI files in pipelines/ are GitLab's: tests/unit/test_ci_files.py)
FILES = {"pipeline": sorted(p for p in (ROOT / "pipelines").glob("*.yaml") if not p.name.startswith("gitlab-ci")),
         "recipe": sorted((ROOT / "images").glob("*.yaml"))}


def _schema(tmp_path: Path, name: str) -> Path:
    proc = run_farm("schema", name)
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / f"{name}.schema.json"
    path.write_text(proc.stdout)
    assert json.loads(proc.stdout)["$schema"].startswith("https://json-schema.org/")
    return path


def _check(schema: Path, *files: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--schemafile", str(schema), *map(str, files)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_file_of_the_repository_validates_against_its_schema(tmp_path, name):
    assert len(FILES[name]) >= 5, FILES[name]  # the glob found the files: the check would pass on nothing
    proc = _check(_schema(tmp_path, name), *FILES[name])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_schema_refuses_a_misspelt_key_where_farm_does(tmp_path):
    schema = _schema(tmp_path, "pipeline")
    smoke = (ROOT / "pipelines" / "smoke.yaml").read_text()
    for good, bad, key in (("\nbenchmarks:", "\nbenchmark:", "benchmark"),
                           ("  - iperf3: {", "  - iperf3: {durration: 3, ", "benchmarks[0].iperf3.durration")):
        assert good in smoke
        path = tmp_path / "smoke.yaml"
        path.write_text(smoke.replace(good, bad, 1))
        proc = _check(schema, path)
        assert proc.returncode == 1 and "Additional properties are not allowed" in proc.stdout, proc.stdout
        refused = run_farm("run", str(path), "--out", str(tmp_path / "run"))  # farm refuses it too, naming it
        assert refused.returncode == 2 and f"{key}: unknown field" in refused.stderr, refused.stderr
