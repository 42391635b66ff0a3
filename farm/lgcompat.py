"""The one place farm reaches into labgrid's private state or relies on its private shapes, each with a
test that fails when labgrid changes it (tests/unit/test_lgcompat.py): a console's unread input, the
client session's gRPC channel, and the lines labgrid's drivers type around a command. Everything else
goes through labgrid's public API or a subclass farm owns (FarmShellDriver, FarmUBootDriver, the netboot
strategies). On the ground floor (tests/unit/test_layering.py), as the coordinator's client (below
farm/boot), the boot and the dashboard all use it; labgrid and grpc are imported only when asked for.

One exception stands apart: farm/lglazy.py puts labgrid's driver, resource and strategy packages in
``sys.modules`` as lazy packages (docs/architecture.md says why it is no function here).
"""

from __future__ import annotations

import re


def drop_console_input(console) -> None:
    """Forget what a console driver read but no expect consumed yet (labgrid's ConsoleExpectMixin keeps
    it in its pexpect spawn, ``_expect``): after a failed boot attempt, a stale bootloader prompt there
    would be taken for the next attempt's. A console without the spawn has nothing kept.

    pexpect (4.8+) keeps unmatched input twice, in ``buffer`` and in ``_before``, and its next expect
    restores the first from the second: setting ``buffer`` alone (what farm did before) dropped nothing."""
    expect = getattr(console, "_expect", None)
    if expect is None:
        return
    expect.buffer = b""
    if hasattr(expect, "_before"):
        expect._before = expect.buffer_type()


def unread_console_input(console) -> bytes:
    """What a console driver read but no expect consumed yet (for an error's excerpt of the console)."""
    expect = getattr(console, "_expect", None)
    return bytes(getattr(expect, "buffer", b"") or b"") if expect is not None else b""


#: labgrid's ClientSession's gRPC channel options (its ``__attrs_post_init__``: keepalive), which a
#: session on a connection of its own keeps
SESSION_CHANNEL_OPTIONS = (("grpc.keepalive_time_ms", 7500), ("grpc.keepalive_timeout_ms", 10000),
                           ("grpc.http2.ping_timeout_ms", 10000), ("grpc.http2.max_pings_without_data", 0))


def own_connection(session) -> None:
    """Give a labgrid ``ClientSession``, made but not started, a gRPC connection of its own (a local
    subchannel pool): gRPC shares one TCP connection between the channels to one address, and the
    coordinator tells its clients apart by that connection and refuses a second stream on it
    (farm.coordinator's ``_Session`` says why farm has two). labgrid's ``__attrs_post_init__`` makes
    ``channel`` and ``stub``, and every call and the stream go through ``stub``: both are replaced here,
    labgrid's channel (never used, nor connected) closed."""
    import grpc
    from labgrid.remote.generated import labgrid_coordinator_pb2_grpc

    session.loop.create_task(session.channel.close())
    session.channel = grpc.aio.insecure_channel(
        target=session.address, options=[("grpc.use_local_subchannel_pool", 1), *SESSION_CHANNEL_OPTIONS])
    session.stub = labgrid_coordinator_pb2_grpc.CoordinatorStub(session.channel)


# What labgrid's drivers type on a console around a command (a console log's lines that the dashboard
# folds away, farm.dashboard.console). The marker is labgrid's ``gen_marker``: ten capital letters, typed
# as ``'ABCD''EFGHIJ'`` so that the echo of the typed line never matches the marker itself.
TYPED_MARKER = r"'(?P<a>[A-Z]{4})''(?P<b>[A-Z]{6})'"
#: UBootDriver._run (FarmUBootDriver's too): ``echo 'ABCD''EFGHIJ'; CMD; echo "$?"; echo 'ABCD''EFGHIJ';``
UBOOT_TYPED = re.compile(rf"(?P<prompt>.*?)echo {TYPED_MARKER}; (?P<cmd>.*); echo \"\$\?\"; echo '(?P=a)''(?P=b)';\s*")
#: ShellDriver._run: ``MARKER='ABCD''EFGHIJ' run 'CMD'`` (CMD quoted for the shell)
SHELL_TYPED = re.compile(rf"(?P<prompt>.*?)MARKER={TYPED_MARKER} run (?P<cmd>.*)")
#: ShellDriver._check_prompt: ``echo 'ABCD''EFGHIJ'``
PROMPT_CHECK = re.compile(rf"(?P<prompt>.*?)echo {TYPED_MARKER}\s*")
#: ShellDriver._inject_run: the ``run`` helper it defines on the target's shell
RUN_HELPER = re.compile(r".*run\(\) \{ echo -n \"\$MARKER\"; sh -c \"\$@\"; echo \"\$MARKER \$\?\"; \}\s*")


# Subclasses farm owns use their labgrid parent's internals, each covered by a test that boots a twin:
#   TwinQEMUDriver (farm.boot.qemu)        QEMUDriver's ``_child`` and ``_clientsocket``   tests/boot/test_twin_boot.py
#   FarmShellDriver (farm.boot.shell)      ShellDriver's ``_check_prompt``, ``_inject_run``   tests/boot/test_twin_boot.py, tests/guest
#   FarmUBootDriver (farm.boot.ubootdriver) UBootDriver's ``_run`` and ``_status``         tests/boot/test_twin_boot.py
