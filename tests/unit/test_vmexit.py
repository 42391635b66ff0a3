"""farm.measure.vmexit against real kvm-unit-tests x86/vmexit consoles (tests/data/vmexit-x86.txt)
and the example output published in kvm-unit-tests commit 00bfecaa."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from farm.errors import ParseError
from farm.measure import ImpossibleValue
from farm.measure.vmexit import parse_vmexit, read_vmexit

DATA = Path(__file__).resolve().parent.parent / "data"
CONSOLE = (DATA / "vmexit-x86.txt").read_text()
# The "Example:" of kvm-unit-tests commit 00bfecaa ("vmexit: time the number of cycles for
# simple PIO", Paolo Bonzini, 2012), indented by 4 in the commit message.
COMMIT_00BFECAA = """\
    vmcall 3898
    inl_from_pmtimer 24615
    inl_from_qemu 20574
    inl_from_kernel 7237
    outl_to_kernel 4451
"""


def by_key(ms):
    return {(m.params["test"], m.params.get("part")): m.value for m in ms}


def test_console_every_test_and_part():
    out = read_vmexit(CONSOLE)
    assert len(out.measurements) == 41
    assert {(m.benchmark, m.metric, m.unit) for m in out.measurements} == {("vmexit", "cycles", "cycles")}
    values = by_key(out.measurements)
    assert values["cpuid", None] == 70591.0
    assert values["inl_from_qemu", None] == 155915.0
    assert values["inl_from_kernel", None] == 49444.0
    assert values["wr_tsc_adjust_msr", None] == 28692.0
    # sub-lines of the IPI tests
    assert values["ipi", None] == 515425.0
    assert values["ipi", "ipi"] == 462637.0
    assert ("ipi", "eoi") not in values  # not printed: tsc_eoi was 0
    assert values["x2apic_self_ipi_sti_nop", "ipi"] == 15347.0
    assert values["x2apic_self_ipi_sti_nop", "eoi"] == 418.0
    # the pci-testdev cases carry their name before the test's
    assert values["mmio-no-eventfd:pci-mem", None] == 41735.0
    assert values["portio-datamatch-eventfd:pci-io", None] == 21342.0


def test_params_are_test_and_part():
    ms = parse_vmexit(CONSOLE, params={"host": "epyc", "test": "overridden"})
    assert ms[0].params == {"host": "epyc", "test": "cpuid"}
    sub = next(m for m in ms if m.params.get("part") == "eoi")
    assert sub.params == {"host": "epyc", "test": "self_ipi_sti_nop", "part": "eoi"}


def test_skipped_tests_are_listed_not_measured():
    out = read_vmexit(CONSOLE)
    assert out.skipped == ["tscdeadline_immed", "tscdeadline", "wr_tsx_ctrl_msr", "wr_ibrs_msr",
                           "wr_ibpb_msr"]
    measured = {m.params["test"] for m in out.measurements}
    assert not measured & set(out.skipped)


def test_stray_interrupt_counts_before_a_result_are_a_warning():
    # self_ipi_tpr printed ~2000 "0"/"1" (x != 1) before "self_ipi_tpr 1054074", no newline
    out = read_vmexit(CONSOLE)
    assert by_key(out.measurements)["self_ipi_tpr", None] == 1054074.0
    assert len(out.warnings) == 3
    assert out.warnings[1].startswith("vmexit output line 136: self_ipi_tpr: 1982 digits before the result")


def test_negative_value_is_refused_naming_the_line():
    # an overflowed TSC delta is not a cost: a median or a gate must never count it
    with pytest.raises(ImpossibleValue, match=r"vmexit output line 2: 'vmcall -12': negative cycles"):
        read_vmexit("cpuid 3374\nvmcall -12\n")


def test_harness_noise_is_ignored():
    noise = ("enabling apic\nsmp: waiting for 1 APs\nsetup: CPU 1 online\npaging enabled\n"
             "cr0 = 80010011\nPM timer port is 608\npci-testdev at 0x10 membar febff000 iobar c000\n"
             "i [bit 0]\nqemu-system-x86_64: terminating on signal 15 from pid 23132 (timeout)\n")
    assert read_vmexit(noise) == read_vmexit("")
    assert read_vmexit("").measurements == []


def test_published_example():
    ms = parse_vmexit(textwrap.dedent(COMMIT_00BFECAA))
    assert [(m.params["test"], m.value) for m in ms] == [
        ("vmcall", 3898.0), ("inl_from_pmtimer", 24615.0), ("inl_from_qemu", 20574.0),
        ("inl_from_kernel", 7237.0), ("outl_to_kernel", 4451.0)]
    # the cost of a userspace exit, as the commit message works it out: ~13000 cycles
    values = by_key(ms)
    assert values["inl_from_qemu", None] - values["inl_from_kernel", None] == 13337.0


def test_malformed_sub_line_names_the_line():
    with pytest.raises(ParseError, match=r"vmexit output line 3: cannot parse 'ipi ipi lots'"):
        read_vmexit("enabling apic\nipi 515425\n  ipi ipi lots\n")


def test_sub_line_of_another_test_is_refused():
    with pytest.raises(ParseError, match=r"line 2: .*ipi part of 'ipi', but the line above"):
        read_vmexit("cpuid 3374\n  ipi ipi 462637\n")
    with pytest.raises(ParseError, match=r"line 3: "):
        read_vmexit("ipi 515425\nenabling apic\n  ipi ipi 462637\n")


def test_duplicates_name_both_lines():
    with pytest.raises(ParseError, match="line 4: cpuid already measured on line 1"):
        read_vmexit("cpuid 3374\nvmcall 3898\nenabling apic\ncpuid 3380\n")
    with pytest.raises(ParseError, match="line 3: ipi ipi already measured on line 2"):
        read_vmexit("ipi 515425\n  ipi ipi 462637\n  ipi ipi 462637\n")
