"""Issue 46: hostile and unlucky input on the newer surfaces (plugins, the archive and farm reproduce, farm lab's
state, system images), a test per class with its cases as parameters. None boots: fakes and recorded data."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.cli import main
from farm.errors import EXIT_OK
from farm.run import run_pipeline
from farm.run.events import ENTRY_POINT_GROUP
from tests.fakes import FakeFlow
from tests.unit.labdist import installed
from tests.unit.test_events import stored_runs
from tests.unit.test_runner import constant, pipeline, registry  # noqa: F401  (fixture)

DATA = Path(__file__).resolve().parents[1] / "data"

# ---------------------------------------------------------------------------------------------------------------
# A lab's listener that raises: reported (its name, the hook, the error); the run's own listeners, the store and
# the archive still hear the run; the exit code is the run's.

RAISING_LISTENER = '''
from farm.hookspecs import hookimpl

HOOK = {hook!r}


def _boom(*args):
    raise RuntimeError("the chat server is down")


globals()[HOOK] = hookimpl(_boom)
'''

RAISES_IN = ["stage_started", "before_board", "records", "run_ended", "run_published"]


@pytest.fixture
def raising_listener(tmp_path, monkeypatch, request):
    hook = request.param
    source = RAISING_LISTENER.format(hook=hook).replace("def _boom(*args)", f"def _boom({_args(hook)})")
    yield from installed(tmp_path / "site", monkeypatch, dist="mylab-chat", group=ENTRY_POINT_GROUP,
                         entry="chat = mylab_chat", module="mylab_chat", source=source)


def _args(hook: str) -> str:
    from farm.hookspecs import RunSpec
    import inspect

    return ", ".join(list(inspect.signature(getattr(RunSpec, hook)).parameters)[1:])


@pytest.mark.parametrize("raising_listener", RAISES_IN, indirect=True)
def test_a_labs_listener_that_raises_costs_the_run_nothing(raising_listener, pipeline, tmp_path,  # noqa: F811
                                                           monkeypatch, capsys, request):
    hook = request.node.callspec.params["raising_listener"]
    store = tmp_path / "results.db"
    monkeypatch.setenv("FARM_DB", str(store))
    run = run_pipeline(pipeline(setups=("a",)), out=tmp_path / "run", flow_for=lambda s: FakeFlow(),
                       registry=registry(count=constant))
    assert run.status == EXIT_OK
    assert stored_runs(str(store)) == {run.run_id: 1}
    err = capsys.readouterr().err
    assert (f"farm: warning: the listener 'chat' (mylab-chat 1.0, entry-point group farm) failed in {hook}: "
            "RuntimeError: the chat server is down") in err


@pytest.mark.parametrize("raising_listener", ["run_published"], indirect=True)
def test_an_import_is_stored_when_a_labs_listener_raises(raising_listener, tmp_path, monkeypatch, capsys):
    store = tmp_path / "results.db"
    monkeypatch.setenv("FARM_DB", str(store))
    out = tmp_path / "imported"
    assert main(["import", "iperf3", str(DATA / "iperf3-tcp.json"), "--setup", "lab", "--out", str(out)]) == EXIT_OK
    assert len(stored_runs(str(store))) == 1  # the import, stored
    err = capsys.readouterr().err
    assert "failed in run_published: RuntimeError: the chat server is down" in err and "Traceback" not in err
