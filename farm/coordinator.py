"""One connection to the labgrid coordinator: farm's thin, typed layer over labgrid's own client.

farm drives the coordinator with labgrid's python client (``labgrid.remote.client.ClientSession``),
not by running ``labgrid-client``: one gRPC connection serves a whole operation (a reservation
polled for minutes, a janitor pass over every place), answers are labgrid's ``Place`` and
``Reservation`` objects rather than text to parse, failures are gRPC status codes, and nothing
pays a second interpreter start per call. The lock owner is labgrid's usual ``host/user``
(``LG_HOSTNAME``/``LG_USERNAME``), so locks taken here and by ``labgrid-client`` are the same thing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from typing import Any, Awaitable

import grpc
from labgrid.remote.client import ClientSession, ensure_event_loop
from labgrid.remote.common import Place, Reservation, ResourceEntry, TAG_KEY
from labgrid.remote.generated import labgrid_coordinator_pb2 as pb2
from labgrid.util.proxy import proxymanager

from . import lglazy, signals
from .errors import InfrastructureError, JobError
from .lgcompat import own_connection

lglazy.load_everything()  # labgrid's client makes drivers and resources by the class names the coordinator gives

DEFAULT_COORDINATOR = "127.0.0.1:20408"
RPC_TIMEOUT = 20.0
#: how many stale ``loop.stop()`` calls one call runs past (one is all an interrupt leaves)
STALE_STOPS = 3
#: how often a waiting call looks for an interrupt Python lost (seconds)
LOST_INTERRUPT_CHECK = 0.25
#: labgrid 26's coordinator waits this long for an exporter's answer on each resource it locks or
#: releases, one resource after another (ExporterCommand.wait), holding its own lock meanwhile
EXPORTER_ANSWER_TIMEOUT = 10.0
_TAG_VALUE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


def coordinator_address(explicit: str | None = None) -> str:
    """``explicit``, else ``$LG_COORDINATOR``, else labgrid's default."""
    return explicit or os.environ.get("LG_COORDINATOR") or DEFAULT_COORDINATOR


def parse_tags(items: list[str]) -> dict[str, str]:
    """``["board=maaxboard", "arch=aarch64"]`` -> a dict; a bad pair is a one-line job error."""
    tags: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not TAG_KEY.fullmatch(key) or not _TAG_VALUE.match(value):
            raise JobError(f"tag {item!r}: expected KEY=VALUE with KEY like 'board' ([a-z][a-z0-9_]+) and "
                           f"VALUE like 'maaxboard' ([a-z0-9][a-z0-9_.-]*)")
        tags[key] = value
    return tags


class NoAnswer(InfrastructureError):
    """The coordinator did not answer a call in time: the call may have taken effect, or not."""


class CoordinatorLost(InfrastructureError):
    """The connection to the coordinator broke under a call (it restarted or went away, or the network
    between did): the call failed to reach it, or was cut off (labgrid's gRPC UNAVAILABLE, CANCELLED)."""


class CoordinatorUnreachable(InfrastructureError):
    """No connection to the coordinator could be made (nothing listens there, or nothing answers)."""

    def __init__(self, address: str, reason: str) -> None:
        super().__init__(f"cannot reach the labgrid coordinator at {address} ({reason}); set LG_COORDINATOR "
                         "or --coordinator (a virtual lab: farm lab up)")
        self.address, self.reason = address, reason


class _Session(ClientSession):
    """labgrid's ClientSession that says when a place changed (to wait without busy polling), on a
    connection of its own.

    gRPC shares one TCP connection between channels to the same address; the coordinator tells its
    clients apart by that connection (``context.peer()``) and refuses a second stream on it. labgrid's
    RemotePlaceManager (env files with a RemotePlace) opens its own session in the same process, so
    ours must not share: a local subchannel pool gives this channel a connection of its own.
    """

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        own_connection(self)
        self.place_changed = asyncio.Event()

    async def on_place_changed(self, place_pb2):
        await super().on_place_changed(place_pb2)
        self.place_changed.set()

    async def on_place_deleted(self, name):
        await super().on_place_deleted(name)
        self.place_changed.set()


class Coordinator:
    """A connected client. Every call waits at most ``RPC_TIMEOUT`` seconds (a lock or release: longer,
    see :meth:`_exporter_bound`) and fails in one line."""

    def __init__(self, address: str | None = None, *, connect_timeout: float = 15.0):
        self.address = coordinator_address(address)
        self.loop = ensure_event_loop()
        target = proxymanager.get_grpc_address(self.address, default_port=20408)
        self.session = _Session(target, self.loop)
        self.owner = f"{self.session.gethostname()}/{self.session.getuser()}"
        quiet = _QuietGrpcErrors()
        logging.getLogger().addFilter(quiet)  # labgrid logs an unreachable coordinator; we say it ourselves
        try:
            self._complete(asyncio.wait_for(self.session.start(), connect_timeout))
        except Exception as exc:  # labgrid's ServerError, or our timeout
            self._close_quietly()
            raise CoordinatorUnreachable(self.address, _reason(exc)) from None
        finally:
            logging.getLogger().removeFilter(quiet)

    # --- plumbing ---

    def run(self, awaitable: Awaitable[Any], what: str, timeout: float = RPC_TIMEOUT) -> Any:
        """Run one coordinator call; gRPC failures become farm errors naming ``what``."""
        try:
            return self._complete(asyncio.wait_for(awaitable, timeout))
        except grpc.aio.AioRpcError as exc:
            kind = JobError if exc.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND) \
                else CoordinatorLost if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED) \
                else InfrastructureError
            raise kind(f"{what}: {exc.details() or exc.code().name}") from None
        except asyncio.TimeoutError:
            raise NoAnswer(f"{what}: the coordinator at {self.address} did not answer within "
                           f"{timeout:.0f} s") from None

    def _complete(self, awaitable: Awaitable[Any]) -> Any:
        """``loop.run_until_complete``, safe after a Ctrl-C.

        A call that Ctrl-C (or farm's SIGTERM) interrupts leaves its task pending and, when its future
        had just completed, asyncio's ``loop.stop()`` queued: the next call (the clean-up's cancel or
        release) would end at once with "Event loop stopped before Future completed" and the place or
        reservation stay behind. So the interrupted task is cancelled, and a run ended by such a stale
        stop runs on.

        A Ctrl-C (or SIGTERM) that Python lost (:func:`farm.signals.raise_if_lost`) is raised again from
        inside the loop within :data:`LOST_INTERRUPT_CHECK` s: lost in one of gRPC's callbacks, it leaves
        that call never completing, and even the call's timeout then waits on it for good."""
        since = signals.arrivals()
        task = asyncio.ensure_future(awaitable, loop=self.loop)
        watcher = None

        def watch() -> None:
            nonlocal watcher
            signals.raise_if_lost(since)  # a KeyboardInterrupt in a callback leaves run_until_complete
            watcher = self.loop.call_later(LOST_INTERRUPT_CHECK, watch)

        try:
            watch()
            for _ in range(STALE_STOPS + 1):
                try:
                    result = self.loop.run_until_complete(task)
                    signals.raise_if_lost(since)
                    return result
                except RuntimeError:
                    if task.done():  # the call's own RuntimeError
                        raise
            raise InfrastructureError("the coordinator client's event loop keeps stopping")
        except BaseException:
            task.cancel()
            raise
        finally:
            if watcher is not None:
                watcher.cancel()

    def sync(self) -> None:
        """Wait until every update the coordinator sent so far is applied to ``places``/``resources``.

        Once the update stream broke (the coordinator restarted or went away) the session is dead for
        good: labgrid would wait forever on a sync, so this fails at once instead.
        """
        if self.session.stopping.is_set() or \
                not self.run(self.session.sync_with_coordinator(), "sync with the coordinator"):
            raise CoordinatorLost(f"lost the connection to the coordinator at {self.address}")

    def connected(self, timeout: float = 5.0) -> bool:
        """Whether the update stream still works (a sync answered within ``timeout`` s)."""
        if self.session.stopping.is_set():
            return False
        try:
            return bool(self.run(self.session.sync_with_coordinator(), "sync with the coordinator", timeout))
        except InfrastructureError:
            return False

    def wait_for_change(self, timeout: float) -> None:
        """Return when a place changed since the last return (or after ``timeout`` s), processing updates.

        A change that arrived while the caller was busy (say, during an RPC) counts: it ends the next
        wait at once instead of being lost.
        """
        event = self.session.place_changed

        async def wait():
            try:
                await asyncio.wait_for(event.wait(), timeout)
            except asyncio.TimeoutError:
                pass

        self._complete(wait())
        event.clear()

    def close(self) -> None:
        self._close_quietly()

    def _close_quietly(self) -> None:
        try:
            self._complete(asyncio.wait_for(self.session.stop(), 5))
            self._complete(asyncio.wait_for(self.session.close(), 5))
        except Exception:  # closing a connection that never opened, or one the coordinator dropped
            pass

    def __enter__(self) -> "Coordinator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- what the coordinator knows ---

    def places(self) -> dict[str, Place]:
        return dict(self.session.places)

    def place(self, name: str) -> Place:
        places = self.session.places
        if name not in places:
            known = ", ".join(sorted(places)) or "none"
            raise JobError(f"no place '{name}' on the coordinator at {self.address} (places: {known})")
        return places[name]

    def resources(self) -> dict[str, dict[str, dict[str, ResourceEntry]]]:
        """exporter -> group -> resource name -> entry."""
        return self.session.resources

    def reservations(self) -> list[Reservation]:
        response = self.run(self.session.stub.GetReservations(pb2.GetReservationsRequest()), "list reservations")
        return [Reservation.from_pb2(r) for r in response.reservations]

    # --- changing it ---

    def add_place(self, name: str) -> None:
        self.run(self.session.stub.AddPlace(pb2.AddPlaceRequest(name=name)), f"add place {name}")
        self.sync()

    def add_match(self, name: str, pattern: str) -> None:
        self.run(self.session.stub.AddPlaceMatch(pb2.AddPlaceMatchRequest(placename=name, pattern=pattern)),
                 f"add match {pattern} to {name}")
        self.sync()

    def set_tags(self, name: str, tags: dict[str, str]) -> None:
        """Set tags of ``name``; an empty value deletes that tag."""
        self.run(self.session.stub.SetPlaceTags(pb2.SetPlaceTagsRequest(placename=name, tags=tags)),
                 f"set tags of {name}")
        self.sync()

    def set_comment(self, name: str, comment: str) -> None:
        self.run(self.session.stub.SetPlaceComment(pb2.SetPlaceCommentRequest(placename=name, comment=comment)),
                 f"set the comment of {name}")
        self.sync()

    def create_reservation(self, tags: dict[str, str], prio: float = 0.0) -> Reservation:
        request = pb2.CreateReservationRequest(filters={"main": pb2.Reservation.Filter(filter=tags)}, prio=prio)
        response = self.run(self.session.stub.CreateReservation(request), "reserve " + format_tags(tags))
        return Reservation.from_pb2(response.reservation)

    def poll_reservation(self, token: str) -> Reservation:
        """The reservation's state; polling also keeps it from expiring (labgrid drops it 60 s after the last poll)."""
        response = self.run(self.session.stub.PollReservation(pb2.PollReservationRequest(token=token)),
                            f"poll reservation {token}")
        return Reservation.from_pb2(response.reservation)

    def cancel_reservation(self, token: str) -> bool:
        """Cancel; False if the coordinator no longer knows the token (expired or already cancelled)."""
        try:
            self.run(self.session.stub.CancelReservation(pb2.CancelReservationRequest(token=token)),
                     f"cancel reservation {token}")
        except InfrastructureError as exc:
            if "does not exist" in str(exc):
                return False
            raise
        self.sync()
        return True

    def acquire(self, name: str) -> None:
        self.run(self.session.stub.AcquirePlace(pb2.AcquirePlaceRequest(placename=name)), f"lock {name}",
                 self._exporter_bound(name))
        self.sync()

    def release(self, name: str, *, only_from: str) -> None:
        """Release ``name`` if (and only if, checked by the coordinator itself) ``only_from`` holds it."""
        self.run(self.session.stub.ReleasePlace(pb2.ReleasePlaceRequest(placename=name, fromuser=only_from)),
                 f"release {name}", self._exporter_bound(name))
        self.sync()

    def _exporter_bound(self, name: str) -> float:
        """How long locking or releasing ``name`` may take when an exporter does not answer (stopped,
        hung): up to EXPORTER_ANSWER_TIMEOUT per resource of the place. Given up earlier, the call is
        cancelled half-way, and labgrid 26 does not undo that: a lock stays taken, or a release undone."""
        place = self.session.places.get(name)
        if place is None:
            return RPC_TIMEOUT
        matched = sum(1 for exporter, groups in self.session.resources.items()
                      for group, entries in groups.items() for resource, entry in entries.items()
                      if "cls" in entry.data and place.hasmatch((exporter, group, entry.cls, resource)))
        return RPC_TIMEOUT + EXPORTER_ANSWER_TIMEOUT * max(matched, len(place.acquired_resources))


def format_tags(tags: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(tags.items())) or "(any place)"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "no answer"
    text = str(exc).replace("Error: ", "")
    return text or type(exc).__name__


class _QuietGrpcErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "coordinator" not in record.getMessage()
