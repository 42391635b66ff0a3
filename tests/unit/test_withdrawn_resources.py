"""A board whose exporter went away mid-boot: labgrid's KeyError, told as what happened (issue 31)."""

from __future__ import annotations

import pytest
from labgrid import Target
from labgrid.remote.common import ResourceEntry
from labgrid.resource import NetworkSerialPort

from farm.boot.session import withdrawn_resources


def remote_serial(target: Target) -> NetworkSerialPort:
    """A serial port as labgrid's RemotePlaceManager makes it from the coordinator's resource entry."""
    entry = ResourceEntry({"cls": "NetworkSerialPort", "params": {"host": "10.0.0.2", "port": 4001, "extra": {}},
                           "avail": True})
    port = NetworkSerialPort(target, "console", **entry.args)
    port._remote_entry = entry
    return port


def test_a_resource_the_coordinator_withdrew_is_named():
    target = Target("board-1")
    port = remote_serial(target)
    assert withdrawn_resources(target) == []
    port._remote_entry.data = {}  # what labgrid's client does on the coordinator's del_resource
    with pytest.raises(KeyError, match="params"):  # labgrid's RemotePlaceManager.poll reads it so
        port._remote_entry.args
    assert withdrawn_resources(target) == ["NetworkSerialPort console"]


def test_local_resources_are_never_withdrawn():
    target = Target("twin")
    NetworkSerialPort(target, None, host="127.0.0.1", port=4001)
    assert withdrawn_resources(target) == []
