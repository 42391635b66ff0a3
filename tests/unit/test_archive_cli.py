"""The farm archive and farm reproduce commands as a user types them (a subprocess each): what they
print, and the exit codes CI acts on, for what needs no boot."""

from __future__ import annotations

import json
import os

import pytest

from farm.archive import open_archive
from farm.run import run_pipeline

from ..conftest import run_farm
from .archive_helpers import fake_image, pipeline_tree, use_image, values
from ..fakes import FakeFlow


@pytest.fixture
def lab(tmp_path, monkeypatch):
    env = {"FARM_ARCHIVE": str(tmp_path / "archive"), "FARM_DB": str(tmp_path / "results.db"),
           "FARM_BASELINES": str(tmp_path / "baselines")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    use_image(monkeypatch, fake_image(tmp_path / "img"))
    monkeypatch.setenv("FARM_ARCHIVE", "none")  # the run is archived by the command below, not when it ends
    run = run_pipeline(pipeline_tree(tmp_path / "repo"), out=tmp_path / "run", flow_for=lambda s: FakeFlow(),
                       registry=values(1.0))
    monkeypatch.setenv("FARM_ARCHIVE", env["FARM_ARCHIVE"])
    return tmp_path, env, run


def test_farm_archive_run_dir_then_list_verify_and_gc(lab):
    tmp_path, env, run = lab
    proc = run_farm("archive", str(run.path), env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [run.run_id, env["FARM_ARCHIVE"]]
    assert f"archived run {run.run_id}: 1 image(s), 1 recipe(s), the pipeline file" in proc.stderr
    again = run_farm("archive", str(run.path), env=env)
    assert "already archived, unchanged" in again.stderr
    listed = run_farm("archive", "list", env=env)
    assert listed.returncode == 0 and listed.stdout.startswith(run.run_id) and "fake" in listed.stdout
    as_json = json.loads(run_farm("archive", "list", "--json", env=env).stdout)
    assert as_json[0]["run_id"] == run.run_id and as_json[0]["size"] > 200_000
    verify = run_farm("archive", "verify", env=env)
    assert verify.returncode == 0 and "all intact" in verify.stderr
    record = open_archive().record(run.run_id)
    kernel = open_archive().object_path(record.images["fake"].artifacts["Image"].sha256)
    os.chmod(kernel, 0o644)
    kernel.write_bytes(b"tampered" + kernel.read_bytes()[8:])
    verify = run_farm("archive", "verify", run.run_id, env=env)
    assert verify.returncode == 3 and f"CORRUPT: run {run.run_id}: object" in verify.stderr
    assert run_farm("archive", "gc", env=env).returncode == 2  # no rule given: nothing is guessed
    assert "--keep" in run_farm("archive", "gc", env=env).stderr
    gc = run_farm("archive", "gc", "--keep", "0", "--dry-run", env=env)
    assert gc.returncode == 0 and f"would remove run {run.run_id}" in gc.stderr
    gc = run_farm("archive", "gc", "--keep", "0", env=env)
    assert f"removed run {run.run_id}" in gc.stderr and open_archive().run_ids() == []
    assert run_farm("archive", "list", "--keep", "3", env=env).returncode == 2  # gc's option, not list's


def test_farm_reproduce_errors_name_what_is_wrong_before_anything_boots(lab):
    tmp_path, env, run = lab
    missing = run_farm("reproduce", run.run_id, env=env)
    assert missing.returncode == 2
    assert f"run {run.run_id} is not in the archive {env['FARM_ARCHIVE']}" in missing.stderr
    by_dir = run_farm("reproduce", str(run.path), env=env)
    assert f"archive it first: farm archive {run.path}" in by_dir.stderr
    assert run_farm("archive", str(run.path), env=env).returncode == 0
    record = open_archive().record(run.run_id)
    kernel = open_archive().object_path(record.images["fake"].artifacts["Image"].sha256)
    os.chmod(kernel, 0o644)
    kernel.write_bytes(kernel.read_bytes()[:-1] + b"!")
    tampered = run_farm("reproduce", run.run_id, env={**env, "FARM_CACHE": str(tmp_path / "empty")})
    assert tampered.returncode == 3
    assert f"infrastructure error: run {run.run_id}: image fake: Image: corrupt in the archive" in tampered.stderr
    assert "refused" in tampered.stderr
    assert not list((tmp_path / "empty").glob("archive/images/fake-*"))  # nothing fetched under its name
    off = run_farm("reproduce", run.run_id, env={**env, "FARM_ARCHIVE": "none"})
    assert off.returncode == 2 and "the archive is off" in off.stderr
