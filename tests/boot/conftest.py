"""Twin runs that several tests read: each is a real `farm run` made once per session, so that a check which
needs a published run directory of the main job reads one instead of booting the twin for itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ..conftest import run_farm


@pytest.fixture(scope="session")
def smoke_run(results_store, maaxboard_image, tftp_root, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """`farm run pipelines/smoke.yaml` as the README's main job runs it (one boot of the MaaXBoard twin),
    ingested into the session's store and archived in its archive ($FARM_DB, $FARM_ARCHIVE: tests/conftest.py).
    Its readers must not change its directory: copy what they would edit."""
    out = tmp_path_factory.mktemp("smoke") / "run"
    return run_farm("run", "pipelines/smoke.yaml", "--out", str(out)), out
