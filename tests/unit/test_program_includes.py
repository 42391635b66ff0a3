"""Programs compile against the target's Debian headers as Debian lays them out: a -dev package's
multiarch headers (libssl-dev's openssl/opensslconf.h, configuration.h) live in
usr/include/<triplet>/, and <openssl/evp.h> includes them, so the build searches there too and
isal_bench uses the real <openssl/evp.h> rather than prototypes of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm.images.programs import Program, build_program

ROOT = Path(__file__).resolve().parents[2]
TRIPLETS = {"arm64": "aarch64-linux-gnu", "amd64": "x86_64-linux-gnu"}


@pytest.mark.parametrize("arch", ["arm64", "amd64"])
def test_a_header_that_includes_a_multiarch_header_compiles(arch, tmp_path):
    tree = tmp_path / "libfoo-dev"
    (tree / "usr" / "include" / "foo").mkdir(parents=True)
    (tree / "usr" / "include" / TRIPLETS[arch] / "foo").mkdir(parents=True)
    # as libssl-dev: the generic header includes the configuration of its architecture
    (tree / "usr" / "include" / "foo" / "foo.h").write_text("#include <foo/fooconf.h>\n")
    (tree / "usr" / "include" / TRIPLETS[arch] / "foo" / "fooconf.h").write_text("#define FOO_ANSWER 42\n")
    source = tmp_path / "uses_foo.c"
    source.write_text("#include <foo/foo.h>\nint main(void) { return FOO_ANSWER - 42; }\n")
    binary = build_program(Program("uses_foo", source, ("libfoo-dev",), ()), arch, [tree], TRIPLETS[arch])
    assert binary[:4] == b"\x7fELF"


def test_isal_bench_includes_openssl_and_declares_none_of_it():
    text = (ROOT / "images" / "src" / "isal_bench.c").read_text()
    assert "#include <openssl/evp.h>" in text and "#include <openssl/crypto.h>" in text
    assert "__has_include" not in text
    # no prototype or typedef of OpenSSL's own: the compiler checks calls against the real header
    assert not re.search(r"^\s*(typedef struct \w+_st|\w[\w\s\*]*\b(EVP_|OPENSSL_|OpenSSL_)\w+\s*\()", text, re.M)
