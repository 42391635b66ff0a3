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


# --- issue 31: file names, env files, LG_SECRET_*, escaped forms -------------------------------------

def test_a_published_file_name_never_holds_a_secret(tmp_path):
    """A target and a setup (hand-edited into results.csv) holding a secret: farm report's wide CSV
    and plot are named with ``masked`` in its place, and hold it in none of their text."""
    out = tmp_path / "imp"
    assert farm("import", "ipbench", DATA / "ipbench-sample.csv", "--setup", "lab", "--target", "board",
                "--out", out).returncode == 0
    csv_path = out / "results.csv"
    csv_path.write_text(csv_path.read_text().replace(",board,", f",board-{TOKEN},").replace(",lab,", f",lab-{TOKEN},"))
    proc = farm("report", out, "--no-step-summary", env={"FARM_SECRET_TOKEN": TOKEN})
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    assert "sweep-board-masked-lab-masked.csv" in names and "plots/sweep-board-masked.png" in names, names
    assert not [n for n in names if TOKEN in n]
    for path in out.rglob("*"):
        if path.is_file() and path.name != "results.csv":
            assert TOKEN.encode() not in path.read_bytes(), path


def test_env_files_refuse_secret_tags_labgrid_cannot_read(tmp_path):
    """farm's loader knew !secret, labgrid's does not: an env file farm accepted failed in labgrid.
    Refused by name and line; !template "$LG_SECRET_..." is what labgrid substitutes, and farm masks it."""
    from labgrid import Environment

    from farm.boot.session import EnvFile
    from farm.errors import JobError

    twin = (Path(__file__).resolve().parents[2] / "env" / "qemu-maaxboard.yaml").read_text()
    env_file = tmp_path / "board.yaml"
    env_file.write_text(twin.replace("targets:\n", "targets:\n", 1).replace(
        "../images/", str(Path(__file__).resolve().parents[2] / "images") + "/")
        + "\noptions:\n  password: !secret hunter2-uboot\n")
    with pytest.raises(JobError) as refused:
        EnvFile.load(env_file)
    line = env_file.read_text().splitlines().index("  password: !secret hunter2-uboot") + 1
    assert str(refused.value).startswith(f"{env_file}:{line}: !secret is farm's tag, which labgrid cannot read")
    assert '!template "$LG_SECRET_NAME"' in str(refused.value) and "hunter2" not in str(refused.value)
    proc = farm("boot", "--env", env_file, "--image", tmp_path)
    assert proc.returncode == 2 and "!secret is farm's tag" in proc.stderr and "Traceback" not in proc.stderr

    env_file.write_text(env_file.read_text().replace("!secret hunter2-uboot", '!template "$LG_SECRET_UBOOT"'))
    EnvFile.load(env_file)  # farm reads it
    os.environ["LG_SECRET_UBOOT"] = "hunter2-uboot"
    try:
        assert Environment(str(env_file)).config.data["options"]["password"] == "hunter2-uboot"  # labgrid too
        secrets.register_environment()
        assert secrets.mask("password hunter2-uboot") == "password *****"
    finally:
        del os.environ["LG_SECRET_UBOOT"]


def test_a_secret_is_masked_in_its_html_and_url_forms():
    import html
    import urllib.parse

    import markupsafe  # what the dashboard's jinja2 templates escape with

    value = 'it\'s a "S3cret"&key'
    secrets.register(value)
    for form in (html.escape(value), html.escape(value, quote=False), str(markupsafe.escape(value)),
                 urllib.parse.quote(value), urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)):
        assert secrets.mask(f"<td>{form}</td>") == "<td>*****</td>", form


def test_the_store_url_password_is_a_secret():
    secrets.register_environment({"FARM_DB": "postgresql://farm:db-Pa55word@db.lab/farm"})
    assert secrets.mask("connecting with db-Pa55word") == "connecting with *****"
    assert secrets.url_passwords("postgresql://u@h/d?password=x%40y&sslpassword=zz") == ["x@y", "zz"]
    assert secrets.url_passwords("/home/me/results.db") == []
