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
the class of its settings (farm.schema: read and checked when the pipeline file is read, errors naming
file:line: field, and in ``farm schema pipeline``), how run.json records them, what its targets give the
benchmarks (farm.boot.target: a shell, a served network, a system's console), and how the flow is made
for a setup (farm.boot.flow.FlowSetup: the CPU frequency to pin, the ports the benchmarks need). Flow
types come from plugins (farm.plugins, the hook ``farm_flows``): farm's are this module's
(:func:`farm_flows`), a lab's come from its package by entry point in the group ``farm``::

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
    #: the class of its settings, a farm.schema class read from the setup's ``key`` (None: it has none)
    settings: type | None = None
    #: a setup of this flow must give its settings (else, named by ``flow:``, it has the class's defaults)
    needs_settings: bool = False
    #: the settings as run.json records them under the setup's ``key`` (default: their fields)
    describe: Callable[[Any], Any] = attrs.field(default=lambda settings: _fields(settings))
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
    #: what its settings ask of a setup of ``cpus`` cores (None: the env file's) that it cannot give:
    #: (its settings' field, the problem), or None; checked when the pipeline file is read
    cores_problem: Callable[[Any, int | None], tuple[str, str] | None] = attrs.field(
        default=lambda settings, cpus: None)


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


def _fields(settings: Any) -> Any:
    """A settings object as JSON: its fields (paths as text)."""
    if not attrs.has(type(settings)):
        return settings
    return attrs.asdict(settings, value_serializer=lambda obj, field, value: str(value) if isinstance(value, Path)
                        else list(value) if isinstance(value, tuple) else value)


def _netboot(settings: None, setup: "FlowSetup") -> "BootFlow":
    from ..boot.flow import netboot

    return netboot(settings, setup)


def _guest(spec: Any, setup: "FlowSetup") -> "BootFlow":
    from ..guest.flow import guest_flow

    return guest_flow(spec, setup)


@hookimpl
def farm_flows() -> tuple[FlowType, ...]:
    """farm's flows (a builtin plugin, farm.plugins.BUILTIN): the env file's netboot (the default), a Linux
    guest under QEMU/KVM on it (docs/guest.md), a system image booted as it is (farm.flows.system,
    docs/system-images.md), and DPDK's echo on the netbooted Linux (farm.flows.dpdk, docs/dpdk.md)."""
    from ..guest.spec import GuestSpec
    from .dpdk import DPDK_FLOW
    from .system import SYSTEM_FLOW

    return (FlowType(DEFAULT, _netboot),
            FlowType("netboot+guest", _guest, key="guest", settings=GuestSpec, needs_settings=True,
                     describe=GuestSpec.to_json),
            SYSTEM_FLOW, DPDK_FLOW)


def flow_types() -> Mapping[str, FlowType]:
    """Every flow type by name: farm's and the lab's plugins' (farm.plugins, found once per process)."""
    return plugins.flows()


def setup_flow(named: str | None, given: Mapping[str, Any]) -> SetupFlow:
    """The flow of a setup of a pipeline file: named by ``flow:`` (``named``), else by the settings field it
    gives (``given``: each flow's settings field -> its settings, read), else the default; a settings field of
    another flow is :class:`~farm.schema.Invalid`, naming it (farm.schema.read adds the file, line and setup)."""
    from ..schema import Invalid

    types = flow_types()
    keyed = [t for t in types.values() if t.key and given.get(t.key) is not None]
    if named is not None:
        if named not in types:
            raise Invalid(f"unknown flow {named!r} (known: {', '.join(sorted(types))})", key="flow")
        chosen = types[named]
        other = [t for t in keyed if t is not chosen]
    else:
        chosen = keyed[0] if keyed else types[DEFAULT]
        other = keyed[1:]
    if other:
        raise Invalid(f"belongs to the flow {other[0].name}, but the setup's flow is {chosen.name}", key=other[0].key)
    settings = given.get(chosen.key) if chosen.key else None
    if settings is None and chosen.settings is not None:
        if chosen.needs_settings:
            raise Invalid(f"the flow {chosen.name} needs its {chosen.key}'s settings (e.g. {chosen.key}: "
                          f"{getattr(chosen.settings, 'SHAPE', '{...}')})", key=chosen.key)
        settings = chosen.settings()
    return SetupFlow(chosen, settings)


def setup_fields() -> set[str]:
    """The setup fields the flows read (besides ``flow``)."""
    return {"flow", *(t.key for t in flow_types().values() if t.key)}
