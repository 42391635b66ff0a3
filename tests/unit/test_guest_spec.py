"""A setup's guest: every value checked when the pipeline file is read, the error naming file:line: field."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.config import load_yaml
from farm.errors import JobError
from farm.guest.spec import GuestSpec, RtPolicy, guest_of


def _guest(tmp_path: Path, body: str):
    (tmp_path / "guest.yaml").write_text("name: g\narch: arm64\n")
    path = tmp_path / "p.yaml"
    path.write_text("setups:\n  - name: bare\n  - name: kvm-guest\n    guest:\n" +
                    "".join(f"      {line}\n" for line in body.strip().splitlines()))
    doc = load_yaml(path)
    return guest_of(doc["setups"][1])


def test_defaults_are_the_labs_kvm_guest(tmp_path):
    spec = _guest(tmp_path, "vcpus: 1")
    assert spec == GuestSpec()
    assert spec.accel == "kvm" and spec.cpu == "host" and spec.memory_mb == 512 and spec.pin is None


def test_every_field_read(tmp_path):
    spec = _guest(tmp_path, """
image: guest.yaml
vcpus: 2
memory: 1G
accel: kvm
pin: [2, 3]
rt: {policy: fifo, priority: 50, cpus: [1]}
bootargs: [maxcpus=2]
ports: [8000]
boot_timeout: 60
extra_args: [-overcommit, mem-lock=on]
""")
    assert spec.image == tmp_path / "guest.yaml"
    assert (spec.vcpus, spec.memory_mb, spec.pin, spec.bootargs, spec.ports) == (2, 1024, (2, 3), ("maxcpus=2",), (8000,))
    assert spec.rt == RtPolicy("fifo", 50, (1,))
    assert spec.rt.prefix() == ["chrt", "-f", "50", "taskset", "-c", "1"]
    assert spec.boot_timeout == 60.0 and spec.extra_args == ("-overcommit", "mem-lock=on")
    assert spec.to_json()["pin"] == [2, 3]


def test_tcg_is_an_explicit_opt_in_with_a_cpu_model(tmp_path):
    spec = _guest(tmp_path, "accel: tcg")
    assert (spec.accel, spec.cpu) == ("tcg", "max")
    assert _guest(tmp_path, "memory: 256").memory_mb == 256


def test_no_guest_is_none(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("setups:\n  - name: bare\n")
    assert guest_of(load_yaml(path)["setups"][0]) is None


@pytest.mark.parametrize("body, line, field, words", [
    ("vcpus: 0", 5, "vcpus", "out of range"),
    ("vcpus: 65", 5, "vcpus", "out of range"),
    ("vcpus: two", 5, "vcpus", "whole number"),
    ("vcpus: true", 5, "vcpus", "whole number"),
    ("vcpus: 1.5", 5, "vcpus", "whole number"),
    ("memory: 32", 5, "memory", "out of range"),
    ("memory: 2T", 5, "memory", "512M"),
    ("memory: -1G", 5, "memory", "512M"),
    ("accel: hvf", 5, "accel", "'hvf': expected one of kvm, tcg (tcg: software emulation"),
    ("cpu: 'host; reboot'", 5, "cpu", "CPU model"),
    ("{accel: tcg, cpu: host}", 5, "cpu", "needs accel: kvm"),
    ("{vcpus: 2, pin: [1]}", 5, "pin", "one core per vCPU"),
    ("pin: [1, 1]", 5, "pin", "twice"),
    ("pin: []", 5, "pin", "empty"),
    ("pin: [-1]", 5, "pin", "host CPU"),
    ("pin: [a]", 5, "pin", "host CPU"),
    ("pin: 1", 5, "pin", "a list"),
    ("rt: {policy: other, priority: 5}", 5, "rt.policy", "expected one of rr, fifo (chrt -r / -f)"),
    ("rt: {priority: 5}", 5, "rt", "rt.policy"),
    ("rt: {policy: rr, priority: 0}", 5, "rt.priority", "out of range"),
    ("rt: {policy: rr, priority: 100}", 5, "rt.priority", "out of range"),
    ("rt: {policy: rr}", 5, "rt", "rt.priority"),
    ("rt: {policy: rr, priority: 5, cpus: [x]}", 5, "rt.cpus", "host CPU"),
    ("rt: {policy: rr, priority: 5, nice: 1}", 5, "rt.nice", "unknown field"),
    ("bootargs: ['a b']", 5, "bootargs", "kernel argument"),
    ("bootargs: ['init=$(reboot)']", 5, "bootargs", "kernel argument"),
    ("ports: [0]", 5, "ports", "out of range"),
    ("ports: [70000]", 5, "ports", "out of range"),
    ("ports: [80, 80]", 5, "ports", "twice"),
    ("ports: [1238]", 5, "ports", "a CPU channel's (farm.guest.channel: the host's 1238, the guest's 1239)"),
    ("ports: [8000, 1239]", 5, "ports", "item 1: port 1239 is a CPU channel's"),
    ("boot_timeout: 0", 5, "boot_timeout", "out of range"),
    ("boot_timeout: .nan", 5, "boot_timeout", "number"),
    ("boot_timeout: 1.0e+9", 5, "boot_timeout", "out of range"),
    ("extra_args: ['-m 4G']", 5, "extra_args", "QEMU argument"),
    ("extra_args: ['x;reboot']", 5, "extra_args", "QEMU argument"),
    ("extra_args: [-enable-kvm]", 5, "extra_args", "itself"),
    ("extra_args: [3]", 5, "extra_args", "QEMU argument"),
    ("image: missing.yaml", 5, "image", "not found"),
    ("network: bridge", 5, "network", "expected one of user, tap (user: QEMU's user network, the default; tap: a bridge"),
    ("{network: tap, ports: [8000]}", 5, "ports", "forwards are for network: user"),
    ("netwrk: tap", 5, "netwrk", "unknown field"),
])
def test_bad_value_names_file_line_and_field(tmp_path, body, line, field, words):
    with pytest.raises(JobError) as info:
        _guest(tmp_path, body)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'p.yaml'}:{line}: setups[1].guest.{field}:"), message
    assert words in message, message


def test_a_guest_that_is_not_a_mapping_names_the_setup(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("setups:\n  - name: kvm-guest\n    guest: yes\n")
    with pytest.raises(JobError, match=rf"p.yaml:3: setups\[0\].guest: expected a mapping"):
        guest_of(load_yaml(path)["setups"][0])


# --- extra_args never contradict what run.json records (issue 31) ---------------------------------

@pytest.mark.parametrize("arg", ["--smp", "--m", "--machine", "--M", "--accel", "--enable-kvm", "--cpu",
                                 "-readconfig", "--readconfig", "-set", "--numa", "--kernel", "--append"])
def test_extra_args_cannot_set_what_farm_sets_in_either_spelling(tmp_path, arg):
    """QEMU reads ``--smp`` as ``-smp`` and takes the last of two: ``[--smp, '8']`` after farm's
    ``-smp 2`` would run 8 vCPUs under a run.json that says 2."""
    with pytest.raises(JobError) as info:
        _guest(tmp_path, f"vcpus: 2\nextra_args: ['{arg}', '8']")
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'p.yaml'}:6: setups[1].guest.extra_args: item 0 '{arg}'"), message
    assert "farm sets" in message and "itself" in message


def test_every_option_farm_gives_qemu_is_refused_in_extra_args(tmp_path):
    """Whatever qemu_command emits (both architectures), extra_args cannot give again, with one dash
    or two: a new option farm sets is refused without a list to keep in step by hand."""
    from farm.guest.command import qemu_command
    from farm.guest.spec import OWN_OPTIONS, qemu_option

    harmless = {"-no-reboot", "-vga"}  # given twice they change nothing run.json records
    emitted = set()
    for arch, accel in (("arm64", "kvm"), ("amd64", "tcg")):
        spec = GuestSpec(accel=accel, cpu="max" if accel == "tcg" else "host")
        emitted |= {a for a in qemu_command(spec, "k", "i", {5201: 5201}, arch=arch)[1:] if qemu_option(a)}
    assert {"-smp", "-m", "-M", "-cpu", "-enable-kvm", "-accel"} <= emitted
    for option in sorted(emitted - harmless):
        assert option in OWN_OPTIONS, option
        for spelling in (option, "-" + option):
            with pytest.raises(JobError, match="farm sets"):
                _guest(tmp_path, f"extra_args: ['{spelling}']")


def test_values_and_other_options_pass_as_they_are(tmp_path):
    spec = _guest(tmp_path, "extra_args: [-overcommit, mem-lock=on, --rtc, base=utc, '-1']")
    assert spec.extra_args == ("-overcommit", "mem-lock=on", "--rtc", "base=utc", "-1")
