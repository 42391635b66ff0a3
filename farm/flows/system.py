"""The flow ``system``: a system image the lab brings (or one of farm's bare-metal programs), booted by
U-Boot as it is, with no shell afterwards (farm.boot.system does the booting).

    setups:
      - name: client-vm
        system:
          path: ../build/client-vm/loader.img   # a file, a directory with a system manifest.json, or a
                                                # recipe of farm's bare-metal programs (images/standin.yaml)
          boot: go                               # bootm | bootelf | go (default: the env file's system_boot,
          load_addr: 0x50000000                  #   else what the image offers first); a raw binary's address
          ready: 'ready to serve'                # the console line that says the system is up (a regex)
          address: 'client0 has address (?P<address>[0-9.]+)'   # where its services are (a regex, or an IPv4)
          fatal: ['halting', 'cap fault']        # lines that end the boot or a benchmark as a failure
          stats:                                 # console lines that become records (farm.measure.console)
            - pattern: '(?P<component>\\w+) utilisation (?P<utilisation>[0-9.]+)'
              units: {utilisation: percent}

Everything is checked when the pipeline file is read (:class:`SystemSettings`, read by farm.schema.read;
errors name file:line: field): the regexes
compile, the address pattern has its ``address`` group; the path is checked when the image is made
(the build stage, before any boot: farm reproduce boots the archived image, not the path). Without ``path``, the setup
boots the run's ``--image`` of a system image (``farm run --image loader.img``). The targets of this
flow have no shell, only a network and a console (``FlowType.gives``): a benchmark that needs a shell is
refused when the file is read.
"""

from __future__ import annotations

from typing import Any

from ..boot.system_settings import SystemSettings
from ..boot.target import ConsoleTarget, ServedTarget
from ..images.image import SYSTEM
from . import FlowType

NAME = "system"


def _make(settings: SystemSettings, setup: Any) -> Any:
    from ..boot.system import SystemFlow

    return SystemFlow(settings, setup)


def given_load_addr(settings: SystemSettings) -> int | None:
    """A setup without ``path`` boots the run's ``--image``: a raw binary of it loads at ``load_addr``."""
    return settings.load_addr if settings.path is None else None


SYSTEM_FLOW = FlowType(NAME, _make, key=NAME, settings=SystemSettings, describe=SystemSettings.describe,
                       gives=(ServedTarget, ConsoleTarget), image_kind=SYSTEM, given_load_addr=given_load_addr,
                       needs_settings=True)
