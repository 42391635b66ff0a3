"""The boot flows a setup can use, by name: the registry the runner makes each setup's flow from.

    setups:
      - name: bare                       # no flow settings: the default flow, netboot
      - name: kvm-guest
        guest: {vcpus: 1}                # the settings field of the flow "netboot+guest"
      - name: sel4
        system: {path: build/loader.img, ready: 'ready'}   # the flow "system": a system image, no shell
      - name: dpdk
        dpdk: {lcores: 0-1}              # the flow "dpdk": DPDK's echo on the netbooted Linux
      - name: bootelf
        flow: bootelf                    # a flow by name (a lab's, registered by its plugin)

A :class:`FlowType` says how a setup names the flow (its ``name``, or the field holding its settings),
how its settings are read and checked when the pipeline file is read (errors name file:line: field),
how run.json records them, what its targets give the benchmarks (farm.boot.target: a shell, a served
network, a system's console), and how the flow is made for a setup (farm.boot.flow.FlowSetup: the
CPU frequency to pin, the ports the benchmarks need). Flow types come from plugins (farm.plugins, the
hook ``farm_flows``): farm's are this module's (:func:`farm_flows`), a lab's come from its package by
entry point in the group ``farm``::

    [project.entry-points.farm]
    mylab = "mylab.farm_plugin"          # its farm_flows() returns [BOOTELF], a FlowType

so a new way of booting (a system image through ``bootm``/``bootelf``, a DPDK host) is a flow of its
own, and neither the runner nor the pipeline model changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import attrs

from .. import plugins
from ..boot.target import ServedTarget, ShellTarget
from ..config import Node
from ..hookspecs import hookimpl

if TYPE_CHECKING:  # the flows themselves (labgrid) load when a run makes one, not when a file is read
    from ..boot.flow import BootFlow, FlowSetup

DEFAULT = "netboot"


@attrs.frozen
class FlowType:
    #: the setup's ``flow:`` value, and what run.json's setups record as ``flow``
    name: str
    #: the flow of a setup: (its settings, what every flow is told) -> a boot flow
    make: Callable[[Any, "FlowSetup"], "BootFlow"]
    #: the setup field that holds its settings (``guest``); a setup with that field uses this flow
    key: str | None = None
    #: the settings from the setup's field (a Node of the pipeline file; Path: the file's directory)
    read: Callable[[Node, str, Path], Any] = attrs.field(default=lambda setup, key, base: None)
    #: the settings as run.json records them under the setup's ``key``
    describe: Callable[[Any], Any] = attrs.field(default=lambda settings: None)
    #: what its booted targets implement (farm.boot.target: a shell, a network the lab host reaches, a
    #: system image's console); a benchmark that needs more (``Params.requires``) is refused a setup of
    #: this flow when the pipeline file is read. farm's Linux flows give a shell and a network, the
    #: system flow a network and a console
    gives: tuple[type, ...] = (ShellTarget, ServedTarget)
    #: the kind of image it boots (farm.images.image: ``linux``, kernel + initrd, or ``system``): the
    #: run's ``--image`` of that kind is its
    image_kind: str = "linux"
    #: the load address a raw binary given as the run's ``--image FILE`` takes on a setup of this flow
    #: (its settings -> an address; None: the setup boots no such image, or names none)
    given_load_addr: Callable[[Any], int | None] = attrs.field(default=lambda settings: None)


@attrs.frozen
class SetupFlow:
    """A setup's flow: its type and settings (what the pipeline file gave it)."""

    type: FlowType = attrs.field(eq=False)
    settings: Any = None

    @property
    def name(self) -> str:
        return self.type.name

    def make(self, setup: "FlowSetup") -> "BootFlow":
        return self.type.make(self.settings, setup)

    def given_load_addr(self) -> int | None:
        """Where a raw ``--image FILE`` loads on this setup (:attr:`FlowType.given_load_addr`)."""
        return self.type.given_load_addr(self.settings)

    def describe(self) -> dict[str, Any]:
        """run.json's view: the flow's name, and every flow's settings field (None for the others')."""
        return {"flow": self.name, **{t.key: None for t in flow_types().values() if t.key},
                **({self.type.key: self.type.describe(self.settings)} if self.type.key else {})}


def _netboot(settings: None, setup: "FlowSetup") -> "BootFlow":
    from ..boot.flow import netboot

    return netboot(settings, setup)


def _guest(spec: Any, setup: "FlowSetup") -> "BootFlow":
    from ..guest.flow import guest_flow

    return guest_flow(spec, setup)


def _read_guest(setup: Node, key: str, base: Path) -> Any:
    from ..guest.spec import guest_of

    spec = guest_of(setup, base, key)
    if spec is None:
        raise setup.error(key, "the flow netboot+guest needs its guest's settings (e.g. guest: {vcpus: 1})")
    return spec


@hookimpl
def farm_flows() -> tuple[FlowType, ...]:
    """farm's flows (a builtin plugin, farm.plugins.BUILTIN): the env file's netboot (the default), a Linux
    guest under QEMU/KVM on it (docs/guest.md), a system image booted as it is (farm.flows.system,
    docs/system-images.md), and DPDK's echo on the netbooted Linux (farm.flows.dpdk, docs/dpdk.md)."""
    from .dpdk import DPDK_FLOW
    from .system import SYSTEM_FLOW

    return (FlowType(DEFAULT, _netboot),
            FlowType("netboot+guest", _guest, key="guest", read=_read_guest, describe=lambda spec: spec.to_json()),
            SYSTEM_FLOW, DPDK_FLOW)


def flow_types() -> Mapping[str, FlowType]:
    """Every flow type by name: farm's and the lab's plugins' (farm.plugins, found once per process)."""
    return plugins.flows()


def setup_flow(setup: Node, base: Path) -> SetupFlow:
    """The flow of a setup of a pipeline file (``setup``: its mapping, ``base``: the file's directory):
    named by ``flow:``, else by the settings field it has, else the default; its settings read and checked."""
    types = flow_types()
    keyed = [t for t in types.values() if t.key and setup.get(t.key) is not None]
    named = setup.get("flow")
    if named is not None:
        if named not in types:
            raise setup.error("flow", f"unknown flow {named!r} (known: {', '.join(sorted(types))})")
        chosen = types[named]
        other = [t for t in keyed if t is not chosen]
    else:
        chosen = keyed[0] if keyed else types[DEFAULT]
        other = keyed[1:]
    if other:
        raise setup.error(other[0].key, f"belongs to the flow {other[0].name}, but the setup's flow is {chosen.name}")
    return SetupFlow(chosen, chosen.read(setup, chosen.key, base) if chosen.key else None)


def setup_fields() -> set[str]:
    """The setup fields the flows read (besides ``flow``)."""
    return {"flow", *(t.key for t in flow_types().values() if t.key)}
