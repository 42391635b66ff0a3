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

#: the files of each kind in the repository (the CI files in pipelines/ are GitLab's: tests/unit/test_ci_files.py;
#: env/exporter-*.yaml is labgrid-exporter's configuration, a Jinja template, not an env file)
FILES = {"pipeline": sorted(p for p in (ROOT / "pipelines").glob("*.yaml") if not p.name.startswith("gitlab-ci")),
         "recipe": sorted((ROOT / "images").glob("*.yaml")),
         "env": sorted(p for p in (ROOT / "env").glob("*.yaml") if not p.name.startswith("exporter"))}


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


def _untagged(tmp_path: Path, path: Path) -> Path:
    """An env file with labgrid's ``!template`` tags taken off their values (check-jsonschema knows no custom
    tag; yaml-language-server is told the tag, README): what the schema sees is the same string."""
    copy = tmp_path / "untagged" / path.name
    copy.parent.mkdir(exist_ok=True)
    copy.write_text(path.read_text().replace("!template ", ""))
    return copy


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_file_of_the_repository_validates_against_its_schema(tmp_path, name):
    assert len(FILES[name]) >= 5, FILES[name]  # the glob found the files: the check would pass on nothing
    files = [_untagged(tmp_path, p) for p in FILES[name]] if name == "env" else FILES[name]
    proc = _check(_schema(tmp_path, name), *files)
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


def test_the_env_schema_refuses_a_misspelt_farm_key_where_farm_does(tmp_path):
    """A misspelt key of what farm reads in an env file (a target's section, an attribute of farm's netboot
    strategy) is refused by the schema and by farm when it reads the file, naming its line; labgrid's own
    drivers keep their attributes free (labgrid checks them)."""
    from farm.boot.session import EnvFile
    from farm.errors import JobError

    schema = _schema(tmp_path, "env")
    twin = (ROOT / "env" / "qemu-maaxboard.yaml").read_text()
    for good, bad, key in (("    options:", "    optons:", "targets.maaxboard-twin.optons"),
                           ('bootargs: "quiet"', 'bootarg: "quiet"',
                            "targets.maaxboard-twin.drivers.UBootNetbootStrategy.bootarg")):
        assert twin.count(good) == 1
        path = tmp_path / "twin.yaml"
        path.write_text(twin.replace(good, bad))
        proc = _check(schema, path)
        assert proc.returncode == 1 and f"'{bad.split(':')[0].strip()}' was unexpected" in proc.stdout, proc.stdout
        line = path.read_text().splitlines().index(bad if bad.startswith(" ") else f"        {bad}") + 1
        with pytest.raises(JobError, match=rf"twin.yaml:{line}: {key}: unknown field .*did you mean"):
            EnvFile.load(path)
    labgrids = twin.replace("        login_timeout: 60\n", "        login_timeout: 60\n        not_farms: 1\n", 1)
    assert labgrids != twin
    path.write_text(labgrids)  # an attribute of labgrid's U-Boot driver: labgrid's to refuse, not farm's
    assert _check(schema, path).returncode == 0
    EnvFile.load(path)
