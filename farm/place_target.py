"""A labgrid Target for a locked place without an env file: to power a board off, or open its console.

The resources come from the coordinator exactly as for ``env/maaxboard.yaml`` (a ``RemotePlace``),
so this works for any board the lab exports, like ``labgrid-client power`` and ``console`` do.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Iterator

from labgrid import Target
from labgrid.driver import NetworkPowerDriver, PDUDaemonDriver, SerialDriver
from labgrid.resource import NetworkPowerPort, NetworkSerialPort, PDUDaemonPort
from labgrid.resource.remote import RemotePlace, RemotePlaceManager

from . import lglazy
from .errors import InfrastructureError

lglazy.load_everything()  # the place's resources come by the class names the coordinator gives

#: power resources a lab exports, and the labgrid driver for each
POWER_DRIVERS = ((PDUDaemonPort, PDUDaemonDriver), (NetworkPowerPort, NetworkPowerDriver))
#: seconds to wait for labgrid's RemotePlaceManager to catch up with the coordinator
SYNC_TIMEOUT = 10.0


def refresh_remote_places() -> None:
    """Bring labgrid's RemotePlaceManager (one per process) up to date with the coordinator.

    It reads who holds a place from its own connection's cache; after this process locked a place
    that cache must have seen the lock before an env file's ``RemotePlace`` is resolved.

    labgrid connects it once per process and never again: once its stream broke (the coordinator
    restarted, or went away) a sync on it waits forever. Such a session is dropped here, so the next
    ``RemotePlace`` connects anew; a sync on a live one waits at most ``SYNC_TIMEOUT`` seconds.
    """
    manager = RemotePlaceManager.get()
    if manager.session is not None and manager.loop is not None and not manager.loop.is_running():
        if not manager.session.stopping.is_set():
            with contextlib.suppress(Exception):
                manager.loop.run_until_complete(
                    asyncio.wait_for(manager.session.sync_with_coordinator(), SYNC_TIMEOUT))
        if manager.session.stopping.is_set():  # broken before, or during that sync
            dead, manager.session = manager.session, None
            with contextlib.suppress(Exception):
                manager.loop.run_until_complete(asyncio.wait_for(dead.close(), 5))


@contextlib.contextmanager
def place_target(place: str, coordinator: str) -> Iterator[Target]:
    """A Target with the place's resources; the place must be locked by this user on this host."""
    os.environ["LG_COORDINATOR"] = coordinator  # where RemotePlaceManager connects
    refresh_remote_places()
    target = Target(place)
    try:
        try:
            RemotePlace(target, name=place)
        except Exception as exc:  # labgrid's client raises its own UserError/ServerError classes
            raise InfrastructureError(f"{place}: cannot get its resources from {coordinator}: {exc}") from None
        yield target
    finally:
        with contextlib.suppress(Exception):
            target.cleanup()


def power_off(place: str, coordinator: str) -> str:
    """Switch the board of ``place`` off through its exported power resource; says what it did."""
    with place_target(place, coordinator) as target:
        for resource_cls, driver_cls in POWER_DRIVERS:
            if any(isinstance(r, resource_cls) for r in target.resources):
                driver = driver_cls(target, name=None)
                target.activate(driver)
                driver.off()
                return f"powered off through {resource_cls.__name__}"
    return "no power resource exported: left as it is"


def serial_console(target: Target) -> SerialDriver:
    if not any(isinstance(r, NetworkSerialPort) for r in target.resources):
        raise InfrastructureError(f"{target.name}: the place exports no NetworkSerialPort")
    driver = SerialDriver(target, name=None)
    target.activate(driver)
    return driver
