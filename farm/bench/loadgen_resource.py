"""The labgrid resource of a load generator (:mod:`farm.bench.loadgen`): a ``NetworkService`` with
a key. An env file that names one loads this module: ``imports: [farm.bench.loadgen_resource]``."""

from __future__ import annotations

import attr
from labgrid.factory import target_factory
from labgrid.resource import NetworkService


@target_factory.reg_resource
@attr.s(eq=False)
class LoadGenerator(NetworkService):
    """A lab machine that sends a sweep's load, reached with ``ssh -p port username@address``.

    Args (beside NetworkService's ``address``, ``username``, ``port``):
        keyfile (str): the private key to log in with (``ssh -i``; relative to the env file); empty:
            ssh's own configuration and agent.
        known_hosts (str): a known_hosts file with the machine's host key (relative to the env
            file); empty: the user's. Host keys are always checked (``StrictHostKeyChecking=yes``).
    A password is not supported: farm's ssh runs in batch mode.
    """

    keyfile = attr.ib(default="", validator=attr.validators.instance_of(str))
    known_hosts = attr.ib(default="", validator=attr.validators.instance_of(str))
