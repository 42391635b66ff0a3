"""The floors of the house hold: a module imports only modules of its own concern and of the floors below
it, never of a higher floor nor of another concern on its own floor (anywhere in it: a function's
import counts as much as one at the top). And the runner (farm/run) has no word of guests, U-Boot or
iPXE.

The table is DESIGN.md's and docs/architecture.md's layering as the code has it (each floor says why it
sits where it does). A new package of farm is placed in it, or the guard fails."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: farm's floors, lowest first. A floor holds concerns (module prefixes, each a package or a module of
#: farm, and why it sits on this floor); a concern's modules import each other freely.
FLOORS: tuple[tuple[tuple[tuple[str, ...], str], ...], ...] = (
    ((("farm", "farm.__version__", "farm.errors", "farm.secrets", "farm.signals", "farm.values", "farm.proc",
       "farm.hostnames", "farm.steplog", "farm.runid", "farm.config", "farm.schema", "farm.lglazy",
       "farm.lgcompat", "farm.hookspecs", "farm.plugins"),
      "the ground: errors, masking, value checks, the YAML/JSON reader and the schema language every file is "
      "declared in, labgrid loaded lazily and its private state reached in one place (the coordinator's client "
      "below farm.boot uses it), the hooks a plugin may implement and the process's plugin manager (farm's own "
      "plugins, on the floors above, loaded by name when a command needs them, as a lab's are); no board, "
      "image or run"),),
    ((("farm.measure",),
      "the parsers of tools' output and the Measurement: pure, the lowest of the domain packages"),),
    ((("farm.images",), "what boots: recipes, builds, the content-addressed cache"),
     (("farm.coordinator", "farm.lease", "farm.place_target", "farm.places"),
      "where it boots: the coordinator, places, their locks and leases (labgrid's client)")),
    ((("farm.boot",),
      "a boot: power, bootloader, Linux, the console, the target it hands over; it imports no flow, guest, "
      "benchmark or runner (each flow's settings class is declared here, farm/boot/*_settings.py)"),),
    ((("farm.guest",), "a guest on a booted host: builds on farm.boot"),),
    ((("farm.flows",), "the flows a setup names: compose farm.boot and farm.guest, read their settings"),
     (("farm.bench",),
      "the benchmarks: run on what a booted target offers (farm.boot's), never knowing which flow booted "
      "it; the load generators' places (farm.places)")),
    ((("farm.results",),
      "records, their identity, compare, qualify, publishing: read the benchmarks' registrations "
      "(direction, run lengths, importers), so above farm.bench"),),
    ((("farm.run",),
      "the runner, its hooks and its own listeners: a pipeline's flows, benchmarks, places and results; "
      "names no flow (farm's other listeners, farm.store and farm.archive, are builtin plugins farm.plugins "
      "loads by name when a run starts, not imported)"),),
    ((("farm.store",),
      "the results store: ingests what farm.results reads; a listener of farm.run's hooks (farm/store/hook.py "
      "imports farm.run.events' hookimpl, as a pytest plugin imports pytest)"),),
    ((("farm.archive",), "the archive: archives runs, and reproduces one through farm.run"),),
    ((("farm.dashboard",), "the dashboard: reads the store and the archive"),
     (("farm.virtual",), "the virtual lab: twins as places, driven through benchmarks and places"),
     (("farm.pytestplugin",), "farm's pytest plugin: a test session as a run")),
    ((("farm.cli", "farm.commands", "farm.completion", "farm.schema.files"),
      "the command line: drives the floors below, holds no logic of its own; and the file kinds `farm schema` "
      "describes (farm.schema.files: each floor's root class of a file, so above them all)"),),
)


def _concerns() -> list[tuple[str, int, tuple[str, ...]]]:
    """(prefix, floor, the concern's prefixes) for every prefix of the table."""
    return [(prefix, floor, prefixes) for floor, concerns in enumerate(FLOORS)
            for prefixes, _ in concerns for prefix in prefixes]


def _place(module: str) -> tuple[int, tuple[str, ...]] | None:
    """The floor and concern of a farm module (the longest prefix of the table that names it; ``farm``
    alone names the package's own ``__init__`` only); None: not farm's, or a module the table lacks."""
    found = [(len(prefix), floor, prefixes) for prefix, floor, prefixes in _concerns()
             if module == prefix or (prefix != "farm" and module.startswith(prefix + "."))]
    if not found:
        return None
    _, floor, prefixes = max(found)
    return floor, prefixes


def _imported(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """Every module an Import/ImportFrom anywhere in ``tree`` (inside functions too) names, with its
    line; a relative import is resolved against ``package``, the module's own package."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            # `from farm import guest` names farm.guest as much as `import farm.guest` does
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
            found.append((node.lineno, base))
    return found


def _offences(module: str, source: str, package: str | None = None) -> list[str]:
    """What ``source`` (the module ``module``, of ``package``: its own for a package's ``__init__``)
    imports against the table: a higher floor, another concern of its own floor, a farm module the
    table lacks."""
    own = _place(module)
    if own is None:
        return [f"{module} has no floor in the table"]
    floor, concern = own
    out = []
    for line, name in _imported(ast.parse(source), package or module.rpartition(".")[0]):
        if name != "farm" and not name.startswith("farm."):
            continue
        theirs = _place(name)
        if theirs is None:
            out.append(f"{line}: {name} has no floor in the table")
        elif theirs[0] > floor:
            out.append(f"{line}: {name} is on floor {theirs[0]} ({theirs[1][0]}), above {module}'s {floor}")
        elif theirs[0] == floor and theirs[1] != concern:
            out.append(f"{line}: {name} is another concern ({theirs[1][0]}) of {module}'s floor {floor}")
    return out


def _modules() -> list[tuple[str, str, Path]]:
    """(module, its package, path) of every Python module of farm."""
    out = []
    for path in sorted((ROOT / "farm").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            module = package = ".".join(parts[:-1])
        else:
            module, package = ".".join(parts), ".".join(parts[:-1])
        out.append((module, package, path))
    return out


def test_the_runner_names_no_guest_uboot_or_ipxe():
    found = subprocess.run(["git", "grep", "-n", "-i", "-E", "guest|u-?boot|ipxe", "--", "farm/run"],
                           cwd=ROOT, capture_output=True, text=True)
    assert found.returncode == 1 and found.stdout == "", f"farm/run names a flow:\n{found.stdout}{found.stderr}"


def test_no_module_imports_a_higher_floor_or_another_concern_of_its_own():
    modules = _modules()
    assert len(modules) > 100, "farm has few modules: the check would pass on nothing"
    offenders = []
    for module, package, path in modules:
        offenders += [f"{path.relative_to(ROOT)}:{o}" for o in _offences(module, path.read_text(), package)]
    assert offenders == []


def test_farm_run_only_re_exports_and_its_hooks_load_without_the_runner():
    import farm.run

    tree = ast.parse((ROOT / "farm" / "run" / "__init__.py").read_text())
    logic = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name != "__getattr__"]
    assert logic == []
    assert sorted(farm.run.__all__) == sorted(farm.run._EXPORTS)
    for name in farm.run.__all__:
        assert getattr(farm.run, name).__module__.startswith("farm."), name
    loaded = subprocess.run([sys.executable, "-c", "import sys, farm.store.hook, farm.archive.hook, farm.run.events as e; "
                             "print(farm.store.hook.hookimpl is e.hookimpl is farm.archive.hook.hookimpl, "
                             "sorted(m for m in sys.modules if m in ('farm.run.runner', 'labgrid')))"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert loaded == "True []\n"


def test_the_table_keeps_the_design_notes():
    """DESIGN.md's and docs/architecture.md's notes, so that the table is not moved to let an import by."""
    floor = {prefix: f for prefix, f, _ in _concerns()}
    assert floor["farm.measure"] < min(floor[p] for p in ("farm.images", "farm.boot", "farm.bench", "farm.results"))
    assert floor["farm.boot"] < floor["farm.guest"] < floor["farm.flows"] < floor["farm.run"]
    assert floor["farm.boot"] < floor["farm.bench"] < floor["farm.results"] < floor["farm.run"]
    assert floor["farm.run"] < min(floor["farm.store"], floor["farm.archive"])  # listeners build on its hooks
    assert floor["farm.flows"] == floor["farm.bench"]  # apart: a benchmark never asks which flow booted it
    assert max(floor.values()) == floor["farm.commands"] == floor["farm.cli"]
    prefixes = [prefix for prefix, _, _ in _concerns()]
    assert len(prefixes) == len(set(prefixes)), "a prefix on two floors"


def test_the_old_upward_import_of_the_dpdk_boot_is_caught():
    """farm/boot/dpdk.py once imported its settings from farm/flows (the house's one import back up a floor)."""
    old = "from ..errors import TestFailure\nfrom ..flows.dpdk import PCI_ADDRESS, DpdkSettings\n"
    assert _offences("farm.boot.dpdk", old) == [
        "2: farm.flows.dpdk.PCI_ADDRESS is on floor 5 (farm.flows), above farm.boot.dpdk's 3",
        "2: farm.flows.dpdk.DpdkSettings is on floor 5 (farm.flows), above farm.boot.dpdk's 3",
        "2: farm.flows.dpdk is on floor 5 (farm.flows), above farm.boot.dpdk's 3"]
    assert _offences("farm.boot.dpdk", "from .dpdk_settings import PCI_ADDRESS, DpdkSettings\n") == []


def test_the_import_check_sees_every_spelling():
    spellings = ["import farm.guest.flow", "from farm.guest.flow import GuestFlow", "from farm import guest",
                 "from ..guest import flow", "from ..guest.flow import GuestFlow",
                 "def boot():\n    from farm.guest.flow import GuestFlow\n"]
    for source in spellings:
        assert _offences("farm.boot.flow", source), source
    clean = "import farm.guestbook_of_nothing_else\nfrom farm.boot import flow\nfrom . import uboot\nimport os\n"
    assert _offences("farm.boot.flow", clean) == ["1: farm.guestbook_of_nothing_else has no floor in the table"]
    assert _offences("farm.boot.flow", clean.split("\n", 1)[1]) == []
    # a package's __init__ resolves relative imports against itself
    assert _offences("farm.boot", "from .flow import NetbootFlow\n", package="farm.boot") == []
    assert _offences("farm.bench.echo", "from ..flows import dpdk\n")  # another concern of the same floor
    assert _offences("farm.newthing", "") == ["farm.newthing has no floor in the table"]


def test_the_architecture_doc_shows_the_table():
    """docs/architecture.md's "Floors" has a row per floor naming each of its concerns."""
    rows = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\| (\d+) \| (.*) \|$",
                                                             (ROOT / "docs" / "architecture.md").read_text(), re.M)}
    assert sorted(rows) == list(range(len(FLOORS)))
    for floor, concerns in enumerate(FLOORS):
        for prefixes, _ in concerns:
            for prefix in prefixes:
                name = prefix.rpartition(".")[2]
                assert prefix in ("farm", "farm.__version__") or name in rows[floor], (floor, prefix, rows[floor])
