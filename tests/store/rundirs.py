"""Run directories as farm writes them (its own writers), for the store and dashboard tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

import attrs

from farm.results.csvout import write_records
from farm.results.junit import Case, write_junit
from farm.results.record import Record, to_json, write_text_atomic

TARGET = "maaxboard-twin"


def make_run(path: Path, run_id: str, *, started: str, kernel: str = "6.1.0-57-arm64", image_key: str = "a" * 64,
             git_sha: str = "1" * 40, values: Mapping[str, Sequence[float]] | None = None, status: str = "passed",
             console: str = "U-Boot 2023.01\nLinux version 6.1\nFARM-READY\n", failure: str | None = None,
             setup: str = "default", pipeline: str = "smoke", who: str = "lab-engineer",
             place: Mapping | None = None, sweep_setups: Sequence[str] = ()) -> Path:
    """A live run of ``openssl-speed`` on the twin: ``values`` maps a metric to its repeats; ``place``
    is run.json's (farm run --farm), and each of ``sweep_setups`` adds a network sweep of 3 rates."""
    values = values if values is not None else {"throughput": [1.0e8, 1.1e8, 1.2e8]}
    path.mkdir(parents=True)
    records = [Record(run_id, started, TARGET, "arm64", setup, "maaxboard-bench", "crypto", "openssl-speed",
                      "algorithm=sha256;block=16384", repeat, metric, value, "bytes/s")
               for metric, vs in values.items() for repeat, value in enumerate(vs)]
    for i, sweep_setup in enumerate(sweep_setups):
        for rate in (10e6, 50e6, 100e6):
            params = f"method=ipbench-echo;n=1700;packet_size=1472;requested={int(rate)}"
            records += [Record(run_id, started, TARGET, "arm64", sweep_setup, "maaxboard-bench", "network", "sweep",
                               params, 0, metric, value, unit) for metric, value, unit in (
                ("requested_throughput", rate, "bit/s"), ("received_throughput", rate / (1 + i), "bit/s"),
                ("rtt_median", 400.0 * (1 + i), "us"))]
    write_records(path / "results.csv", records)
    cases = [Case("build", "farm.build", 0.1, "pass"), Case(f"boot {TARGET}/{setup}", "farm.boot", 4.5, "pass"),
             Case(f"crypto.openssl-speed {TARGET}/{setup}", "farm.bench.crypto", 2.0,
                  "failure" if failure else "pass", message=failure or "")]
    write_junit(path / "junit.xml", f"farm.{pipeline}", cases)
    write_text_atomic(path / "run.json", to_json({
        "run_id": run_id, "started": started, "finished": started[:-13] + ":59.000+00:00", "status": status,
        "who": who, "pipeline_name": pipeline, "git_sha": git_sha, "farm_version": "0.1.0",
        "setups": {setup: {"bootargs": []}},
        "images": {"maaxboard-bench": {"key": image_key, "kernel_version": kernel, "artifacts": {
            "Image": {"sha256": "b" * 64, "size": 10}, "initrd.cpio.gz": {"sha256": "c" * 64, "size": 5}}}},
        "targets": {TARGET: {"arch": "arm64", "boots": [
            {"setup": setup, "repeat": 0, "kernel": kernel, "image": "maaxboard-bench", "image_key": image_key,
             "cpus": 4, "frequency_hz": 1.5e9, "boot_seconds": 4.4}]}},
        "place": dict(place) if place is not None else None,
    }) + "\n")
    (path / "console").mkdir()
    (path / "console" / f"{TARGET}.log").write_text(console, encoding="utf-8")
    return path


#: runs of pipelines/qualify.yaml on the twin, recorded (tests/data/README.md): five boots each; ``slow`` booted
#: with maxcpus=1
RECORDED = Path(__file__).resolve().parent.parent / "data" / "qualify-twin"


def recorded_history(root: Path, runs: int, *, slow_from: int | None = None, seed: int = 49) -> list[Path]:
    """``runs`` run directories made of the recorded qualify runs, one an hour from 2026-12-01: each run's
    boots drawn (seeded) from the recorded boots of ``base`` and ``same``, from run ``slow_from`` on from
    those of ``slow`` (a real slowdown: openssl's four processes on one core). run.json is base's (slow's
    from ``slow_from`` on), its run id and times the run's own."""
    import random

    from farm.results.csvout import read_records

    rng = random.Random(seed)

    def boots(*names: str) -> tuple[dict, list[list[Record]]]:
        out = []
        for name in names:
            by_boot: dict[int, list[Record]] = {}
            for r in read_records(RECORDED / name / "results.csv"):
                by_boot.setdefault(r.repeat, []).append(r)
            out += by_boot.values()
        return json.loads((RECORDED / names[-1] / "run.json").read_text(encoding="utf-8")), out

    unchanged, slow = boots("base", "same"), boots("slow")
    made = []
    for i in range(runs):
        info, pool = slow if slow_from is not None and i >= slow_from else unchanged
        run_id, started = f"20261201-{i:02d}0000-hist{i:02d}", f"2026-12-01T{i:02d}:00:00.000+00:00"
        records = [attrs.evolve(r, run_id=run_id, timestamp=started, repeat=boot)
                   for boot in range(5) for r in rng.choice(pool)]
        path = root / run_id
        path.mkdir(parents=True)
        write_records(path / "results.csv", records)
        write_text_atomic(path / "run.json", to_json({**info, "run_id": run_id, "started": started,
                                                      "finished": f"2026-12-01T{i:02d}:02:00.000+00:00"}) + "\n")
        made.append(path)
    return made
