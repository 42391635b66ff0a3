"""A process that holds a live coordinator session can still fork consoles (pexpect, pty.fork).

grpcio's fork support, on by default, made such children die of SIGSEGV before they exec'd (89 of 200
spawns with a session open; CI lost a boot to it). Importing farm switches the support off; this checks
it in a fresh interpreter whose environment does not set the variable, against the lab's real coordinator.
"""

from __future__ import annotations

import os
import subprocess
import sys

from ..conftest import ROOT

SPAWNS = 40

SCRIPT = r'''
import sys, pexpect
from farm.coordinator import Coordinator
with Coordinator(sys.argv[1]) as coordinator:
    coordinator.sync()  # the update stream is live from here on
    died = []
    for i in range(int(sys.argv[2])):
        child = pexpect.spawn(sys.executable, ["-c", "print('up', flush=True); input()"], timeout=20)
        try:
            child.expect("up")
        except pexpect.EOF:
            child.close()
            died.append(child.signalstatus or child.exitstatus)
        child.terminate(force=True)
print("died", died)
'''


def test_children_forked_beside_a_live_session_survive(virtual_lab):
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, virtual_lab.coordinator, str(SPAWNS)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "died []", proc.stdout + proc.stderr
