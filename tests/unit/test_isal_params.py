"""isal_bench measures what ISA-L 2.30's own perf programs measure: the same buffers per call, the
same cold/warm definitions, the same erasure-code parameters, the same bytes counted.

The upstream values below are written out from intel/isa-l at tag v2.30.0 (the version Debian 12
ships as libisal 2.30.0-5) and, for the lab's crypto functions (measured with OpenSSL: Debian has
no isa-l_crypto), from intel/isa-l_crypto v2.24.0's *_ossl_perf programs, file by file; the
test checks them against what isal_bench says it ran (its "# <test>: ..." lines) in real
captures: the MaaXBoard and x86 twins' and this host's (tests/data/README.md). Upstream's
GT_L3_CACHE is the constant 32 MiB ("some number > last level cache"); isal_bench sizes it
from sysfs (twice the largest cache, at least 32 MiB) and prints it on its first line, so every
cold formula is checked with the GT_L3 of that machine.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm.measure.isal import parse_perf, what_ran

DATA = Path(__file__).resolve().parent.parent / "data"
CAPTURES = ["isal-maaxboard-twin.txt", "isal-x86-twin.txt", "isal-perf-host.txt"]

KiB, MiB = 1024, 1024 * 1024
#: upstream's GT_L3_CACHE (crc/crc32_ieee_perf.c and the others: "32*1024*1024 /* some number >
#: last level cache */"): isal_bench's floor
UPSTREAM_GT_L3 = 32 * MiB


def upstream(gt_l3: int) -> dict[str, dict[str, int]]:
    """test -> {vects, len, bytes_per_call}, as ISA-L v2.30.0's perf programs define them."""
    ec_m, ec_k, ec_nerrs = 14, 10, 4  # erasure_code/erasure_code_perf.c: m = 14; k = 10; nerrs = 4
    tests: dict[str, dict[str, int]] = {}
    for crc in ("crc16_t10dif", "crc32_ieee", "crc32_iscsi"):
        # crc/<crc>_perf.c: CACHED_TEST: TEST_LEN 8*1024; else TEST_LEN (2 * GT_L3_CACHE);
        # BENCHMARK(... <crc>(TEST_SEED, buf, TEST_LEN)); perf_print(start, TEST_LEN)
        tests[f"{crc}_warm"] = {"vects": 1, "len": 8 * KiB, "bytes_per_call": 8 * KiB}
        tests[f"{crc}_cold"] = {"vects": 1, "len": 2 * gt_l3, "bytes_per_call": 2 * gt_l3}
    # raid/xor_gen_perf.c: TEST_SOURCES 10; warm TEST_LEN 8*1024, cold GT_L3_CACHE / TEST_SOURCES;
    # xor_gen(TEST_SOURCES + 1, TEST_LEN, buffs); TEST_MEM ((TEST_SOURCES + 1)*(TEST_LEN))
    for mode, length in (("warm", 8 * KiB), ("cold", gt_l3 // 10)):
        tests[f"xor_gen_{mode}"] = {"vects": 11, "len": length, "bytes_per_call": 11 * length}
    # raid/pq_gen_perf.c: warm TEST_LEN 8*1024, cold ((GT_L3_CACHE / TEST_SOURCES) & ~(64-1));
    # pq_gen(TEST_SOURCES + 2, TEST_LEN, buffs); TEST_MEM ((TEST_SOURCES + 2)*(TEST_LEN))
    for mode, length in (("warm", 8 * KiB), ("cold", (gt_l3 // 10) & ~63)):
        tests[f"pq_gen_{mode}"] = {"vects": 12, "len": length, "bytes_per_call": 12 * length}
    # erasure_code/erasure_code_perf.c: TEST_LEN(m) warm ((128*1024 / m) & ~(64-1)), cold
    # ((GT_L3_CACHE / m) & ~(64-1)); encode perf_print(start, TEST_LEN(m) * m); decode
    # perf_print(start, TEST_LEN(m) * (k + nerrs)); err_list[] = { 2, 4, 5, 7 }; gf_gen_rs_matrix
    for mode, total in (("warm", 128 * KiB), ("cold", gt_l3)):
        length = (total // ec_m) & ~63
        tests[f"erasure_code_encode_{mode}"] = {"m": ec_m, "k": ec_k, "len": length,
                                                "bytes_per_call": length * ec_m}
        tests[f"erasure_code_decode_{mode}"] = {"m": ec_m, "k": ec_k, "nerrs": ec_nerrs, "len": length,
                                                "bytes_per_call": length * (ec_k + ec_nerrs)}
    # The lab's crypto functions: isa-l_crypto (v2.24.0)'s *_ossl_perf programs, their OpenSSL side.
    # aes/xts_128_dec_ossl_perf.c, aes/xts_256_dec_ossl_perf.c: CACHED_TEST TEST_LEN 8*1024, else
    # TEST_LEN (2 * GT_L3_CACHE); perf_print(stop, start, (long long)TEST_LEN * i)
    for xts in ("aes_xts_128_dec", "aes_xts_256_dec"):
        tests[f"{xts}_warm"] = {"vects": 1, "len": 8 * KiB, "bytes_per_call": 8 * KiB}
        tests[f"{xts}_cold"] = {"vects": 1, "len": 2 * gt_l3, "bytes_per_call": 2 * gt_l3}
    # md5_mb/md5_mb_vs_ossl_perf.c, sha1_mb/..., sha256_mb/..., sha512_mb/sha512_mb_vs_ossl_perf.c:
    # TEST_BUFS 32; CACHED_TEST TEST_LEN 4*1024, else (GT_L3_CACHE / TEST_BUFS); one loop hashes
    # every buffer: perf_print(stop, start, (long long)TEST_LEN * i * t) with i = TEST_BUFS
    # (isal_bench names the first two md5 and sha1: OpenSSL's are not the multi-buffer functions)
    for digest in ("md5", "sha1", "sha256", "sha512"):
        tests[f"{digest}_warm"] = {"vects": 32, "len": 4 * KiB, "bytes_per_call": 32 * 4 * KiB}
        tests[f"{digest}_cold"] = {"vects": 32, "len": gt_l3 // 32, "bytes_per_call": gt_l3}
    return tests


#: OpenSSL 3 refuses an XTS data unit above 2^20 blocks (providers/implementations/ciphers/
#: cipher_aes_xts.c, XTS_MAX_BLOCKS_PER_DATA_UNIT): isal_bench decrypts a cold buffer in units of
#: at most 16 MiB, each with its own tweak, where isa-l_crypto's ossl perf makes one call
XTS_MAX_UNIT = 16 * MiB
UPSTREAM_EC_ERRORS = "2,4,5,7"  # erasure_code_perf.c: const u8 err_list[] = { 2, 4, 5, 7 };
UPSTREAM_EC_MATRIX = "rs"  # erasure_code_perf.c: gf_gen_rs_matrix(a, m, k);
#: igzip/igzip_file_perf.c: "int level = 0" unless -X; inbuf_size 0 "buffers all the input";
#: perf_print(start, (long long)infile_size)
UPSTREAM_IGZIP_LEVEL = 0

_DESCRIBE = re.compile(r"^# (?P<name>[A-Za-z0-9_.+@-]+): (?P<fields>(?:[a-z_]+=\S+ ?)+)$")
_GT_L3 = re.compile(r"^# isal_bench: largest cache of cpu0 (?P<llc>[0-9]+) bytes .*GT_L3 (?P<gt>[0-9]+) bytes")


def described(text: str) -> tuple[int, int, dict[str, dict[str, str]]]:
    (first,) = [m for m in map(_GT_L3.match, text.splitlines()) if m]
    tests = {}
    for line in text.splitlines():
        if m := _DESCRIBE.match(line):
            tests[m["name"]] = dict(field.split("=", 1) for field in m["fields"].split())
    return int(first["llc"]), int(first["gt"]), tests


@pytest.fixture(params=CAPTURES)
def capture(request) -> str:
    # captured by an isal_bench that still printed OpenSSL's digests as md5_mb/sha1_mb: read with
    # today's names, as farm reads such a capture
    return what_ran((DATA / request.param).read_text())


def test_gt_l3_is_twice_the_largest_cache_with_upstreams_constant_as_floor(capture):
    llc, gt_l3, _ = described(capture)
    assert gt_l3 == max(2 * llc, UPSTREAM_GT_L3)


def test_every_function_and_mode_has_upstreams_buffers_and_byte_count(capture):
    _, gt_l3, tests = described(capture)
    expected = upstream(gt_l3)
    assert set(expected) <= set(tests)
    for name, want in expected.items():
        assert {k: int(tests[name][k]) for k in want} == want, name


def test_erasure_code_loses_upstreams_fragments_of_an_rs_matrix(capture):
    _, _, tests = described(capture)
    for mode in ("cold", "warm"):
        assert tests[f"erasure_code_decode_{mode}"]["errors"] == UPSTREAM_EC_ERRORS
        assert tests[f"erasure_code_decode_{mode}"]["matrix"] == UPSTREAM_EC_MATRIX
        assert tests[f"erasure_code_encode_{mode}"]["matrix"] == UPSTREAM_EC_MATRIX


def test_igzip_compresses_each_whole_file_at_igzip_file_perfs_level(capture):
    _, _, tests = described(capture)
    sizes = {m["file"]: int(m["size"]) for m in map(
        re.compile(r"^# igzip (?P<file>\S+): in_size=(?P<size>[0-9]+) ").match, capture.splitlines()) if m}
    igzip = {name: fields for name, fields in tests.items() if "@" in name}
    assert len(igzip) == 4 * len(sizes) >= 8
    for name, fields in igzip.items():
        file = name.split("@")[1]
        assert int(fields["level"]) == UPSTREAM_IGZIP_LEVEL
        assert int(fields["len"]) == int(fields["bytes_per_call"]) == sizes[file]


def test_perf_line_counts_whole_calls_of_the_described_bytes(capture):
    # perf_print: "bandwidth <total/10^6> MB in <s> sec": total = calls * bytes_per_call, so the
    # MB figure is floor(calls * bytes / 10^6) for a whole number of calls
    _, _, tests = described(capture)
    lines = {line.split(":")[0]: line for line in capture.splitlines() if "runtime =" in line}
    assert set(lines) == set(tests)
    for name, line in lines.items():
        mb = int(line.split("bandwidth ")[1].split(" MB")[0])
        per_call = int(tests[name]["bytes_per_call"])
        calls_low, calls_high = mb * 10**6 // per_call, (mb + 1) * 10**6 // per_call
        assert any(c * per_call // 10**6 == mb for c in range(max(calls_low, 1), calls_high + 1)), name


def test_crypto_is_openssls_evp_under_the_labs_names(capture):
    _, _, tests = described(capture)
    ciphers = {"aes_xts_128_dec": "AES-128-XTS", "aes_xts_256_dec": "AES-256-XTS"}
    digests = {"md5": "MD5", "sha1": "SHA1", "sha256": "SHA256", "sha512": "SHA512"}
    for mode in ("cold", "warm"):
        for name, cipher in ciphers.items():
            fields = tests[f"{name}_{mode}"]
            assert fields["cipher"] == cipher
            assert int(fields["unit"]) == min(int(fields["len"]), XTS_MAX_UNIT)
        for name, digest in digests.items():
            assert tests[f"{name}_{mode}"]["digest"] == digest
    impls = {m.params.get("impl") for m in parse_perf(capture) if m.params["function"] in {*ciphers, *digests}}
    assert impls == {"openssl-3.0"}  # never mistaken for isa-l_crypto


def test_names_are_upstreams(capture):
    names = {(m.params["function"], m.params.get("mode")) for m in parse_perf(capture)}
    assert {f for f, mode in names if mode} == {
        "crc16_t10dif", "crc32_ieee", "crc32_iscsi", "xor_gen", "pq_gen", "erasure_code_encode",
        "erasure_code_decode", "aes_xts_128_dec", "aes_xts_256_dec", "md5", "sha1", "sha256", "sha512"}
    assert {f for f, mode in names if not mode} == {
        "igzip_file_perf", "igzip_stateless_file_perf", "isal_stateful_inflate", "isal_stateless_inflate"}
