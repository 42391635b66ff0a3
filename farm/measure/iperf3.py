"""iperf3: network throughput between the host and a target.

The host runs the iperf3 *client* (so the JSON comes from the host's iperf3, 3.12 on Debian 12) and
the target runs ``iperf3 -s``. Both the JSON (``-J``) and the human text output are parsed into the
same :class:`Summary`, so the metrics and their units cannot drift apart between the two parsers.

Metrics (benchmark ``iperf3``; params always include ``protocol`` = ``tcp`` | ``udp``):

==================== ======= ============================================================
metric               unit    from
==================== ======= ============================================================
sent_throughput      bit/s   sender side (``end.sum_sent`` / the ``sender`` summary line)
received_throughput  bit/s   receiver side, the goodput (``end.sum_received`` / ``receiver``)
retransmits          count   TCP only, when the sender reports it
loss                 percent UDP only, lost datagrams as seen by the receiver
jitter               ms      UDP only, as seen by the receiver
host_cpu             percent ``end.cpu_utilization_percent.host_total`` (text: ``-V`` only)
remote_cpu           percent ``end.cpu_utilization_percent.remote_total`` (text: ``-V`` only)
==================== ======= ============================================================

``--bidir`` (the lab's ``iperf3 -c … --udp --bidir --bandwidth=200M --length=1472``) gives both
directions of the one test, each with the metrics above and the param ``bidir=client-to-server``
(the ``TX-C`` streams; JSON ``end.sum_sent``/``sum_received``) or ``bidir=server-to-client``
(``RX-C``; JSON ``end.sum_sent_bidir_reverse``/``sum_received_bidir_reverse``). The CPU figures
describe the whole test and go with the client-to-server direction only.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping

import attrs

from farm.errors import JobError, ParseError
from farm.measure import BenchmarkError, Measurement, check_value, merge_params
from farm.measure.iperf3_notebook import parse_annotation

BENCHMARK = "iperf3"
PROTOCOLS = ("tcp", "udp")
#: iperf3 3.12's own limits (it refuses more with its usage text, after a board was booted)
MAX_DURATION = 86400  # -t, seconds
MAX_OMIT = 60  # -O, seconds
MIN_UDP_LENGTH, MAX_UDP_LENGTH = 16, 65507  # -l with -u: 65507 is the largest UDP/IPv4 payload
MAX_TCP_LENGTH = 1 << 20  # -l over TCP
FORWARD, REVERSE = "client-to-server", "server-to-client"  # --bidir's two directions (TX-C, RX-C)


def run_direction(reverse: bool) -> str:
    """A one-way run's ``direction`` param as farm's live runs record it: the client is the lab host,
    the server the target (``-R``: the target sends)."""
    return "target-to-host" if reverse else "host-to-target"


@attrs.frozen
class Summary:
    """The end-of-test numbers of one iperf3 run, whichever output format they came from."""

    protocol: str
    sent_bps: float
    received_bps: float
    retransmits: int | None = None
    loss_percent: float | None = None
    jitter_ms: float | None = None
    host_cpu: float | None = None
    remote_cpu: float | None = None

    def measurements(self, params: Mapping[str, Any]) -> list[Measurement]:
        """One :class:`Measurement` per metric that this run actually reported."""
        candidates = (
            ("sent_throughput", self.sent_bps, "bit/s"),
            ("received_throughput", self.received_bps, "bit/s"),
            ("retransmits", self.retransmits, "count"),
            ("loss", self.loss_percent, "percent"),
            ("jitter", self.jitter_ms, "ms"),
            ("host_cpu", self.host_cpu, "percent"),
            ("remote_cpu", self.remote_cpu, "percent"),
        )
        all_params = merge_params(params, {"protocol": self.protocol})
        return [Measurement(BENCHMARK, metric, float(value), unit, all_params)
                for metric, value, unit in candidates if value is not None]


# --- JSON (-J) -------------------------------------------------------------------------------


def parse_json(text: str, *, params: Mapping[str, Any] | None = None,
               direction: bool = False) -> list[Measurement]:
    """Measurements from the output of ``iperf3 -c ... -J`` (TCP or UDP).

    Throughput: ``end.sum_sent.bits_per_second`` (sent) and ``end.sum_received.bits_per_second``
    (received goodput). ``end.sum`` is *not* used for throughput: for UDP it carries the sending
    side's rate (misleading with ``-R`` and under loss, see esnet/iperf PR #1174).

    UDP loss and jitter: iperf3 3.12 (checked on a real run, tests/data/iperf3-udp.json) writes
    ``jitter_ms`` and ``lost_percent`` into both ``end.sum`` and ``end.sum_received`` with the same
    values, while ``end.sum_sent`` has ``jitter_ms: 0``. We read them from ``end.sum_received``
    (the receiver is what measures them) and fall back to ``end.sum`` for iperf3 older than 3.10,
    which had only ``end.sum`` for UDP.

    A document with an ``"error"`` key (e.g. "unable to connect to server: Connection refused")
    raises :class:`~farm.measure.BenchmarkError` with iperf3's message. Note iperf3 3.12 exits 0 in
    that case when ``-J`` is given, so this check is the one that catches it. Text that is not
    JSON raises :class:`~farm.errors.ParseError` naming the line.
    """
    doc = _load_json(text)
    if "error" in doc:
        raise BenchmarkError(BENCHMARK, str(doc["error"]))
    end = _section(doc, "end")
    if "sum_sent_bidir_reverse" not in end and "sum_received_bidir_reverse" not in end:
        reverse = bool((doc.get("start") or {}).get("test_start", {}).get("reverse")) \
            if isinstance(doc.get("start"), dict) else False
        return _summary_from_json(doc).measurements(
            merge_params(params, {"direction": run_direction(reverse)}) if direction else (params or {}))
    forward = _summary_from_json(doc)
    reverse = _summary_from_json(doc, suffix="_bidir_reverse")
    return (forward.measurements(merge_params(params, {"bidir": FORWARD}))
            + reverse.measurements(merge_params(params, {"bidir": REVERSE})))


def _load_json(text: str) -> dict[str, Any]:
    from farm.config import MAX_DEPTH, json_depth

    if json_depth(text) > MAX_DEPTH:
        raise ParseError(f"iperf3 JSON line 1: nested deeper than {MAX_DEPTH} levels (iperf3 writes about 6)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        lines = text.splitlines()
        shown = f": {lines[e.lineno - 1][:80]!r}" if 0 < e.lineno <= len(lines) else " (end of output)"
        raise ParseError(f"iperf3 JSON line {e.lineno}: {e.msg} (column {e.colno}){shown}") from None
    if not isinstance(doc, dict):
        raise ParseError(f"iperf3 JSON line 1: expected an object at top level, got {type(doc).__name__}")
    return doc


def _summary_from_json(doc: Mapping[str, Any], suffix: str = "") -> Summary:
    """The summary of the forward direction, or with ``suffix="_bidir_reverse"`` of --bidir's reverse one."""
    protocol = str(_get(doc, "start", "test_start", "protocol")).lower()
    if protocol not in PROTOCOLS:
        raise ParseError(f"iperf3 JSON: start.test_start.protocol is {protocol!r}, expected TCP or UDP")
    end = _section(doc, "end")
    sent_key, received_key, sum_key = f"sum_sent{suffix}", f"sum_received{suffix}", "sum" + (suffix or "")
    sent, received = _section(end, sent_key, where="end"), _section(end, received_key, where="end")
    loss = jitter = retransmits = None
    if protocol == "udp":
        udp = received if "lost_percent" in received else _section(end, sum_key, where="end")
        where = f"end.{received_key}" if udp is received else f"end.{sum_key}"
        loss, jitter = _number(udp, "lost_percent", where), _number(udp, "jitter_ms", where)
    elif "retransmits" in sent:
        retransmits = int(_number(sent, "retransmits", f"end.{sent_key}"))
    cpu = _section(end, "cpu_utilization_percent", where="end") if "cpu_utilization_percent" in end and not suffix \
        else {}
    return Summary(
        protocol=protocol,
        sent_bps=_number(sent, "bits_per_second", f"end.{sent_key}"),
        received_bps=_number(received, "bits_per_second", f"end.{received_key}"),
        retransmits=retransmits, loss_percent=loss, jitter_ms=jitter,
        host_cpu=_number(cpu, "host_total", "end.cpu_utilization_percent") if "host_total" in cpu else None,
        remote_cpu=(_number(cpu, "remote_total", "end.cpu_utilization_percent")
                    if "remote_total" in cpu else None),
    )


def _get(obj: Any, *keys: str, where: str = "") -> Any:
    """``obj[k1][k2]...``; a missing key is a ParseError naming its dotted path (JSON has no lines
    to point at once loaded, the path is the next best thing)."""
    path = where
    for key in keys:
        path = f"{path}.{key}" if path else key
        if not isinstance(obj, Mapping) or key not in obj:
            raise ParseError(f"iperf3 JSON: missing {path}")
        obj = obj[key]
    return obj


def _section(obj: Any, key: str, where: str = "") -> Mapping[str, Any]:
    value = _get(obj, key, where=where)
    if not isinstance(value, Mapping):
        raise ParseError(f"iperf3 JSON: {where + '.' if where else ''}{key} is not an object")
    return value


def _number(obj: Mapping[str, Any], key: str, where: str) -> float:
    value = _get(obj, key, where=where)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(f"iperf3 JSON: {where}.{key} is {value!r}, expected a number")
    return check_value(BENCHMARK, f"iperf3 JSON {where}.{key}", float(value))


# --- human text output -----------------------------------------------------------------------

_SEPARATOR = re.compile(r"^-(?: -){5,}(?P<note>.*)$")  # "- - - - ... -" before each run's summary
# (a lab notebook's separators end in the run's requested load, written by hand: farm.measure.iperf3_notebook)
_RUN_START = ("Connecting to host", "Server listening on", "Accepted connection from", "iperf Done.")
_SERVER_OUTPUT = "Server output:"  # --get-server-output: a whole server log follows, not ours
_SERVER_OUTPUT_END = ("iperf Done.", "Connecting to host")
_TOOL_ERROR = re.compile(r"^iperf3: (?:error|interrupt) - (?P<message>.+?)\s*$")
_STREAM = re.compile(
    r"^\[\s*(?P<id>\d+|SUM)\](?:\[(?P<dir>[TR]X-[CS])\])?\s+"
    r"\d+\.\d+-\s*\d+\.\d+\s+sec\s+"
    r"[\d.]+\s+[KMGT]?Bytes\s+"
    r"(?P<rate>[\d.]+\s+[KMGT]?(?:bits|Bytes)/sec)\s+"
    r"(?:(?P<jitter>[\d.]+)\s+ms\s+(?P<lost>-?\d+)/(?P<total>\d+)\s+\((?P<percent>[^)%]*)%\)\s+"
    r"|(?P<retr>\d+)\s+)?"
    r"(?P<role>sender|receiver)\s*$"
)
_NOT_AVAILABLE = re.compile(r"^\[\s*(?:\d+|SUM)\](?:\[[TR]X-[CS]\])?\s+\(.*\)\s*$")  # "(sender statistics not available)"
# --bidir's stream roles: [TX-C] the client sends (client to server), [RX-C] it receives; the server's own
# log says TX-S / RX-S for the same streams
_DIRECTION = {"TX-C": FORWARD, "RX-S": FORWARD, "RX-C": REVERSE, "TX-S": REVERSE}
_CPU = re.compile(r"^CPU Utilization: local/\w+ (?P<host>[\d.]+)% \(.*?\), remote/\w+ (?P<remote>[\d.]+)%")
_RATE = re.compile(r"^(?P<number>[\d.]+)\s+(?P<prefix>[KMGT]?)(?P<kind>bits|Bytes)/sec$")
_PREFIX_POWER = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}


def rate_to_bits_per_second(text: str) -> float:
    """``"938 Mbits/sec"`` -> 938e6. iperf3 scales bits by 1000 and Bytes by 1024 (its
    ``unit_snprintf``), so ``"1 MBytes/sec"`` (``-f M``) is 1024*1024*8 bit/s."""
    m = _RATE.match(text.strip())
    if not m:
        raise ValueError(f"not an iperf3 rate: {text!r}")
    power = _PREFIX_POWER[m["prefix"]]
    if m["kind"] == "bits":
        return float(m["number"]) * 1000 ** power
    return float(m["number"]) * 1024 ** power * 8


@attrs.frozen
class _Line:
    """One parsed ``sender`` / ``receiver`` summary line."""

    number: int
    bps: float
    retransmits: int | None
    loss_percent: float | None
    jitter_ms: float | None


@attrs.define
class _Run:
    """The summary block of one run, from its ``- - -`` separator to the next run or the end."""

    index: int
    first_line: int
    lines: dict[tuple[str, str, str], _Line] = attrs.field(factory=dict)  # (stream, direction, role)
    cpu: tuple[float, float] | None = None
    bitrate: str | None = None  # the requested load its separator was annotated with (a notebook)
    reverse: bool = False  # "Reverse mode, remote host ... is sending" before its separator (-R)

    def directions(self) -> list[str]:
        """``[""]`` for a one-way run, ``[FORWARD, REVERSE]`` (those present) for --bidir."""
        found = {direction for _, direction, _ in self.lines}
        return [d for d in ("", FORWARD, REVERSE) if d in found]

    def summary(self, direction: str = "") -> Summary:
        """Prefer the ``[SUM]`` lines (``-P``); without them there must be exactly one stream."""
        ids = {stream for stream, d, _ in self.lines if d == direction}
        if "SUM" in ids:
            stream = "SUM"
        elif len(ids) == 1:
            (stream,) = ids
        else:
            raise ParseError(f"iperf3 output line {self.first_line}: run {self.index} has "
                             f"{len(ids)} streams{f' {direction}' if direction else ''} and no [SUM] lines")
        sender, receiver = (self._line(stream, direction, role) for role in ("sender", "receiver"))
        protocol = "udp" if receiver.jitter_ms is not None else "tcp"
        return Summary(
            protocol=protocol, sent_bps=sender.bps, received_bps=receiver.bps,
            retransmits=sender.retransmits if protocol == "tcp" else None,
            loss_percent=receiver.loss_percent, jitter_ms=receiver.jitter_ms,
            host_cpu=self.cpu[0] if self.cpu and direction != REVERSE else None,
            remote_cpu=self.cpu[1] if self.cpu and direction != REVERSE else None,
        )

    def _line(self, stream: str, direction: str, role: str) -> _Line:
        try:
            return self.lines[stream, direction, role]
        except KeyError:
            raise ParseError(f"iperf3 output line {self.first_line}: run {self.index} has no "
                             f"{role} summary line{f' for {direction}' if direction else ''}") from None


def parse_text(text: str, *, params: Mapping[str, Any] | None = None,
               direction: bool = False) -> list[Measurement]:
    """Measurements from iperf3's human output of one or several runs pasted one after another.

    Only each run's end summary is read: the lines after the ``- - - -`` separator, ``sender`` and
    ``receiver`` lines (TCP: bitrate and ``Retr``; UDP: bitrate, jitter, lost/total), preferring
    ``[SUM]`` over per-stream lines when ``-P`` was used, and the ``CPU Utilization`` line that
    ``-V`` adds. Every run's params get ``run=<n>`` (0-based, in order of appearance) so repeated
    runs stay distinct records; a run whose separator line is annotated with its requested load (a
    lab notebook, :mod:`farm.measure.iperf3_notebook`) gets ``bitrate=<load>`` instead. The text
    rounds to 3 digits; prefer :func:`parse_json` when you control the command. UDP loss is
    recomputed from lost/total (the printed percent is ``%.2g``). ``--bidir`` runs give both
    directions (param ``bidir``); an ``iperf3: error - ...`` line raises
    :class:`~farm.measure.BenchmarkError`. ``direction``: a one-way run's records get ``direction=``
    as a live run's (:func:`run_direction`; ``Reverse mode`` before its summary: ``target-to-host``).
    """
    runs: list[_Run] = []
    reverse = False  # the run being read was started with -R
    state = "outside"  # "outside" | "summary" | "server" (skipping --get-server-output)
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if m := _TOOL_ERROR.match(stripped):
            raise BenchmarkError(BENCHMARK, m["message"])
        if stripped.startswith(_SERVER_OUTPUT):
            state = "server"
        elif stripped.startswith(_RUN_START):
            if state != "server" or stripped.startswith(_SERVER_OUTPUT_END):
                state = "outside"
                reverse = reverse and not stripped.startswith("Connecting to host")  # a new run's start
        elif state == "outside" and stripped.startswith("Reverse mode"):
            reverse = True
        elif state != "server" and (separator := _SEPARATOR.match(stripped)):
            note = separator["note"].strip()
            runs.append(_Run(index=len(runs), first_line=number,
                             bitrate=parse_annotation(note, number) if note else None, reverse=reverse))
            reverse = False
            state = "summary"
        elif state == "summary":
            _read_summary_line(runs[-1], number, stripped)
    if not runs:
        raise ParseError("iperf3 output: no run summary found (no '- - - -' separator line)")
    return [m for run in runs for way in run.directions()
            for m in run.summary(way).measurements(
                merge_params(params, {**({"bitrate": run.bitrate} if run.bitrate else {"run": run.index}),
                                      **({"bidir": way} if way else
                                         {"direction": run_direction(run.reverse)} if direction else {})}))]


def _read_summary_line(run: _Run, number: int, line: str) -> None:
    if m := _CPU.match(line):
        run.cpu = (float(m["host"]), float(m["remote"]))
        return
    if not line.startswith("[") or line.startswith("[ ID]") or _NOT_AVAILABLE.match(line):
        return  # headers, "Test Complete.", congestion algorithm names, blank lines
    m = _STREAM.match(line)
    if not m:
        raise ParseError(f"iperf3 output line {number}: cannot parse summary line {line!r}")
    direction = _DIRECTION[m["dir"]] if m["dir"] else ""
    key = (m["id"], direction, m["role"])
    if key in run.lines:
        raise ParseError(f"iperf3 output line {number}: second {m['role']} line for stream "
                         f"{m['id']}{f' {direction}' if direction else ''} in run {run.index} "
                         f"(first on line {run.lines[key].number})")
    run.lines[key] = _Line(
        number=number,
        bps=check_value(BENCHMARK, f"iperf3 output line {number}: {m['role']} rate",
                        rate_to_bits_per_second(m["rate"])),
        retransmits=int(m["retr"]) if m["retr"] else None,
        loss_percent=_loss_percent(number, m["lost"], m["total"], m["percent"]) if m["jitter"] else None,
        jitter_ms=float(m["jitter"]) if m["jitter"] else None,
    )


def _loss_percent(number: int, lost: str, total: str, printed: str) -> float:
    """Lost / total datagrams in percent; a negative count (reordering) or a NaN (nothing sent)
    is not a loss that can be measured: :class:`~farm.measure.ImpossibleValue` naming the line."""
    if int(total):
        loss = 100.0 * int(lost) / int(total)
    else:
        try:
            loss = float(printed)  # nothing sent: iperf3 prints 0 or nan
        except ValueError:
            raise ParseError(f"iperf3 output line {number}: cannot parse loss {printed!r}%") from None
    return check_value(BENCHMARK, f"iperf3 output line {number}: loss {lost}/{total} ({printed}%)", loss)


# --- command ---------------------------------------------------------------------------------

_BITRATE = re.compile(r"^\d+(?:\.\d+)?[kKmMgGtT]?(?:/\d+)?$")  # iperf3 -b: rate[KMG][/burst]


def client_command(host: str, port: int, *, duration: float, protocol: str = "tcp",
                   bitrate: str | None = None, length: int | None = None, reverse: bool = False,
                   omit: float = 0, bidir: bool = False) -> list[str]:
    """argv of the host-side iperf3 client, with ``-J`` so :func:`parse_json` can read it;
    ``bidir``: both directions at once (``--bidir``, as the lab runs it with ``--udp --bidir
    --bandwidth=200M --length=1472``; not with ``reverse``, which iperf3 refuses beside it).

    ``duration`` and ``omit`` must be whole seconds: iperf3 3.12 reads ``-t`` and ``-O`` with
    ``atoi``, so ``-t 1.5`` silently runs for 1 s (checked); we refuse rather than mislabel a run.
    Values are validated here, before a board is booted, and raise :class:`~farm.errors.JobError`.
    """
    if protocol not in PROTOCOLS:
        raise JobError(f"iperf3 protocol {protocol!r}: expected one of {', '.join(PROTOCOLS)}")
    if not host or host.startswith("-") or any(c.isspace() for c in host):
        raise JobError(f"iperf3 host {host!r}: expected a host name or address")
    if not 0 < port < 65536:
        raise JobError(f"iperf3 port {port}: expected 1-65535")
    argv = ["iperf3", "-c", host, "-p", str(port), "-J", "-t", _whole_seconds("duration", duration, 1, MAX_DURATION)]
    if omit:
        argv += ["-O", _whole_seconds("omit", omit, 0, MAX_OMIT)]
    if protocol == "udp":
        argv.append("-u")
    if bitrate is not None:
        if not _BITRATE.match(bitrate):
            raise JobError(f"iperf3 bitrate {bitrate!r}: expected e.g. 50M, 1.5G or 100M/10")
        argv += ["-b", bitrate]
    if length is not None:
        low, high = (MIN_UDP_LENGTH, MAX_UDP_LENGTH) if protocol == "udp" else (1, MAX_TCP_LENGTH)
        if isinstance(length, bool) or not isinstance(length, int) or not low <= length <= high:
            raise JobError(f"iperf3 length {length!r}: expected {low}-{high} bytes for {protocol.upper()}"
                           + (" (the largest UDP/IPv4 payload)" if protocol == "udp" else ""))
        argv += ["-l", str(length)]
    if reverse and bidir:
        raise JobError("iperf3 reverse and bidir: iperf3 runs one or the other (--bidir already has both directions)")
    if reverse:
        argv.append("-R")
    if bidir:
        argv.append("--bidir")
    return argv


def _whole_seconds(name: str, value: float, minimum: int, maximum: int) -> str:
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or not float(value).is_integer() or not minimum <= value <= maximum):
        raise JobError(f"iperf3 {name} {value!r}: expected whole seconds, {minimum}-{maximum} "
                       "(iperf3 truncates fractions and refuses more)")
    return str(int(value))


def parse_output(text: str, *, params: Mapping[str, Any] | None = None,
                 direction: bool = False) -> list[Measurement]:
    """A saved iperf3 client output of either kind: JSON (``-J``, the text begins with ``{``,
    :func:`parse_json`) or the human text of one or several runs pasted together (:func:`parse_text`).
    ``direction``: one-way runs get ``direction=host-to-target|target-to-host`` (``farm import``: the
    client was the lab host, as in farm's live runs, so an import joins them)."""
    return (parse_json if text.lstrip().startswith("{") else parse_text)(text, params=params, direction=direction)
