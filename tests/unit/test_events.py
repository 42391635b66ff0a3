"""The runner's hooks on pluggy (farm.run.events): specs that refuse what no spec names, keyword calls,
the veto apart from notifications, listeners by entry point, and the results store as a listener."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pluggy
import pytest
import sqlalchemy as sa

from farm.errors import EXIT_INFRA_ERROR
from farm.run import run_pipeline
from farm.run.events import ENTRY_POINT_GROUP, FARM_LISTENERS, Hooks, RunSpec, hookimpl
from tests.unit.labdist import installed
from tests.fakes import FakeFlow
from tests.unit.test_runner import cases, constant, pipeline, registry  # noqa: F401  (fixture)


class Misspelt:
    @hookimpl
    def stage_startd(self, name):  # no such hook: "stage_started"
        pass


class WrongArgument:
    @hookimpl
    def stage_started(self, stage_name):  # the spec's argument is "name"
        pass


def test_a_misspelt_hook_implementation_is_refused():
    hooks = Hooks()
    with pytest.raises(pluggy.PluginValidationError, match="stage_startd"):
        hooks.add(Misspelt())
    with pytest.raises(pluggy.PluginValidationError, match="stage_name"):
        hooks.add(WrongArgument())
    assert hooks.manager.get_plugins() == set()  # neither stays registered


def test_hooks_are_called_by_keyword_and_unknown_ones_do_not_exist():
    heard = []

    class Ear:
        @hookimpl
        def say(self, text):
            heard.append(text)

    hooks = Hooks([Ear()])
    hooks.say(text="hello")
    assert heard == ["hello"]
    with pytest.raises(TypeError, match="positional"):
        hooks.say("positional")
    with pytest.raises(AttributeError):
        hooks.sey  # noqa: B018


def test_the_veto_is_the_first_reason_and_notifications_are_not_vetoes():
    class Quiet:
        @hookimpl
        def before_board(self, label):
            return None

    class No:
        @hookimpl
        def before_board(self, label):
            return f"not {label}"

    assert Hooks([Quiet()]).before_board(label="x") is None
    assert Hooks([Quiet(), No()]).before_board(label="twin/a") == "not twin/a"


def test_a_veto_stops_the_boot_as_the_labs_error(pipeline, tmp_path):  # noqa: F811
    class Closed:
        @hookimpl
        def before_board(self, label):
            return f"the lab is closed ({label})"

    flow = FakeFlow()
    run = run_pipeline(pipeline(setups=("a",)), out=tmp_path / "run", flow_for=lambda s: flow,
                       registry=registry(count=constant), listeners=[Closed()])
    assert flow.boots == [] and run.status == EXIT_INFRA_ERROR
    info = json.loads((run.path / "run.json").read_text())
    assert info["stages"][-2]["message"] == "the lab is closed (maaxboard-twin/a)"  # the boot's case
    assert cases(run.path)["boot maaxboard-twin/a"] == "error"


LAB_PLUGIN = '''
from farm.run.events import hookimpl

heard = []


@hookimpl
def run_ended(status):
    heard.append(("ended", status))


@hookimpl
def run_published(run_dir):
    heard.append(("published", str(run_dir)))
'''


@pytest.fixture
def lab_plugin(tmp_path, monkeypatch):
    """A lab's listener as an installed distribution declares it: an entry point in the group ``farm``
    (a dist-info on sys.path, as pip would install it), pointing at a module of the lab's."""
    yield from installed(tmp_path / "site", monkeypatch, dist="mylab-farm", group=ENTRY_POINT_GROUP,
                         entry="chime = mylab_chime", module="mylab_chime", source=LAB_PLUGIN)


def test_a_lab_adds_a_listener_by_entry_point(lab_plugin, pipeline, tmp_path):  # noqa: F811
    run = run_pipeline(pipeline(setups=("a",)), out=tmp_path / "run", flow_for=lambda s: FakeFlow(),
                       registry=registry(count=constant))
    import mylab_chime

    assert mylab_chime.heard == [("ended", 0), ("published", str(run.path))]


def stored_runs(url: str) -> dict[str, int]:
    """run id -> how many records the store at ``url`` holds of it."""
    with sa.create_engine(f"sqlite:///{url}").connect() as c:
        return dict(c.execute(sa.text("SELECT runs.run_id, count(records.id) FROM runs LEFT JOIN records "
                                      "ON records.run = runs.id GROUP BY runs.run_id")).all())


def test_a_run_reaches_the_store_through_its_listener(pipeline, tmp_path, monkeypatch):  # noqa: F811
    store = tmp_path / "results.db"
    monkeypatch.setenv("FARM_DB", str(store))
    run = run_pipeline(pipeline(setups=("a", "b")), out=tmp_path / "run", flow_for=lambda s: FakeFlow(),
                       registry=registry(count=constant))
    assert stored_runs(str(store)) == {run.run_id: 2}


def test_published_reaches_farms_listeners(tmp_path, monkeypatch):
    """What `farm import`, `farm qualify` and the pytest plugin call: the store ingests the directory."""
    from farm.run.events import published

    store = tmp_path / "results.db"
    monkeypatch.setenv("FARM_DB", str(store))
    out = tmp_path / "session"
    out.mkdir()
    (out / "results.csv").write_text(
        "run_id,timestamp,target,arch,setup,image,suite,benchmark,params,repeat,metric,value,unit\n"
        "pytest-1,2026-12-01T00:00:00.000+00:00,twin,arm64,default,,pytest,t,,0,latency,12.5,us\n")
    published(Path(out))
    assert stored_runs(str(store)) == {"pytest-1": 1}


def test_run_published_names_farms_listeners_and_no_other():
    """Its doc names the listeners farm registers (the store, the archive), each of which exists, and
    none that does not (the dashboard reads the store, ``farm serve`` live: it has no listener)."""
    doc = " ".join(RunSpec.run_published.__doc__.split())
    named = set(re.findall(r"farm\.\w+\.hook", doc))
    assert named == {spec.split(":")[0] for spec in FARM_LISTENERS}
    assert "feed" not in doc and "The dashboard does not" in doc


def test_the_architecture_doc_lists_every_hook():
    """docs/architecture.md's list of the hooks is RunSpec's, each once."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    listed = re.search(r"`RunSpec` holds their specs\s+\(([^)]*)\)", text)[1]
    specs = sorted(name for name in vars(RunSpec) if not name.startswith("_"))
    assert sorted(re.findall(r"`(\w+)`", listed)) == specs


MISSPELT_PLUGIN = '''
from farm.hookspecs import hookimpl


@hookimpl
def run_endd(status):  # no such hook: "run_ended"
    pass
'''


@pytest.fixture
def misspelt_plugin(tmp_path, monkeypatch):
    yield from installed(tmp_path / "site", monkeypatch, dist="mylab-typo", group=ENTRY_POINT_GROUP,
                         entry="typo = mylab_typo", module="mylab_typo", source=MISSPELT_PLUGIN)


def test_a_labs_plugin_implementing_no_hook_of_farms_is_refused_when_it_is_found(misspelt_plugin, tmp_path, capsys):
    from farm import plugins
    from farm.cli import main
    from farm.errors import EXIT_JOB_ERROR, JobError

    with pytest.raises(JobError, match=r"^the farm plugin 'typo' \(mylab-typo 1.0, entry-point group farm\): "
                                       r"unknown hook 'run_endd' \(farm.hookspecs names the hooks\)$"):
        plugins.manager()
    # the command that needs the plugins says so as a job error, before it reads anything
    assert main(["import", "isal", str(tmp_path / "x.txt"), "--setup", "s", "--out", str(tmp_path / "o")]) == EXIT_JOB_ERROR
    assert "farm: job error: the farm plugin 'typo'" in capsys.readouterr().err and not (tmp_path / "o").exists()
