"""``farm completion bash``: the script the real CLI prints, sourced in a real bash, asked as bash asks it."""

from __future__ import annotations

import argparse
import shutil
import subprocess

import pytest

from farm.cli import build_parser
from farm.completion import command_table

from .conftest import ROOT, run_farm

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@pytest.fixture(scope="module")
def script(tmp_path_factory) -> str:
    proc = run_farm("completion", "bash")
    assert proc.returncode == 0, proc.stderr
    path = tmp_path_factory.mktemp("completion") / "farm.bash"
    path.write_text(proc.stdout)
    return str(path)


def complete(script: str, *words: str, cwd=ROOT) -> list[str]:
    """COMPREPLY for the command line ``words`` (the last one being completed), as bash's
    programmable completion calls the function ``complete -F`` registered."""
    line = " ".join(f"'{w}'" for w in words)
    program = (f'source {script}; [[ "$(complete -p farm)" == "complete -F _farm farm" ]] || exit 9; '
               f'COMP_WORDS=({line}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _farm; '
               f'printf "%s\\n" "${{COMPREPLY[@]}}"')
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], cwd=cwd, capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stderr
    return [w for w in proc.stdout.splitlines() if w]


def test_subcommands(script):
    assert complete(script, "farm", "ru") == ["run"]
    assert set(complete(script, "farm", "")) >= {"build", "run", "compare", "history", "dashboard", "completion"}
    assert complete(script, "farm", "db", "in") == ["ingest"]
    assert complete(script, "farm", "-v", "baseline", "") == ["save", "list"]


def test_pipeline_and_env_files(script):
    assert complete(script, "farm", "run", "pipelines/sm") == ["pipelines/smoke.yaml"]
    assert complete(script, "farm", "run", "--env", "env/qemu-x") == ["env/qemu-x86.yaml"]
    # only YAML files and directories for a pipeline: not the README
    assert "README.md" not in complete(script, "farm", "run", "") and "pipelines" in complete(script, "farm", "run", "")
    assert sorted(complete(script, "farm", "build", "images/x86")) == ["images/x86-bench.yaml", "images/x86-lean.yaml"]


def test_options_and_choices(script):
    assert "--resume" in complete(script, "farm", "run", "--")
    assert complete(script, "farm", "history", "--by", "k") == ["kernel"]
    assert complete(script, "farm", "import", "") == ["ipbench", "iperf3", "openssl", "isal", "vmexit"]
    # after the kind, the captured file: any file
    assert complete(script, "farm", "import", "ipbench", "READ") == ["README.md"]
    # a value of an option is skipped: the pipeline is still the first positional
    assert complete(script, "farm", "run", "--out", "x", "pipelines/sm") == ["pipelines/smoke.yaml"]
    assert complete(script, "farm", "health", "set", "place-1", "") == ["ok", "unhealthy"]


def test_the_table_is_the_parser():
    """Every sub-command argparse knows is in the table; a new one needs no change here."""
    parser = build_parser()
    table = {c.path: c for c in command_table(parser)}
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(table["farm"].subcommands) == set(action.choices)
    assert table["farm db"].subcommands == ("ingest", "upgrade")
    assert ("--by", "w:time image kernel commit") in table["farm history"].values


def test_unknown_shell_is_a_job_error():
    proc = run_farm("completion", "tcsh")
    assert proc.returncode == 2 and "invalid choice: 'tcsh'" in proc.stderr and "Traceback" not in proc.stderr
