"""The layers hold: the runner (farm/run) has no word of guests, U-Boot or iPXE, and the boot flows
(farm/boot) never import the guest layer (farm/guest imports farm/boot, so the other way is a cycle)."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = "farm.guest"


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


def _imports_guest(source: str, package: str = "farm.boot") -> list[tuple[int, str]]:
    return [(line, name) for line, name in _imported(ast.parse(source), package)
            if name == FORBIDDEN or name.startswith(FORBIDDEN + ".")]


def test_the_runner_names_no_guest_uboot_or_ipxe():
    found = subprocess.run(["git", "grep", "-n", "-i", "-E", "guest|u-?boot|ipxe", "--", "farm/run"],
                           cwd=ROOT, capture_output=True, text=True)
    assert found.returncode == 1 and found.stdout == "", f"farm/run names a flow:\n{found.stdout}{found.stderr}"


def test_no_boot_module_imports_the_guest_layer():
    modules = sorted((ROOT / "farm" / "boot").rglob("*.py"))
    assert modules, "farm/boot has no modules: the check would pass on nothing"
    offenders = []
    for path in modules:
        package = ".".join(path.relative_to(ROOT).parent.parts)
        offenders += [f"{path.relative_to(ROOT)}:{line}: {name}" for line, name in _imports_guest(path.read_text(), package)]
    assert offenders == []


def test_the_import_check_sees_every_spelling():
    spellings = ["import farm.guest.flow", "from farm.guest.flow import GuestFlow", "from farm import guest",
                 "from ..guest import flow", "from ..guest.flow import GuestFlow",
                 "def boot():\n    from farm.guest.flow import GuestFlow\n"]
    for source in spellings:
        assert _imports_guest(source), source
    assert _imports_guest("import farm.guestbook\nfrom farm.boot import flow\nfrom . import uboot\n") == []
