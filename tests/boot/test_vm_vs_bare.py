"""The lab's bare-metal vs VM comparison, end to end on the MaaXBoard's EL2 twin, as a user runs it:
`farm run pipelines/vm-vs-bare.yaml` (its settling, the compare rule, both setups' boots; 1 boot a side here
instead of the file's 5: the path is the same, and each round of both setups is ~1.7 minutes of both
cores), then `farm compare` of its run directory: every shared benchmark's ratio with n per side, marked
inconclusive below the rule's 5 boots a side; and an interrupt while the guest boots. The guest runs under
KVM inside the twin (the twin's EL2 is emulated by TCG).

The judgement at the file's own 5 boots a side (n 5/5, 95 % intervals, conclusive ratios) and the boots'
interleaved order (bare, kvm-guest, bare, ...) are tested on a run of the file as it is, recorded on the
twin (tests/data/vm-vs-bare-5-boots/, tests/data/README.md): the same command, the same checks, without ten
boots in every suite run (the plan's order itself: tests/unit/test_experiment.py)."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from farm.results.csvout import read_records

from ..conftest import ROOT, run_farm

pytestmark = [pytest.mark.boot, pytest.mark.timeout(2700)]  # 2 boots of the twin, 1 of them with a guest; the interrupt's 1
PIPELINE_BOOTS = 5  # a side, the pipeline's own (docs/experiments.md: ~9 min quiet, ~15 loaded)
BOOTS = 1  # a side, in the suite (the recorded run has the pipeline's 5)
RECORDED = ROOT / "tests" / "data" / "vm-vs-bare-5-boots"  # a run of the pipeline as it is (5 boots a side)


@pytest.fixture(scope="module")
def vm_run(tftp_root, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    here = tmp_path_factory.mktemp("vm")
    text = (ROOT / "pipelines" / "vm-vs-bare.yaml").read_text().replace("../", f"{ROOT}/")
    line = re.compile(rf"(?m)^boots: *{PIPELINE_BOOTS}\b")
    assert line.search(text), f"pipelines/vm-vs-bare.yaml has no 'boots: {PIPELINE_BOOTS}' line"
    (here / "vm-vs-bare.yaml").write_text(line.sub(f"boots: {BOOTS}", text))
    out = here / "run"
    return run_farm("run", str(here / "vm-vs-bare.yaml"), "--out", str(out), timeout=2500), out


def test_both_setups_are_measured_every_boot_and_tagged(vm_run):
    proc, out = vm_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = read_records(out / "results.csv")
    by_setup = {s: {r.benchmark for r in records if r.setup == s} for s in ("bare", "kvm-guest")}
    assert by_setup["bare"] == by_setup["kvm-guest"] == {"sweep", "openssl-speed", "isal"}
    for setup in ("bare", "kvm-guest"):  # one value of each benchmark per boot (repeats_in_boot 1)
        assert {r.repeat for r in records if r.setup == setup} == set(range(BOOTS))
    cases = {tc.get("name") for tc in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    assert {f"boot {_label(s, b)}" for s in ("bare", "kvm-guest") for b in range(BOOTS)} <= cases


def _label(setup: str, boot: int) -> str:
    """A boot's label in run.json and junit.xml: numbered when a setup has more than one boot."""
    return f"maaxboard-twin/{setup}/{boot}" if BOOTS > 1 else f"maaxboard-twin/{setup}"


def test_run_json_holds_the_experiment_the_topology_and_the_console_the_guest(vm_run):
    proc, out = vm_run
    info = json.loads((out / "run.json").read_text())
    experiment = info["experiment"]
    assert experiment["order"] == "interleaved" and experiment["boots"] == {"bare": BOOTS, "kvm-guest": BOOTS}
    assert experiment["plan"] == [_label(s, b) for b in range(BOOTS) for s in ("bare", "kvm-guest")]
    assert {b["benchmark"]: b["params"]["samples"] for b in experiment["benchmarks"]
            if b["benchmark"] == "sweep"} == {"sweep": 800}  # the shortened ipbench window, on the record
    boots = info["targets"]["maaxboard-twin"]["boots"]
    assert [b["label"] for b in boots] == experiment["plan"]  # the boots ran in the planned order
    assert all("settle" in b and "busiest_percent" in b["settle"] for b in boots)
    bare, guest = boots[0], boots[1]
    assert bare["flow"] == "netboot" and "topology" not in bare
    topology = guest["topology"]
    assert guest["flow"] == "netboot+guest" and guest["image"].endswith("-host")
    assert topology["guest"]["accel"] == "kvm" and topology["guest"]["vcpus"] == 1
    assert topology["guest"]["network"]["mode"] == "user" and topology["guest"]["network"]["forwards"]
    assert "-enable-kvm" in topology["guest"]["qemu_command"]
    assert topology["guest"]["qemu_version"].startswith("QEMU emulator version")
    assert any("Hyp mode initialized" in line for line in topology["guest"]["host_dmesg"])
    assert len(topology["guest"]["artifacts"]["Image"]["sha256"]) == 64
    assert topology["guest"]["forwards"]  # the sweep's and iperf3's ports, chosen by farm
    assert info["setups"]["kvm-guest"]["guest"]["vcpus"] == 1
    assert experiment["compare"]["min_boots"] == 5  # the rule the ratios are judged by
    console = (out / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert console.count("FARM-READY") >= 3 * BOOTS  # bare, the host of the guest, the guest, per round
    assert "qemu-system-aarch64" in console


def test_compare_gives_every_shared_benchmark_a_ratio_with_n_and_marks_it_inconclusive_below_the_rule(
        vm_run, tmp_path):
    proc, out = vm_run
    conclusive = _compare_every_shared_benchmark(out, tmp_path / "cmp", BOOTS)
    assert conclusive == 0  # n 2/2, under the pipeline's compare.min_boots of 5: never a verdict
    summary = (out / "summary.md").read_text()
    assert "## Setups compared on maaxboard-twin: ratio to bare" in summary and "## Experiment" in summary


def test_compare_of_the_pipelines_own_5_boots_a_side_gives_intervals_and_conclusive_ratios(tmp_path):
    """The recorded run of pipelines/vm-vs-bare.yaml as it is: what the twin test above would give with the
    file's 5 boots a side."""
    info = json.loads((RECORDED / "run.json").read_text())
    assert info["experiment"]["boots"] == {"bare": PIPELINE_BOOTS, "kvm-guest": PIPELINE_BOOTS}
    # interleaved, as the file asks: bare, kvm-guest, bare, ... and the boots ran in that order
    plan = [f"maaxboard-twin/{s}/{b}" for b in range(PIPELINE_BOOTS) for s in ("bare", "kvm-guest")]
    assert info["experiment"]["order"] == "interleaved" and info["experiment"]["plan"] == plan
    assert [b["label"] for b in info["targets"]["maaxboard-twin"]["boots"]] == plan
    records = read_records(RECORDED / "results.csv")
    for setup in ("bare", "kvm-guest"):  # one value of each benchmark per boot, tagged with its boot
        assert {r.repeat for r in records if r.setup == setup} == set(range(PIPELINE_BOOTS))
    assert info["experiment"]["compare"]["min_boots"] == PIPELINE_BOOTS
    text = (ROOT / "pipelines" / "vm-vs-bare.yaml").read_text()
    assert info["pipeline_name"] == "vm-vs-bare" and f"boots: {PIPELINE_BOOTS}" in text
    conclusive = _compare_every_shared_benchmark(RECORDED, tmp_path / "cmp", PIPELINE_BOOTS)
    assert conclusive > 0  # the sweep's RTTs under KVM (measured: every run of 5 boots a side)


def _compare_every_shared_benchmark(out: Path, cmp: Path, boots: int) -> int:
    """`farm compare RUN_DIR`: every shared benchmark's ratio has n = ``boots`` a side and, where its values
    allow a log ratio, an interval around its estimate; each is conclusive (the number, its interval clear
    of 1.0) or marked inconclusive, never a bare number. Returns how many are conclusive."""
    compared = run_farm("compare", str(out), "--out", str(cmp))
    assert compared.returncode == 0, compared.stderr
    with open(cmp / "compare.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["benchmark"] for r in rows} >= {"sweep", "openssl-speed", "isal"}
    shared = [r for r in rows if r["bare_n"] not in ("", "0") and r["kvm-guest_n"] not in ("", "0")]
    no_interval = 0
    for benchmark in ("sweep", "openssl-speed", "isal"):
        mine = [r for r in shared if r["benchmark"] == benchmark]
        assert mine, benchmark
        for r in mine:
            # a count that was 0 on a side (late packets, timed-out windows) has no ratio at all
            if r["unit"] == "count" and 0 in (float(r["bare"]), float(r["kvm-guest"])):
                assert r["ratio"] == r["ratio_verdict"] == "", r
                continue
            assert int(r["bare_n"]) == boots and int(r["kvm-guest_n"]) == boots, r
            if r["ratio_ci_low"] == "":  # too few boots for a 95 % interval, or a value of 0 or below: no log ratio
                assert r["ratio"] == r["ratio_verdict"] == "inconclusive" and r["ratio_ci_high"] == "", r
                no_interval += 1
                continue
            estimate, low, high = (float(r[f"ratio_{x}"]) for x in ("estimate", "ci_low", "ci_high"))
            assert 0 < low <= estimate <= high, r  # positive values: the ratio has its interval
            if r["ratio_verdict"] == "inconclusive":
                assert r["ratio"] == "inconclusive", r  # never a bare number
            else:  # conclusive: the number, and an interval that leaves 1.0 out (the rule's threshold is 0)
                assert r["ratio_verdict"] in ("higher", "lower", "same") and float(r["ratio"]) == estimate, r
                assert r["ratio_verdict"] == "same" or not low <= 1.0 <= high, r
    verdicts = [r["ratio_verdict"] for r in shared if r["ratio_verdict"]]
    conclusive = sum(v != "inconclusive" for v in verdicts)
    print(f"vm-vs-bare, {boots} boots a side: {conclusive} of {len(verdicts)} ratios conclusive")
    md = (cmp / "compare.md").read_text()
    if no_interval:  # the table says why such a cell has no interval
        why = "a value of 0 or below: no log ratio" if boots >= PIPELINE_BOOTS else f"fewer than {PIPELINE_BOOTS} boots"
        assert why in md
    assert "kvm-guest" in md and f"n {boots}/{boots}" in md and f"{conclusive} of {len(verdicts)}" in md
    assert (cmp / "compare.png").stat().st_size > 0
    return conclusive


def test_cpu_is_like_for_like_the_boards_through_the_guests_host_channel(vm_run, tmp_path):
    """Issue 25: the guest setup's sweep records the board's CPU (its host's 4 cores, read through the host's
    CPU channel at the window's edges) beside its vCPUs'; bare's are the board's; compare joins board with
    board and keeps the vCPUs' apart ("only in kvm-guest"); the guest's wide CPU_Utilisation is the board's."""
    from farm.measure.params import parse_params

    proc, out = vm_run
    records = [r for r in read_records(out / "results.csv") if r.metric == "cpu_utilisation"]
    scopes = {(r.setup, parse_params(r.params)["cores"]) for r in records}
    assert scopes == {("bare", "board"), ("kvm-guest", "board"), ("kvm-guest", "vcpus")}
    for setup, scope in scopes:  # every point of every boot, in 0-100 %
        mine = [r for r in records if r.setup == setup and parse_params(r.params)["cores"] == scope]
        assert len(mine) == 2 * BOOTS and all(0.0 <= r.value <= 100.0 for r in mine), mine
        assert all(parse_params(r.params)["cpu"] == "proc-stat" for r in mine)
    info = json.loads((out / "run.json").read_text())
    guest = next(b for b in info["targets"]["maaxboard-twin"]["boots"] if b["setup"] == "kvm-guest")
    channels = guest["topology"]["cpu_channels"]
    assert channels["board"]["port"] == 1238 and channels["board"]["reads"] == "grep ^cpu /proc/stat"
    assert channels["board"]["address"] == guest["topology"]["host"]["address"]
    assert guest["topology"]["host"]["cpus"] == 4 and channels["vcpus"]["port"] == 1239
    compared = run_farm("compare", str(out), "--out", str(tmp_path / "cmp"))
    assert compared.returncode == 0, compared.stderr
    with open(tmp_path / "cmp" / "compare.csv", newline="") as f:
        cpu = [r for r in csv.DictReader(f) if r["metric"] == "cpu_utilisation"]
    board = [r for r in cpu if "cores=board" in r["params"]]
    vcpus = [r for r in cpu if "cores=vcpus" in r["params"]]
    assert len(board) == 2 and all(int(r["bare_n"]) == BOOTS == int(r["kvm-guest_n"]) for r in board), board
    assert len(vcpus) == 2 and all(r["bare_n"] in ("", "0") and r["ratio_estimate"] == "" for r in vcpus), vcpus
    with open(out / "sweep-maaxboard-twin-kvm-guest.csv", newline="") as f:
        wide = list(csv.DictReader(f))
    assert len(wide) == 2 and all(r["CPU_Utilisation"] and r["Guest_CPU_Utilisation"] for r in wide), wide
    for row in wide:  # the board's figure, the median of its boots (repeats folded as every wide row's)
        board_values = [r.value for r in records if r.setup == "kvm-guest" and "cores=board" in r.params
                        and float(parse_params(r.params)["requested"]) == float(row["Requested_Throughput"])]
        assert float(row["CPU_Utilisation"]) == pytest.approx(statistics.median(board_values)), (row, board_values)
    print("kvm-guest, board vs vCPUs per load:",
          [(r["Requested_Throughput"], r["CPU_Utilisation"], r["Guest_CPU_Utilisation"]) for r in wide])


def test_interrupt_while_the_guest_boots_powers_off_and_keeps_the_results(tftp_root, tmp_path):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"""name: vm-interrupt
image: {ROOT / 'images' / 'maaxboard-bench.yaml'}
targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard-el2.yaml'}}}]
setups: [{{name: bare}}, {{name: kvm-guest, guest: {{vcpus: 1, pin: [1]}}}}]
benchmarks: [{{openssl-speed: {{algorithms: [sha256], seconds: 1}}}}]
""")
    out = tmp_path / "run"
    farm = subprocess.Popen([sys.executable, "-m", "farm.cli", "run", str(pipeline), "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = out / "console" / "maaxboard-twin.log"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # the guest's QEMU typed on the host's console, not yet ready
        text = log.read_text(errors="replace") if log.exists() else ""
        if "qemu-system-aarch64 -M virt" in text:
            break
        assert farm.poll() is None, farm.communicate()
        time.sleep(0.1)
    else:
        pytest.fail("the guest was never started")
    farm.send_signal(signal.SIGTERM)
    _, stderr = farm.communicate(timeout=120)
    assert farm.returncode == 143, stderr
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "interrupted" and info["stopped_at"] == "boot maaxboard-twin/kvm-guest"
    assert {r.setup for r in read_records(out / "results.csv")} == {"bare"}  # measured before: kept
    left = subprocess.run(["pgrep", "-f", f"tftp={tftp_root}"], capture_output=True, text=True).stdout.split()
    assert not [p for p in left if _is_qemu(int(p))], "the twin is still powered on"


def _is_qemu(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"qemu-system-aarch64")
    except OSError:
        return False
