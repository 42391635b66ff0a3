"""The job summary of a run is written once, by the runner, with the final stage count (publish too);
summary.md says what run.json holds (cores, kernel), never `? cpus, kernel ?`."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import farm.boot.flow
import farm.run.runner
from farm.cli import main
from farm.errors import InfrastructureError

from .test_run_junit import boot_raising, pipeline  # noqa: F401  (the fixture: build and board injected)


def test_run_appends_one_final_summary(pipeline, tmp_path, monkeypatch):  # noqa: F811
    step = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    monkeypatch.setattr(farm.boot.flow, "boot_target", boot_raising(InfrastructureError("no U-Boot prompt")))
    out = tmp_path / "run"
    assert main(["run", str(pipeline), "--out", str(out)]) == 3
    text = step.read_text()
    assert text.count("# farm run ") == 1
    cases = list(ET.parse(out / "junit.xml").getroot().iter("testcase"))
    assert [c.get("name") for c in cases][-1] == "publish"
    passed, total = map(int, re.search(r"(\d+) of (\d+) stages passed", text).groups())
    assert total == len(cases) and passed == sum(1 for c in cases if len(c) == 0 or
                                                 all(e.tag in ("system-out", "system-err") for e in c))
    assert "| publish | pass |" in text
    assert (out / "summary.md").read_text().rstrip("\n") == text.rstrip("\n")
