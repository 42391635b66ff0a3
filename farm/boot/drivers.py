"""Imported by env files (``imports: [farm.boot.drivers]``) to register farm's labgrid drivers and strategies."""

from .ipxe import IPXENetbootStrategy  # noqa: F401
from .qemu import TwinQEMUDriver  # noqa: F401
from .shell import FarmShellDriver  # noqa: F401
from .staging import JobTFTPProviderDriver  # noqa: F401
from .uboot import UBootNetbootStrategy  # noqa: F401
