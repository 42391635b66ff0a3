"""The farm command explains itself and reports bad input in one line."""

from __future__ import annotations

import pytest

from .conftest import run_farm


@pytest.mark.parametrize("args", [[], ["build"], ["boot"], ["run"]])
def test_help(args):
    proc = run_farm(*args, "--help")
    assert proc.returncode == 0
    assert "usage: farm" in proc.stdout
    assert len(proc.stdout.splitlines()) > 5


def test_top_level_help_lists_commands_and_exit_codes():
    out = run_farm("--help").stdout
    for word in ("build", "boot", "run", "exit codes", "infrastructure"):
        assert word in out


def test_wrong_env_path(tmp_path):
    proc = run_farm("boot", "--env", "env/nope.yaml", "--image", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == "farm: job error: env/nope.yaml: env file not found"


def test_run_with_wrong_env_path_fails_before_building(tmp_path):
    proc = run_farm("run", "pipelines/smoke.yaml", "--env", "env/nope.yaml", "--out", str(tmp_path / "r"),
                    env={"FARM_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 2
    assert proc.stderr.strip() == "farm: job error: env/nope.yaml: env file not found"
    assert not (tmp_path / "cache").exists()


def test_image_dir_without_manifest(tmp_path):
    proc = run_farm("boot", "--env", "env/qemu-maaxboard.yaml", "--image", str(tmp_path))
    assert proc.returncode == 2
    assert f"{tmp_path}/manifest.json: not an image directory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_env_file_with_unknown_target(tmp_path):
    proc = run_farm("boot", "--env", "env/qemu-maaxboard.yaml", "--target", "nope", "--image", str(tmp_path))
    assert proc.returncode == 2
    assert "env/qemu-maaxboard.yaml:" in proc.stderr and "no target 'nope'" in proc.stderr


def test_build_with_a_bad_guest_recipe_names_it(tmp_path):
    """farm build RECIPE --guest GUEST_RECIPE: a guest recipe that is not there, or of another
    architecture, is a job error naming it (exit 2, no traceback), before the host image is built."""
    proc = run_farm("build", "images/maaxboard-bench.yaml", "--guest", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 2, proc.stderr
    assert f"{tmp_path / 'nope.yaml'}: image recipe not found" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_farm("build", "images/maaxboard-bench.yaml", "--guest", "images/x86-bench.yaml")
    assert proc.returncode == 2, proc.stderr
    assert ("images/maaxboard-bench.yaml: the guest image 'x86-bench' is amd64 but the host is arm64"
            in proc.stderr), proc.stderr
