"""`--json` on the listing commands: the same facts as the table, for scripts."""

from __future__ import annotations

import json

from farm.cli import main
from farm.errors import EXIT_OK

from .test_qualify import BASE5, records, run_dir, store  # noqa: F401  (store: a private $FARM_BASELINES)


def test_baseline_list_json(tmp_path, store, capsys):  # noqa: F811
    assert main(["baseline", "list", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == []  # an empty store is an empty list, on stdout
    base = run_dir(tmp_path / "base", records(BASE5))
    assert main(["baseline", "save", str(base), "--name", "release-1.0"]) == EXIT_OK
    capsys.readouterr()
    assert main(["baseline", "list", "--json"]) == EXIT_OK
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["name"] == "release-1.0" and entry["path"] == str(store / "release-1.0")
    assert (entry["run_id"], entry["status"], entry["records"]) == ("r1", "passed", 5)
    assert set(entry) == {"name", "path", "run_id", "saved", "saved_by", "source", "records", "status"}


def test_lab_status_json(tmp_path, capsys):
    from farm.virtual.lab import Lab

    Lab(directory=tmp_path, name="farm-vlab-test", coordinator="127.0.0.1:1", pdu_port=1, ssh_port=1, boards=[]).save()
    assert main(["lab", "status", "--json", "--dir", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == {"name": "farm-vlab-test", "directory": str(tmp_path.resolve()), "coordinator": "127.0.0.1:1",
                   "components": [], "places": None}
