"""farm.images.modules on a real modules.dep excerpt (Debian's arm64 6.1 kernel, made by depmod)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from farm.images.modules import load_order, module_name, parse_modules_dep

DATA = Path(__file__).resolve().parent.parent / "data"
DEP_TEXT = (DATA / "modules.dep.arm64-6.1").read_text()
DEPS = parse_modules_dep(DEP_TEXT)

NET = "kernel/drivers/net/"
VIRTIO = "kernel/drivers/virtio/"


def _names(paths: list[str]) -> list[str]:
    return [module_name(p) for p in paths]


def _assert_valid_order(deps: dict[str, tuple[str, ...]], order: list[str]) -> None:
    assert len(order) == len(set(order)), "a module is listed twice"
    position = {path: i for i, path in enumerate(order)}
    for path in order:
        for dep in deps[path]:
            assert dep in position, f"{path} needs {dep}, which is not loaded"
            assert position[dep] < position[path], f"{dep} must be loaded before {path}"


def test_parse_real_excerpt():
    assert len(DEPS) == 15
    assert DEPS[NET + "virtio_net.ko"] == (NET + "net_failover.ko", "kernel/net/core/failover.ko")
    assert DEPS["kernel/net/core/failover.ko"] == ()
    assert DEPS[VIRTIO + "virtio_pci.ko"] == (VIRTIO + "virtio_pci_legacy_dev.ko", VIRTIO + "virtio_pci_modern_dev.ko")
    assert DEPS[NET + "ethernet/freescale/fec.ko"] == (
        "kernel/net/core/selftests.ko", NET + "mdio/of_mdio.ko", NET + "phy/fixed_phy.ko",
        NET + "mdio/fwnode_mdio.ko", NET + "phy/libphy.ko")


def test_module_name():
    assert module_name(NET + "virtio_net.ko") == "virtio_net"
    assert module_name("kernel/arch/arm64/crypto/sha2-ce.ko") == "sha2_ce"
    assert module_name("kernel/drivers/net/virtio_net.ko.xz") == "virtio_net"
    assert module_name("kernel/drivers/net/virtio_net.ko.zst") == "virtio_net"
    assert module_name("fec.ko") == "fec"


def test_load_order_of_the_maaxboard_recipe():
    # the recipe's modules; the same order the image build recorded in its manifest
    order = load_order(DEPS, ["virtio_net", "virtio_pci", "virtio_mmio", "fec"])
    assert _names(order) == [
        "failover", "net_failover", "virtio_net",
        "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci",
        "virtio_mmio",
        "libphy", "selftests", "fixed_phy", "fwnode_mdio", "of_mdio", "fec"]
    _assert_valid_order(DEPS, order)
    assert all(p in DEPS for p in order)  # paths, as modules.dep has them


@pytest.mark.parametrize("names", [
    ["fec"], ["virtio_net"], ["fec", "virtio_net"], ["net_failover", "virtio_net", "failover"],
    ["libphy", "fec", "of_mdio", "selftests"], [module_name(p) for p in DEPS], list(reversed([module_name(p) for p in DEPS])),
])
def test_dependencies_first_each_once(names):
    order = load_order(DEPS, names)
    _assert_valid_order(DEPS, order)
    assert set(_names(order)) >= {n.replace("-", "_") for n in names}


def test_fec_pulls_in_its_phy_stack_once():
    order = _names(load_order(DEPS, ["fec"]))
    assert order == ["libphy", "selftests", "fixed_phy", "fwnode_mdio", "of_mdio", "fec"]
    assert order.count("libphy") == 1  # five modules need it


def test_naming_a_module_twice_or_its_dependency_again_adds_nothing():
    assert load_order(DEPS, ["virtio_net", "virtio_net", "failover"]) == load_order(DEPS, ["virtio_net"])
    assert load_order(DEPS, []) == []


def test_dash_and_underscore_are_the_same():
    dashed = load_order(DEPS, ["virtio-net", "virtio-pci-modern-dev"])
    assert dashed == load_order(DEPS, ["virtio_net", "virtio_pci_modern_dev"])
    # and a module whose file name has dashes is found by either spelling
    expected = ["kernel/arch/arm64/crypto/sha256-arm64.ko", "kernel/arch/arm64/crypto/sha2-ce.ko"]
    assert load_order(DEPS, ["sha2-ce"]) == expected
    assert load_order(DEPS, ["sha2_ce"]) == expected


def test_unknown_module_raises_key_error_with_its_name():
    with pytest.raises(KeyError) as info:
        load_order(DEPS, ["virtio_net", "e1000e", "fec"])
    assert info.value.args == ("e1000e",)
    with pytest.raises(KeyError) as info:
        load_order(DEPS, ["no-such-module"])
    assert info.value.args == ("no-such-module",)  # the name as asked for, not the normalised one


def test_unknown_prefix_is_not_a_match():
    with pytest.raises(KeyError):
        load_order(DEPS, ["virtio"])
    with pytest.raises(KeyError):
        load_order(DEPS, ["fec.ko"])


def test_parse_error_names_the_line():
    lines = DEP_TEXT.splitlines()
    broken = "\n".join(lines[:2] + ["", "kernel/drivers/net/broken.ko kernel/net/core/failover.ko"] + lines[2:])
    with pytest.raises(ValueError, match=r"^modules.dep line 4: no ':' in 'kernel/drivers/net/broken.ko"):
        parse_modules_dep(broken)


def test_blank_lines_and_trailing_spaces():
    deps = parse_modules_dep("\n" + DEP_TEXT.replace("\n", "  \n") + "\n\n")
    assert deps == DEPS


def test_compressed_module_paths():
    # Debian's newer kernels ship modules.dep with .ko.xz paths
    text = DEP_TEXT.replace(".ko", ".ko.xz")
    deps = parse_modules_dep(text)
    order = load_order(deps, ["virtio_net"])
    assert order == [f"kernel/net/core/failover.ko.xz", NET + "net_failover.ko.xz", NET + "virtio_net.ko.xz"]


def test_against_modprobe_on_the_whole_real_modules_dep():
    """The full depmod output of the cached arm64 kernel: same modules as `modprobe --show-depends`."""
    trees = sorted(glob.glob(os.path.expanduser("~/.cache/farm/pkgs/linux-image-6.1.0-*-arm64_*/lib/modules/*")))
    modprobe = shutil.which("modprobe") or next((p for p in ("/sbin/modprobe", "/usr/sbin/modprobe") if os.path.exists(p)), None)
    if not trees or modprobe is None:
        pytest.skip("no extracted arm64 kernel package in ~/.cache/farm/pkgs, or no modprobe (kmod)")
    tree = Path(trees[-1])
    deps = parse_modules_dep((tree / "modules.dep").read_text())
    assert len(deps) > 3000
    names = ["virtio_net", "virtio_pci", "virtio_mmio", "fec"]
    order = load_order(deps, names)
    _assert_valid_order(deps, order)
    # the excerpt in tests/data is faithful to the real file
    for path in DEPS:
        assert deps[path] == DEPS[path]
    proc = subprocess.run([modprobe, "-d", str(tree.parent.parent.parent), "-S", tree.name, "--show-depends", "-a", *names],
                          capture_output=True, text=True, check=True)
    insmod = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("insmod ")]
    assert sorted(os.path.relpath(p, tree) for p in insmod) == sorted(order)
