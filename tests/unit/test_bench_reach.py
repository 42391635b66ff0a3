"""BenchContext.reach: one forward per port for a whole boot (a second QEMU user-mode UDP forward to
the same guest port is never answered, so a second sweep in one boot got nothing back)."""

from __future__ import annotations

from farm.bench.context import BenchContext
from tests.fakes import booted_target


def _a_boot():
    return booted_target(target=type("Target", (), {})())  # each boot's labgrid target is its own


class _Facts:
    address = "10.0.2.15"


def test_every_benchmark_of_a_boot_reaches_a_port_through_one_forward(monkeypatch):
    calls = []

    def fake_reach(target, address, port, protos):
        calls.append((address, port, protos))
        return "127.0.0.1", 40000 + len(calls)

    monkeypatch.setattr("farm.boot.network.reach", fake_reach)
    booted = _a_boot()
    first = BenchContext(booted, _Facts()).reach(7, ("udp",))
    again = BenchContext(booted, _Facts()).reach(7, ("udp",))  # the next benchmark (or repeat) of the boot
    assert first == again == ("127.0.0.1", 40001) and len(calls) == 1
    assert BenchContext(booted, _Facts()).reach(5201, ("tcp", "udp")) == ("127.0.0.1", 40002)
    assert BenchContext(_a_boot(), _Facts()).reach(7, ("udp",)) == ("127.0.0.1", 40003)  # another boot: anew
