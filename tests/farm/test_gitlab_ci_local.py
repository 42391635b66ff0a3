"""pipelines/gitlab-ci.yml run end to end by gitlab-ci-local (shell executor) against the virtual farm:
the branch pipeline with --shell-isolation, as a real runner runs it (each job in a fresh copy of the
repository's files, its own `make setup`, the artifacts passed from job to job): build, then boot-bench
booting the build job's artifact on a place the coordinator gives, publish; and a tag pipeline with no
baseline yet: qualify may fail (exit 2), bootstrap-baseline makes the first one.

The branch pipeline is also a documented command (README's CI section): 557 s here (2 cores, load average
10-13 from other work; three `make setup` of a fresh .venv from pip's cache are most of it):

    farm lab up; cd <a clone>; gitlab-ci-local --file pipelines/gitlab-ci.yml --shell-isolation \
        --variable LG_COORDINATOR=$LG_COORDINATOR
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ..conftest import ROOT

TOOLS = Path(os.environ.get("FARM_TOOLS") or Path.home() / ".cache" / "farm-tools")
GITLAB_CI_LOCAL = TOOLS / "gitlab-ci-local" / "node_modules" / ".bin" / "gitlab-ci-local"

pytestmark = [pytest.mark.boot,
              pytest.mark.skipif(not GITLAB_CI_LOCAL.exists() or shutil.which("git") is None,
                                 reason="gitlab-ci-local (npm) not installed: scripts/setup.sh installs it where npm is")]


@pytest.fixture
def project(tmp_path) -> Path:
    """This checkout's files (as committed or changed, not ignored) in a repository of their own, with a
    .venv whose farm is this checkout's (setup.sh finds it up to date and installs nothing)."""
    repo = tmp_path / "project"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    git = ["git", "-c", "user.name=farm-test", "-c", "user.email=farm-test@localhost"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "snapshot"], cwd=repo, check=True)
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, args in (("python", ""), ("farm", " -m farm.cli")):
        (bin_dir / name).write_text(f'#!/bin/sh\nPYTHONPATH={repo} exec {sys.executable}{args} "$@"\n')
        (bin_dir / name).chmod(0o755)
    stamp = subprocess.run(f"cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1", shell=True, cwd=repo,
                           capture_output=True, text=True, check=True).stdout
    (repo / ".venv" / ".farm-setup").write_text(stamp)
    return repo


def gitlab_ci_local(project: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FARM_BASELINES": str(tmp_path / "baselines")}
    return subprocess.run([str(GITLAB_CI_LOCAL), "--file", "pipelines/gitlab-ci.yml", "--home", str(tmp_path / "gcl-home"),
                           "--variable", f"LG_COORDINATOR={os.environ['LG_COORDINATOR']}",
                           "--variable", f"FARM_BASELINES={tmp_path / 'baselines'}", *args],
                          cwd=project, capture_output=True, text=True, env=env, timeout=1500)


def test_branch_pipeline_end_to_end_with_shell_isolation(virtual_lab, maaxboard_image, project, tmp_path):
    import time

    t0 = time.monotonic()
    proc = gitlab_ci_local(project, tmp_path, "--shell-isolation")
    log = proc.stdout + proc.stderr
    print(f"gitlab-ci-local --shell-isolation: the branch pipeline in {time.monotonic() - t0:.0f} s")
    assert proc.returncode == 0, log[-4000:]
    for job in ("build", "boot-bench", "publish"):
        assert f"PASS  {job}" in log, job
    # each job in a directory of its own, made afresh (its .venv too), the artifacts handed on
    for job in ("build", "boot-bench", "publish"):
        assert (project / ".gitlab-ci-local" / "builds" / job).is_dir(), job
        assert re.search(rf"^{job}\s+> setup: virtualenv \.venv", log, re.M), job
    assert re.search(r"^boot-bench\s+exported artifacts", log, re.M) and "no artifacts was copied" not in log
    assert "artifacts from boot-bench was empty" not in log
    assert len(re.findall(r"^boot-bench\s+\$ farm janitor$", log, re.M)) == 2
    assert "build: --image image (maaxboard-bench, arm64): not rebuilt" in log  # the build job's artifact
    assert "on place maaxboard-" in log
    run = project / "results" / "run"
    suite = ET.parse(run / "junit.xml").getroot().find("testsuite")
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    assert (run / "summary.md").is_file() and (run / "metrics.txt").is_file()


def test_tag_pipeline_bootstraps_the_first_baseline(virtual_lab, maaxboard_image, project, tmp_path):
    proc = gitlab_ci_local(project, tmp_path, "--variable", "CI_COMMIT_TAG=v1.0", "--manual", "bootstrap-baseline")
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert "WARN  qualify" in log or "qualify" in log and "allowed to fail" in log, log[-3000:]
    assert "PASS  bootstrap-baseline" in log
    assert (tmp_path / "baselines" / "release" / "results.csv").is_file()
    assert (tmp_path / "baselines" / "v1.0" / "results.csv").is_file()
