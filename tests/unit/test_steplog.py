"""`farm -v`: labgrid's step log on stderr while a command runs, undone after it."""

from __future__ import annotations

import logging

from labgrid import Environment

import farm.boot.drivers  # noqa: F401
from farm.cli import build_parser
from farm.steplog import level, step_log

from ..conftest import ROOT


def test_levels():
    assert (level(1), level(2), level(3), level(5)) == (logging.INFO, logging.INFO - 5, logging.DEBUG, logging.DEBUG)


def test_verbose_is_a_global_count():
    parser = build_parser()
    assert parser.parse_args(["-vv", "build", "x.yaml"]).verbose == 2
    assert parser.parse_args(["build", "x.yaml"]).verbose == 0


def test_step_log_shows_labgrid_steps_and_is_undone(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LG_TFTP_ROOT", str(tmp_path / "tftp"))
    (tmp_path / "Image").write_bytes(b"k")
    target = Environment(str(ROOT / "env" / "qemu-maaxboard.yaml")).get_target("maaxboard-twin")
    root = logging.getLogger()
    handlers, old_level = list(root.handlers), root.level
    try:
        tftp = target.get_driver("JobTFTPProviderDriver")
        tftp.stage_as(str(tmp_path / "Image"), "alice/job-1", "Image")  # quiet: no -v
        assert "stage_as" not in capsys.readouterr().err
        with step_log(1):
            tftp.stage_as(str(tmp_path / "Image"), "alice/job-2", "Image")
        err = capsys.readouterr().err
        assert "stage_as" in err and "alice/job-2" in err
        tftp.stage_as(str(tmp_path / "Image"), "alice/job-3", "Image")
        assert "stage_as" not in capsys.readouterr().err  # the handler and the StepLogger are gone
        assert root.handlers == handlers and root.level == old_level
    finally:
        target.cleanup()
