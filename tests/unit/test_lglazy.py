"""farm's command loads only the labgrid drivers and resources its env file names (farm.lglazy), and builds
only its command's parser; labgrid itself is not changed: the same targets come out of the same env files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from farm import cli, lglazy

ROOT = Path(__file__).resolve().parents[2]
LOCAL_ENVS = ["qemu-maaxboard.yaml", "qemu-maaxboard-el2.yaml", "qemu-x86.yaml"]


def _in_fresh_python(code: str) -> dict:
    """Run ``code`` in a Python of its own (this test process has labgrid loaded in full); it prints JSON."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home()),
                                            "LG_TFTP_ROOT": "/tmp/farm-lglazy-test-tftp"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_exported_names_reads_a_packages_from_imports():
    names, star = lglazy.exported_names("from .a import X, Y as Z\nfrom .b import (\n  W,\n)\nfrom .c import *\n"
                                        "import os\nfrom os import path\n")
    assert names == {"X": "a", "Z": "a", "W": "b"} and star == ["c"]


def test_env_class_names_of_both_forms():
    doc = {"targets": {"t": {"resources": {"TFTPProvider": {}}, "drivers": [{"SerialDriver": {}},
                                                                          {"cls": "ShellDriver", "name": "x"}]}}}
    assert lglazy.env_class_names(doc) == ["TFTPProvider", "SerialDriver", "ShellDriver"]


@pytest.mark.parametrize("env_file", LOCAL_ENVS)
def test_a_lazy_labgrid_makes_the_same_target_from_each_env_file(env_file):
    code = f"""
        import json, sys
        from farm import lglazy
        assert lglazy.install()
        from labgrid import Environment
        lglazy.load_for_env("env/{env_file}")
        target = Environment("env/{env_file}").get_target()
        if target is None:
            import yaml
            target = Environment("env/{env_file}").get_target(next(iter(yaml.safe_load(open("env/{env_file}"))["targets"])))
        console = target.get_driver("ConsoleProtocol", activate=False)
        strategy = target.get_strategy()
        loaded = sorted(m for m in sys.modules if m.startswith(("labgrid.driver.", "labgrid.resource.")))
        print(json.dumps({{"drivers": sorted(type(d).__name__ for d in target.drivers),
                          "resources": sorted(type(r).__name__ for r in target.resources),
                          "console": type(console).__name__, "strategy": type(strategy).__name__,
                          "loaded": loaded}}))
    """
    lazy = _in_fresh_python(code)
    full = _in_fresh_python(code.replace("assert lglazy.install()", "import labgrid"))
    assert {k: lazy[k] for k in ("drivers", "resources", "console", "strategy")} == \
        {k: full[k] for k in ("drivers", "resources", "console", "strategy")}
    # what makes it quicker: most of labgrid's driver and resource modules were never imported
    assert "labgrid.driver.dfudriver" in full["loaded"] and "labgrid.driver.dfudriver" not in lazy["loaded"]
    assert len(lazy["loaded"]) < len(full["loaded"]) / 2, lazy["loaded"]


def test_a_remote_place_loads_every_resource_and_star_imports_load_everything():
    got = _in_fresh_python("""
        import json, sys
        from farm import lglazy
        assert lglazy.install()
        import labgrid
        lglazy.load_for_env("env/maaxboard.yaml")  # a RemotePlace: the coordinator names the resources
        from labgrid.factory import target_factory
        remote = {n: n in target_factory.resources for n in ("NetworkSerialPort", "PDUDaemonPort", "RemoteTFTPProvider",
                                                          "USBSerialPort", "NetworkService")}
        before = "labgrid.driver.dfudriver" in sys.modules
        from labgrid.driver import *  # noqa
        print(json.dumps({"remote": remote, "before": before, "after": "labgrid.driver.dfudriver" in sys.modules,
                          "uboot": UBootDriver.__module__}))
    """)
    assert all(got["remote"].values()), got
    assert (got["before"], got["after"], got["uboot"]) == (False, True, "labgrid.driver.ubootdriver")


def test_install_leaves_a_loaded_labgrid_alone():
    import labgrid.driver  # noqa: F401  (this process: loaded in full)

    assert lglazy.install() is False and not lglazy.active()
    lglazy.load_for_env(ROOT / "env" / "qemu-maaxboard.yaml")  # nothing to do


def test_the_command_table_names_each_commands_module():
    import argparse

    def choices(parser):
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return sub.choices

    full = choices(cli.build_parser())
    assert set(cli.COMMANDS) == set(full) and set(cli.COMMANDS.values()) == set(cli.COMMAND_MODULES)
    for command, module in cli.COMMANDS.items():
        own = choices(cli.build_parser(command))
        assert command in own, (command, module)
        assert own[command].format_help() == full[command].format_help()


@pytest.mark.parametrize("argv, command", [(["boot", "--env", "x"], "boot"), (["-v", "run", "p.yaml"], "run"),
                                           (["--help"], None), ([], None), (["-vv", "lab", "up"], "lab")])
def test_command_of(argv, command):
    assert cli.command_of(argv) == command


def test_the_farm_program_loads_labgrid_lazily_and_a_bad_command_still_lists_them_all():
    done = subprocess.run([sys.executable, "-m", "farm.cli", "bot"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "invalid choice: 'bot'" in done.stderr and "'boot'" in done.stderr
    probe = _in_fresh_python("""
        import json, sys
        sys.argv = ["farm", "boot", "--env", "env/qemu-maaxboard.yaml", "--image", "/nonexistent"]
        from farm import cli
        code = cli.command_line()
        print(json.dumps({"code": code, "lazy": type(sys.modules["labgrid.driver"]).__name__,
                          "registry": "farm.bench.registry" in sys.modules, "run": "farm.run" in sys.modules}))
    """)
    assert probe == {"code": 2, "lazy": "LazyPackage", "registry": False, "run": False}


def test_farm_help_finds_no_plugin_and_farm_import_finds_them_once():
    """`farm --help` (and every command but those that need them) scans no entry point and loads no
    registration (farm.plugins); `farm import`'s parser does, once, when it is used."""
    probe = _in_fresh_python("""
        import contextlib, io, json, sys
        from farm import cli, plugins

        scans = []
        real = plugins.pluggy.PluginManager.load_setuptools_entrypoints
        plugins.pluggy.PluginManager.load_setuptools_entrypoints = lambda self, group: scans.append(group) or real(self, group)
        seen = {}
        for name, argv in (("help", ["--help"]), ("import", ["import", "--help"]), ("again", ["import", "--help"])):
            sys.argv = ["farm", *argv]
            with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
                cli.command_line()
            seen[name] = {"scans": list(scans), "registry": "farm.bench.registry" in sys.modules,
                                    "metadata": "importlib.metadata" in sys.modules}
        print(json.dumps(seen))
    """)
    assert probe["help"] == {"scans": [], "registry": False, "metadata": False}
    assert probe["import"] == probe["again"] == {"scans": ["farm"], "registry": True, "metadata": True}
