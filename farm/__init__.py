"""farm: a rack of embedded boards (and their QEMU twins) as a CI/CD and benchmarking service."""

import os

__version__ = "0.1.0"

# grpcio's fork support (on unless switched off) runs gRPC's at-fork handlers in every forked child. While
# a labgrid session's update stream is live in this process (`farm run --farm`, the pytest plugin on a
# farm place), a child forked by pty.fork (pexpect, a console) then often dies of SIGSEGV before it
# execs: 89 of 200 pexpect spawns here. farm never uses gRPC in a forked child, so the support is off
# unless the user set the variable. Set before anything imports grpc: grpcio reads it on import.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
