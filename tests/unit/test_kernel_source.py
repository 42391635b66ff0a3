"""farm.images.kernel's pure parts and the recipe's kernel.source: fragments checked line by line, the merged
config compared with what was asked, progress lines, reproducibility settings, and bad recipes refused."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from farm.errors import EXIT_JOB_ERROR, JobError
from farm.images import kernel
from farm.images.kernel import HostTool, Progress, Request
from farm.images.recipe import load_recipe

ROOT = Path(__file__).resolve().parent.parent.parent

SOURCE_RECIPE = """\
name: t
arch: arm64
kernel:
  source: {source}
  config: {config}
{extra}initrd:
  packages: [busybox-static]
"""


def _recipe(tmp_path: Path, source: str = "{package: linux-source-6.1}", config: str = "[allnoconfig, a.config]",
            extra: str = "") -> Path:
    (tmp_path / "a.config").write_text("CONFIG_SMP=y\n")
    path = tmp_path / "r.yaml"
    path.write_text(SOURCE_RECIPE.format(source=source, config=config, extra=extra))
    return path


def _error(path: Path) -> str:
    with pytest.raises(JobError) as info:
        load_recipe(path)
    assert info.value.exit_code == EXIT_JOB_ERROR
    return str(info.value)


def test_the_lean_recipes_load_with_their_fragments():
    for name, fragment in (("maaxboard-lean", "arm64-maaxboard.config"), ("x86-lean", "x86-pc.config")):
        recipe = load_recipe(ROOT / "images" / f"{name}.yaml")
        source = recipe.kernel_source
        assert source is not None and recipe.kernel_package == ""
        assert (source.kind, source.location, source.base) == ("package", "linux-source-6.1", "allnoconfig")
        assert [p.name for p in source.fragments] == ["base.config", fragment]
        assert all(p.is_absolute() for p in source.fragments)  # merge_config.sh runs in the build directory
        assert recipe.modules == ()  # everything built in
        assert "kernel_source" in recipe.canonical()
    assert load_recipe(ROOT / "images" / "maaxboard-lean.yaml").kernel_source.dtbs == ("freescale/imx8mq-evk.dtb",)


def test_package_kernel_keys_do_not_change():
    """A recipe without kernel.source hashes exactly as before (its cached images stay valid)."""
    canonical = load_recipe(ROOT / "images" / "maaxboard-bench.yaml").canonical()
    assert "kernel_source" not in canonical and canonical["kernel_package"] == "linux-image-arm64"


def test_lean_fragments_parse_and_build_nothing_as_modules():
    for frag in sorted((ROOT / "images" / "kernel").glob("*.config")):
        requests = kernel.parse_fragment(frag.read_text(), str(frag))
        assert requests, frag
        assert all(r.value != "m" for r in requests), frag  # /init loads no modules
    base = kernel.parse_fragment((ROOT / "images" / "kernel" / "base.config").read_text(), "base.config")
    assert ("CONFIG_MODULES", "n") in {(r.symbol, r.value) for r in base}


@pytest.mark.parametrize("source, config, extra, expected", [
    ("{package: linux-source-6.1}", "[allnoconfig, missing.config]", "", r"r.yaml:5: kernel.config: item 1: fragment .*missing.config not found"),
    ("{package: linux-source-6.1}", "[a.config]", "", r"r.yaml:5: kernel.config: item 0 'a.config': the first config item must be a make target"),
    ("{package: linux-source-6.1}", "[]", "", r"r.yaml:5: kernel.config: a make target to start from"),
    ("{package: 'linux source'}", "[allnoconfig]", "", r"r.yaml:4: kernel.source.package: 'linux source' is not a valid Debian package name"),
    ("{tree: /nonexistent/linux}", "[allnoconfig]", "", r"r.yaml:4: kernel.source.tree: /nonexistent/linux is not a directory"),
    ("{tarball: nope.tar.xz}", "[allnoconfig]", "", r"r.yaml:4: kernel.source.tarball: .*nope.tar.xz is not a file"),
    ("{package: linux-source-6.1, tree: /tmp}", "[allnoconfig]", "", r"r.yaml:4: kernel.source: expected exactly one of package"),
    ("{git: x}", "[allnoconfig]", "", r"r.yaml:4: kernel.source.git: unknown field \(allowed: package, tarball, tree\)"),
    ("{package: linux-source-6.1}", "[allnoconfig]", "  dtbs: [../../etc/passwd]\n",
     r"r.yaml:6: kernel.dtbs: item 0 '../../etc/passwd': is not a device tree blob name"),
    ("{package: linux-source-6.1}", "[allnoconfig]", "  package: linux-image-arm64\n",
     r"r.yaml:3: kernel: exactly one of kernel.package .* and kernel.source"),
])
def test_bad_kernel_source_is_refused_naming_the_line(tmp_path, source, config, extra, expected):
    message = _error(_recipe(tmp_path, source, config, extra))
    assert __import__("re").search(expected, message), message


def test_config_and_dtbs_need_a_source_kernel(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("name: t\narch: arm64\nkernel:\n  package: linux-image-arm64\n  dtbs: [freescale/x.dtb]\n"
                    "initrd:\n  packages: [busybox-static]\n")
    assert "r.yaml:5: kernel.dtbs: only a kernel built from source" in _error(path)


def test_a_tree_or_tarball_is_relative_to_the_recipe(tmp_path):
    (tmp_path / "linux").mkdir()
    (tmp_path / "linux.tar.xz").write_bytes(b"")
    assert load_recipe(_recipe(tmp_path, "{tree: linux}")).kernel_source.location == str(tmp_path / "linux")
    assert load_recipe(_recipe(tmp_path, "{tarball: linux.tar.xz}")).kernel_source.location == \
        str(tmp_path / "linux.tar.xz")


def test_fragment_lines_are_parsed_and_bad_lines_named():
    text = "# a comment\n\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"x y\"\n"
    assert kernel.parse_fragment(text, "f.config") == [
        Request("CONFIG_A", "y", "f.config:3"), Request("CONFIG_B", "n", "f.config:4"),
        Request("CONFIG_C", '"x y"', "f.config:5")]
    with pytest.raises(JobError, match=r"f.config:2: expected CONFIG_NAME=value .*'SMP=y'"):
        kernel.parse_fragment("CONFIG_A=y\nSMP=y\n", "f.config")


def test_unmet_requests_name_the_fragment_line_and_the_last_request_wins():
    requests = [Request("CONFIG_A", "y", "base:1"), Request("CONFIG_A", "n", "board:1"),
                Request("CONFIG_FEC", "y", "board:2"), Request("CONFIG_SMP", "y", "base:2"),
                Request("CONFIG_GONE", "n", "base:3"), Request("CONFIG_HZ", "250", "base:4")]
    final = kernel.parse_config("CONFIG_SMP=y\nCONFIG_HZ=100\n# CONFIG_FEC is not set\n")
    problems = kernel.unmet_requests(requests, final)
    assert len(problems) == 2
    assert problems[0].startswith("board:2: CONFIG_FEC=y was asked for, the merged config has it not set")
    assert problems[1].startswith("base:4: CONFIG_HZ=250 was asked for, the merged config has it CONFIG_HZ=100")


def test_progress_says_a_line_per_phase_and_every_ten_seconds():
    said, now = [], [0.0]
    progress = Progress(said.append, clock=lambda: now[0])
    for t, line in [(1, "  CC      init/main.o"), (2, "  AS      arch/arm64/kernel/head.o"),
                    (5, "  OBJCOPY arch/arm64/kernel/vdso/vdso.so"), (9, "  CC      a.o"), (11, "  CC      b.o"),
                    (12, "  CC      c.o"), (13, "  LD      vmlinux.o"), (14, "  LD      vmlinux"),
                    (15, "  OBJCOPY arch/arm64/boot/Image"), (16, "  DTC     arch/arm64/boot/dts/x.dtb")]:
        now[0] = t
        progress.line(line)
    assert said == ["kernel: compiling, 4 files compiled, 11s", "kernel: linking vmlinux, 5 files compiled, 14s",
                    "kernel: making the boot image, 5 files compiled, 15s",
                    "kernel: compiling device trees, 5 files compiled, 16s"]


def test_build_timestamp_is_what_date_parses_back():
    stamp = kernel.build_timestamp(1764177120)
    assert stamp == "Wed Nov 26 17:12:00 UTC 2025"
    parsed = subprocess.run(["date", "-u", "-d", stamp, "+%s"], capture_output=True, text=True, check=True)
    assert parsed.stdout.strip() == "1764177120"


def test_cross_prefix_from_the_compiler():
    assert kernel.cross_prefix("/usr/bin/aarch64-linux-gnu-gcc") == "aarch64-linux-gnu-"
    assert kernel.cross_prefix("/usr/bin/x86_64-linux-gnu-gcc") == "x86_64-linux-gnu-"
    with pytest.raises(JobError):
        kernel.cross_prefix("/usr/bin/clang")


def test_missing_host_tools_are_named_with_their_packages(monkeypatch):
    tools = (HostTool("make", "make"), HostTool("farm-no-such-bison", "bison"),
             HostTool("/nonexistent/libelf.h", "libelf-dev"))
    assert [t.package for t in kernel.missing_host_tools(tools)] == ["bison", "libelf-dev"]
    monkeypatch.setattr(kernel, "HOST_TOOLS", tools)
    with pytest.raises(JobError, match=r"needs farm-no-such-bison, /nonexistent/libelf.h: Debian packages bison "
                                       r"libelf-dev bring them"):
        kernel.check_host_tools()


def test_setup_installs_every_host_tool_package():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    for tool in kernel.HOST_TOOLS:
        if tool.package not in ("make", "tar", "perl-base"):  # there before setup runs (Essential, or setup's own)
            assert f" {tool.package} " in setup.replace("\n", " "), tool.package
    assert " linux-source-6.1 " in setup.replace("\n", " ")
