"""FARM_SECRET_* values are masked in every file and message of every command (not only live runs),
and a secret too short to mask safely is refused naming the variable. Through the real command: the
secrets are read from the environment when farm starts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from farm import secrets

DATA = Path(__file__).resolve().parent.parent / "data"
TOKEN = "s3cr3t-token"
QUOTED = 'pa"ss&<w>rd'  # escaped differently in JSON, XML and CSV


def farm(*args, env=None, cwd=None):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FARM_SECRET_")}
    environ.update(env or {})
    environ.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run([sys.executable, "-m", "farm.cli", *map(str, args)], capture_output=True, text=True,
                          env=environ, cwd=cwd, timeout=120)


def test_secrets_are_masked_in_every_file_and_message(tmp_path):
    env = {"FARM_SECRET_TOKEN": TOKEN, "FARM_SECRET_QUOTED": QUOTED}
    capture = tmp_path / f"lab-{TOKEN}.csv"  # the secret in a path, a setup and a target name
    shutil.copyfile(DATA / "ipbench-sample.csv", capture)
    # a setup name cannot hold quotes or '&' (names are checked when read): that secret is in a path
    b = f"b-{QUOTED}"
    outputs = []
    for name, setup in (("a", f"4-cores-{TOKEN}"), (b, f"one-{TOKEN}")):
        proc = farm("import", "ipbench", capture, "--setup", setup, "--target", f"board-{TOKEN}",
                    "--out", tmp_path / name, env=env)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc)
        results = tmp_path / name / "results.csv"
        assert TOKEN not in results.read_text() and "*****" in results.read_text()
        # as a run written by hand or by an older farm: the secrets in the records themselves
        results.write_text(results.read_text().replace("board-*****", f"board-{TOKEN}")
                           .replace(f"4-cores-*****", f"4-cores-{TOKEN}").replace("one-*****", f"one-{TOKEN}"))
        assert TOKEN in results.read_text()
        proc = farm("report", tmp_path / name, "--no-step-summary", env=env)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc)
    outputs.append(farm("compare", tmp_path / "a", tmp_path / b, "--out", tmp_path / "cmp", env=env))
    assert outputs[-1].returncode == 0, outputs[-1].stderr
    outputs.append(farm("qualify", "--baseline", tmp_path / "a", "--candidate", tmp_path / b,
                        "--out", tmp_path / "q", env=env))
    assert outputs[-1].returncode in (0, 1), outputs[-1].stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".csv", ".json", ".md", ".txt", ".xml")
               and p.parent != tmp_path]
    names = {p.relative_to(tmp_path).as_posix() for p in written}
    assert {"a/results.csv", "a/run.json", "a/summary.md", "a/metrics.txt", "cmp/compare.csv", "cmp/compare.md",
            "q/qualify.md", "q/qualify.csv", "q/junit.xml"} <= names
    for path in written:
        if path.name == "results.csv" and path.parent.name in ("a", b):
            continue  # the hand-edited input
        text = path.read_text()
        for secret in (TOKEN, QUOTED, 'pa\\"ss', "pa&quot;ss", "&amp;&lt;w&gt;", 'pa""ss'):
            assert secret not in text, f"{path}: {secret}"
        assert "*****" in text or r"\*\*\*\*\*" in text or path.name.startswith("sweep-"), path
    for proc in outputs:
        assert TOKEN not in proc.stdout + proc.stderr and QUOTED not in proc.stdout + proc.stderr
    assert "*****" in outputs[0].stderr  # "imported ... from .../lab-*****.csv"


@pytest.mark.parametrize("value", ["abc", "hunt2", "123456", "1.5e+10"])
def test_a_secret_too_short_to_mask_is_refused(tmp_path, value):
    proc = farm("import", "ipbench", DATA / "ipbench-sample.csv", "--setup", "s", "--out", tmp_path / "o",
                env={"FARM_SECRET_PIN": value})
    assert proc.returncode == 2
    assert proc.stderr.startswith("farm: job error: secret $FARM_SECRET_PIN is ")
    assert value not in proc.stderr and "Traceback" not in proc.stderr and not (tmp_path / "o").exists()


def test_refusal_rule():
    assert secrets.refusal("hunter2") is None and secrets.refusal("s3cr3t") is None
    assert "at least 6" in secrets.refusal("hunt2")
    assert "digits" in secrets.refusal("10:00:01")
