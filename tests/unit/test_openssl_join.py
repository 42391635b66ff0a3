"""A live openssl-speed record and an import of the same function join in `farm compare`: the run's
length (`seconds`) is not in the records' params, and an import's ciphers carry the direction a
live run gives them (encrypt, or decrypt with `farm import openssl --decrypt`)."""

from __future__ import annotations

import csv
from pathlib import Path

from farm.bench.crypto import CPUFREQ_COMMAND, OpensslParams, run_openssl_speed
from farm.results.csvout import write_records
from farm.results.record import RunContext

from ..conftest import run_farm
from ..fakes import FakeContext

DATA = Path(__file__).resolve().parent.parent / "data"
CAPTURES = {"aes-128-gcm": DATA / "openssl-aes-128-gcm-mr.txt", "sha256": DATA / "openssl-sha256-mr.txt"}


def openssl(command: str) -> list[str]:
    """The target's answers: no cpufreq, openssl prints the captured output of its algorithm."""
    if command == CPUFREQ_COMMAND:
        return [""]
    return CAPTURES[command.split(" -evp ")[1].split()[0]].read_text().splitlines()


def live_run(path: Path, params: dict) -> Path:
    ms = run_openssl_speed(FakeContext(openssl), OpensslParams.of(params))
    ctx = RunContext(run_id="live", target="maaxboard-twin", arch="arm64", setup="default", image="x", suite="crypto")
    path.mkdir()
    write_records(path / "results.csv", [ctx.record(m, "2026-12-01T00:00:00.000+00:00") for m in ms])
    return path


def test_live_params_do_not_carry_the_run_length(tmp_path):
    ms = run_openssl_speed(FakeContext(openssl), OpensslParams.of({"algorithms": ["aes-128-gcm", "sha256"], "seconds": 3,
                                                     "decrypt": True}))
    assert ms and all("seconds" not in m.params for m in ms)
    assert {m.params.get("direction") for m in ms if m.params["algorithm"] == "aes-128-gcm"} == {"encrypt", "decrypt"}
    assert all("direction" not in m.params for m in ms if m.params["algorithm"] == "sha256")


def _compare(tmp_path, live: Path, imported: list[Path]) -> list[dict]:
    out = tmp_path / "cmp"
    proc = run_farm("compare", str(live), *map(str, imported), "--out", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr
    with open(out / "compare.csv") as f:
        return list(csv.DictReader(f))


def test_a_live_record_and_an_import_of_it_join_in_compare(tmp_path):
    live = live_run(tmp_path / "live", {"algorithms": ["aes-128-gcm", "sha256"], "seconds": 1, "block": 16384,
                                        "decrypt": True})
    imports = []
    for name, capture, extra in (("enc", CAPTURES["aes-128-gcm"], []), ("dec", CAPTURES["aes-128-gcm"], ["--decrypt"]),
                                 ("sha", CAPTURES["sha256"], [])):
        proc = run_farm("import", "openssl", str(capture), "--setup", f"lab-{name}", "--out", str(tmp_path / name),
                        *extra, timeout=120)
        assert proc.returncode == 0, proc.stderr
        imports.append(tmp_path / name)
    rows = _compare(tmp_path, live, imports)
    by_key = {(r["params"], r["metric"]): r for r in rows}
    enc = by_key["algorithm=aes-128-gcm;block=16384;direction=encrypt", "throughput"]
    dec = by_key["algorithm=aes-128-gcm;block=16384;direction=decrypt", "throughput"]
    sha = by_key["algorithm=sha256;block=16384", "throughput"]
    # each live row has its import beside it, with the same value (the same capture): ratio 1
    for row, column in ((enc, "lab-enc"), (dec, "lab-dec"), (sha, "lab-sha")):
        assert row["default_n"] == row[f"{column}_n"] == "1", row
        assert float(row[f"{column}/default_estimate"]) == 1 and row[f"{column}/default"] == "inconclusive"
    assert dec["lab-enc_n"] in ("", "0") and enc["lab-dec_n"] in ("", "0")  # the directions stay apart


def test_decrypt_is_refused_for_other_kinds(tmp_path):
    proc = run_farm("import", "isal", str(CAPTURES["sha256"]), "--setup", "x", "--decrypt", "--out",
                    str(tmp_path / "x"), timeout=120)
    assert proc.returncode == 2 and "--decrypt applies to openssl imports only" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "x").exists()
