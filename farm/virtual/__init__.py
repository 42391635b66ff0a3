"""The virtual lab: a whole farm on 127.0.0.1 made of the real components (``farm lab up``).

    labgrid-coordinator  <-  labgrid-exporter (one group per board: serial, power, TFTP, forwards)
    pdudaemon (localcmdline -> QMP)      sshd (how labgrid stages files on the exporter host)
    QEMU boards: started paused (-S), serial on a TCP socket that outlives power cycles

Modules: :mod:`.boards` (board models and their QEMU command), :mod:`.qmp` and :mod:`.power` (power
through QMP, the command pdudaemon runs), :mod:`.configs` (the config files, pure text),
:mod:`.sshd` (keys and the SSH host alias), :mod:`.processes` (detached processes, by pid and start
time), :mod:`.lab` (up, status, down).
"""
