"""farm.images.recipe + farm.config: the real recipe loads; every broken one is a JobError naming file:line: field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm.config import Node, load_yaml
from farm.errors import EXIT_JOB_ERROR, JobError
from farm.images.recipe import load_recipe

ROOT = Path(__file__).resolve().parent.parent.parent
REAL = ROOT / "images" / "maaxboard-bench.yaml"

GOOD = """\
name: t
arch: arm64
kernel:
  package: linux-image-arm64
  modules: [virtio_net, fec]
initrd:
  packages: [busybox-static, iperf3]
  files: [/bin/busybox, /usr/bin/iperf3]
"""


def _write(tmp_path: Path, text: str, name: str = "r.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _error(path: Path) -> str:
    with pytest.raises(JobError) as info:
        load_recipe(path)
    assert info.value.exit_code == EXIT_JOB_ERROR
    message = str(info.value)
    assert "\n" not in message  # one line for the user
    return message


def _line_of(path: Path, startswith: str) -> int:
    lines = path.read_text().splitlines()
    (number,) = [i for i, line in enumerate(lines, start=1) if line.startswith(startswith)]
    return number


# --- good recipes ---

def test_real_recipe_loads():
    recipe = load_recipe(REAL)
    assert recipe.name == "maaxboard-bench"
    assert recipe.arch == "arm64"
    assert recipe.kernel_package == "linux-image-arm64"
    assert recipe.modules[:4] == ("virtio_net", "virtio_pci", "virtio_mmio", "fec")
    assert recipe.packages[:3] == ("busybox-static", "iperf3", "openssl")
    assert recipe.files[:4] == ("/bin/busybox", "/usr/bin/iperf3", "/usr/bin/openssl", "/usr/lib/ssl/openssl.cnf")
    assert recipe.source == str(REAL)
    # where each field is, for later messages (e.g. "this module is not in the kernel")
    assert recipe.where["kernel.package"] == f"{REAL}:{_line_of(REAL, '  package:')}: kernel.package"
    assert recipe.where["kernel.modules"] == f"{REAL}:{_line_of(REAL, '  modules:')}: kernel.modules"
    assert recipe.where["initrd.files"] == f"{REAL}:{_line_of(REAL, '  files:')}: initrd.files"
    assert str(recipe.error("kernel.modules", "no module 'x'")) == \
        f"{REAL}:{_line_of(REAL, '  modules:')}: kernel.modules: no module 'x'"


def test_minimal_recipe(tmp_path):
    path = _write(tmp_path, GOOD)
    recipe = load_recipe(path)
    assert (recipe.name, recipe.arch, recipe.kernel_package) == ("t", "arm64", "linux-image-arm64")
    assert recipe.modules == ("virtio_net", "fec")
    assert recipe.packages == ("busybox-static", "iperf3")
    assert recipe.files == ("/bin/busybox", "/usr/bin/iperf3")
    assert recipe.kernel_compress == "none"
    assert recipe.where["initrd.packages"] == f"{path}:7: initrd.packages"


def test_canonical_ignores_file_name_and_comments(tmp_path):
    a = load_recipe(_write(tmp_path, GOOD, "a.yaml"))
    b = load_recipe(_write(tmp_path, "# a comment\n" + GOOD.replace("[virtio_net, fec]", "[virtio_net, fec]  # nics"),
                           "b.yaml"))
    assert a.canonical() == b.canonical()
    assert a.canonical()["modules"] == ["virtio_net", "fec"]
    c = load_recipe(_write(tmp_path, GOOD.replace("[virtio_net, fec]", "[fec, virtio_net]"), "c.yaml"))
    assert c.canonical() != a.canonical()


# --- broken recipes: each names file:line: field ---

def test_missing_kernel_package(tmp_path):
    path = _write(tmp_path, GOOD.replace("  package: linux-image-arm64\n", ""))
    message = _error(path)
    assert message.startswith(f"{path}:")
    assert "missing required field 'kernel.package'" in message
    line = int(re.match(rf"{re.escape(str(path))}:(\d+): ", message)[1])
    assert line in (3, 4)  # `kernel:` (3) or the first line of its mapping (4)


def test_missing_kernel_package_names_the_kernel_line(tmp_path):
    path = _write(tmp_path, GOOD.replace("  package: linux-image-arm64\n", ""))
    assert _error(path) == f"{path}:3: kernel: missing required field 'kernel.package'"


def test_missing_top_level_field(tmp_path):
    path = _write(tmp_path, GOOD.replace("arch: arm64\n", ""))
    assert _error(path) == f"{path}:1: (top level): missing required field 'arch'"


@pytest.mark.parametrize("empty", ["name:\n", "arch: ~\n"])
def test_null_required_field_is_missing(tmp_path, empty):
    key = empty.split(":")[0]
    path = _write(tmp_path, re.sub(rf"^{key}: .*\n", empty, GOOD, flags=re.M))
    assert f"missing required field '{key}'" in _error(path)


def test_empty_kernel_section(tmp_path):
    path = _write(tmp_path, "name: t\narch: arm64\nkernel:\ninitrd:\n  packages: [busybox-static]\n")
    assert "missing required field 'kernel'" in _error(path)


def test_wrong_arch(tmp_path):
    path = _write(tmp_path, GOOD.replace("arch: arm64", "arch: riscv64"))
    assert _error(path) == f"{path}:2: arch: unsupported architecture 'riscv64' (one of: arm64, amd64)"


def test_arch_of_wrong_type(tmp_path):
    path = _write(tmp_path, GOOD.replace("arch: arm64", "arch: [arm64]"))
    assert _error(path) == f"{path}:2: arch: expected a string, got list ['arm64']"


def test_bad_package_name(tmp_path):
    path = _write(tmp_path, GOOD.replace("[busybox-static, iperf3]", '[busybox-static, "Foo;rm"]'))
    assert _error(path) == f"{path}:7: initrd.packages: item 1 'Foo;rm': is not a valid Debian package name"


@pytest.mark.parametrize("bad", ["Foo;rm", "Foo", "-rf", "a", "a b", "a/b", "../x", "x\\n", "iperf3\\n", "$(id)", "x`id`"])
def test_bad_kernel_package_names(tmp_path, bad):
    path = _write(tmp_path, GOOD.replace("package: linux-image-arm64", f'package: "{bad}"'))
    message = _error(path)
    assert message.startswith(f"{path}:4: kernel.package: ")
    assert message.endswith("is not a valid Debian package name")


@pytest.mark.parametrize("good", ["linux-image-6.1.0-57-arm64", "libstdc++6", "g++-12", "a0"])
def test_good_package_names(tmp_path, good):
    assert load_recipe(_write(tmp_path, GOOD.replace("package: linux-image-arm64", f"package: {good}"))).kernel_package == good


@pytest.mark.parametrize("bad", ["../x", "virtio net", "virtio_net;reboot", "virtio_net\\n"])
def test_bad_module_name(tmp_path, bad):
    path = _write(tmp_path, GOOD.replace("[virtio_net, fec]", f'[virtio_net, "{bad}"]'))
    assert _error(path).startswith(f"{path}:5: kernel.modules: item 1 ")


@pytest.mark.parametrize("bad", ["../evil", ".hidden", "a/b", "a b", "t\\n", ""])
def test_bad_image_name(tmp_path, bad):
    path = _write(tmp_path, GOOD.replace("name: t", f'name: "{bad}"'))
    message = _error(path)
    assert message.startswith(f"{path}:1: name: ")
    assert "is not a valid image name" in message


def test_unknown_top_level_field(tmp_path):
    path = _write(tmp_path, GOOD + "kernel_args: quiet\n")
    message = _error(path)
    assert message.startswith(f"{path}:9: kernel_args: unknown field (allowed: ")
    assert "initrd" in message and "kernel" in message


def test_unknown_field_in_a_section(tmp_path):
    path = _write(tmp_path, GOOD.replace("  modules:", "  dtb: imx8mq-evk.dtb\n  modules:"))
    assert _error(path).startswith(f"{path}:5: kernel.dtb: unknown field (allowed: ")
    path = _write(tmp_path, GOOD + "  overlay: /tmp\n")
    assert _error(path).startswith(f"{path}:9: initrd.overlay: unknown field (allowed: compress, files, packages)")


def test_invalid_yaml_names_the_line(tmp_path):
    path = _write(tmp_path, GOOD.replace("[/bin/busybox, /usr/bin/iperf3]", "[/bin/busybox, /usr/bin/iperf3"))
    message = _error(path)
    assert message.startswith(f"{path}:9: invalid YAML: ")
    path = _write(tmp_path, GOOD.replace("  modules:", "\tmodules:"))
    assert _error(path).startswith(f"{path}:5: invalid YAML: found character '\\t'")


def test_duplicate_key(tmp_path):
    path = _write(tmp_path, GOOD + "arch: amd64\n")
    assert _error(path) == f"{path}:9: duplicate key 'arch'"
    path = _write(tmp_path, GOOD.replace("  modules: [virtio_net, fec]\n", "  modules: [fec]\n  package: x\n"))
    assert _error(path) == f"{path}:6: duplicate key 'package'"


@pytest.mark.parametrize("evil", [
    '!!python/object/apply:os.system ["touch SENTINEL"]',
    "!!python/object/apply:os.system\n  - touch SENTINEL",
    "!!python/object/new:subprocess.Popen [[touch, SENTINEL]]",
    "!!python/name:os.system",
])
def test_python_tags_are_refused_and_never_run(tmp_path, monkeypatch, evil):
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, GOOD + f"description: {evil}\n")
    message = _error(path)
    assert message.startswith(f"{path}:9: invalid YAML: could not determine a constructor for the tag")
    assert "python/" in message
    assert not (tmp_path / "SENTINEL").exists()
    # as the whole document too
    path = _write(tmp_path, f"--- {evil}\n", "whole.yaml")
    assert _error(path).startswith(f"{path}:1: invalid YAML: could not determine a constructor")
    assert not (tmp_path / "SENTINEL").exists()


@pytest.mark.parametrize("text, kind", [("- a\n- b\n", "list"), ("just text\n", "str"), ("", "NoneType"),
                                        ("42\n", "int"), ("# only a comment\n", "NoneType")])
def test_document_must_be_a_mapping(tmp_path, text, kind):
    path = _write(tmp_path, text)
    message = _error(path)
    assert message.startswith(f"{path}:1: ")
    assert message.endswith(f"must be a YAML mapping (key: value), not {kind}")


@pytest.mark.parametrize("bad", ["/usr/../etc/passwd", "/..", "/bin/busybox/..", "bin/busybox", "/etc/pass wd",
                                 "/bin/busybox;reboot", "//etc/passwd", "/bin/busybox\\n", ""])
def test_initrd_files_must_be_plain_absolute_paths(tmp_path, bad):
    path = _write(tmp_path, GOOD.replace("[/bin/busybox, /usr/bin/iperf3]", f'[/bin/busybox, "{bad}"]'))
    message = _error(path)
    assert message.startswith(f"{path}:8: initrd.files: item 1 ")
    assert message.endswith("is not a valid absolute file path")


def test_initrd_files_item_of_wrong_type(tmp_path):
    path = _write(tmp_path, GOOD.replace("[/bin/busybox, /usr/bin/iperf3]", "[/bin/busybox, 3]"))
    assert _error(path) == f"{path}:8: initrd.files: item 1 must be a string, got int 3"


def test_no_initrd_packages(tmp_path):
    path = _write(tmp_path, GOOD.replace("[busybox-static, iperf3]", "[]"))
    assert _error(path).startswith(f"{path}:7: initrd.packages: at least one package is needed")


def test_kernel_compress(tmp_path):
    assert load_recipe(_write(tmp_path, GOOD.replace("  modules:", "  compress: gzip\n  modules:"))).kernel_compress == "gzip"
    path = _write(tmp_path, GOOD.replace("  modules:", "  compress: bzip2\n  modules:"))
    assert _error(path) == f"{path}:5: kernel.compress: 'bzip2': expected none or gzip"


def test_initrd_compress(tmp_path):
    assert load_recipe(_write(tmp_path, GOOD)).initrd_compress == "gzip"
    zstd = load_recipe(_write(tmp_path, GOOD.replace("initrd:\n", "initrd:\n  compress: zstd\n")))
    assert zstd.initrd_compress == "zstd" and zstd.canonical()["initrd_compress"] == "zstd"
    # gzip, said or not, keeps the cache keys every image had before the option existed
    assert "initrd_compress" not in load_recipe(_write(tmp_path, GOOD)).canonical()
    assert load_recipe(_write(tmp_path, GOOD.replace("initrd:\n", "initrd:\n  compress: gzip\n"))).canonical() \
        == load_recipe(_write(tmp_path, GOOD)).canonical()
    path = _write(tmp_path, GOOD.replace("initrd:\n", "initrd:\n  compress: xz\n"))
    assert _error(path) == f"{path}:7: initrd.compress: 'xz': expected one of gzip, zstd"


def test_missing_file(tmp_path):
    path = tmp_path / "nope.yaml"
    assert _error(path) == f"{path}: image recipe not found"


# --- farm.config directly ---

def test_load_yaml_records_lines_and_paths(tmp_path):
    doc = load_yaml(_write(tmp_path, GOOD))
    assert isinstance(doc, Node) and isinstance(doc["kernel"], Node)
    assert doc.key_lines == {"name": 1, "arch": 2, "kernel": 3, "initrd": 6}
    assert doc["kernel"].key_lines == {"package": 4, "modules": 5}
    assert doc["initrd"].where("files") == f"{tmp_path / 'r.yaml'}:8: initrd.files"
    assert doc.where() == f"{tmp_path / 'r.yaml'}:1: (top level)"


def test_template_tag_stays_text(tmp_path):
    doc = load_yaml(_write(tmp_path, "port: !template $LG_PORT\n"))
    assert doc == {"port": "$LG_PORT"}


@pytest.mark.parametrize("bad", ["isal\\n", "../isal", ".isal", "is al"])
def test_bad_program_name(tmp_path, bad):
    (tmp_path / "bench.c").write_text("int main(void) { return 0; }\n")
    path = _write(tmp_path, GOOD + f'programs:\n  - name: "{bad}"\n    source: bench.c\n')
    message = _error(path)
    assert message.startswith(f"{path}:10: programs[0].name: ")
    assert "is not a valid program name (letters, digits and . _ -" in message
