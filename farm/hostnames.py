"""Which ``Host`` a local HTTP server of farm answers for: ``farm serve`` and ``farm archive serve``.

    allowed = allowed_names(["dashboard.lab.example"])      # --allow-host, beside this machine's names
    if not host_ok(handler, allowed, "farm serve"):         # first thing a request handler does
        return                                              # refused: 421, said why

A request must name the server in its ``Host`` header: an IP address (which no one else's page can
be served from), ``localhost``, this machine's own names, or a name given with ``--allow-host``.
Anything else is refused (421 Misdirected Request) before anything is read: through DNS rebinding,
a page of another site whose name was made to point at 127.0.0.1 (or at the lab's server) would
otherwise read every answer from the browser of someone who opened it.
"""

from __future__ import annotations

import ipaddress
import socket
from http.server import BaseHTTPRequestHandler
from typing import Iterable


def own_names() -> set[str]:
    """This machine's names, which a browser sends in ``Host`` when it is reached by them."""
    names = {"localhost", "localhost.localdomain"}
    for name in (socket.gethostname(), socket.getfqdn()):
        if name:
            names.add(name.lower().rstrip("."))
    return names


def allowed_names(extra: Iterable[str] = ()) -> set[str]:
    """This machine's names and ``extra`` (``--allow-host``, the bound ``--host``), lower case."""
    return own_names() | {name.lower().rstrip(".") for name in extra}


def host_of(header: str) -> str | None:
    """The host of a ``Host`` header (``name``, ``name:port``, ``[v6]``, ``[v6]:port``), lower case,
    without a final dot; None when the header is not one."""
    text = header.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        rest = text[end + 1:] if end > 0 else ":x"
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        return text[1:end]
    name, colon, port = text.partition(":")
    if colon and not port.isdigit():
        return None
    return name.rstrip(".") or None


def host_allowed(header: str | None, allowed: Iterable[str]) -> bool:
    """Whether a request's ``Host`` header names this server (see the module docstring): an IP
    address, or one of ``allowed`` (names, lower case). A missing header (HTTP/1.0) is allowed:
    browsers always send one, so a rebinding page cannot leave it out."""
    if header is None:
        return True
    host = host_of(header)
    if host is None:
        return False
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return host in {name.lower().rstrip(".") for name in allowed}


def host_ok(handler: BaseHTTPRequestHandler, allowed: Iterable[str], server: str) -> bool:
    """Whether ``handler``'s request names this server; if not, it is answered 421 here, naming
    ``server``'s ``--allow-host``, and the caller answers nothing more."""
    if host_allowed(handler.headers.get("Host"), allowed):
        return True
    body = f"{server}: this server does not answer for that host name (see {server} --allow-host)\n".encode()
    handler.send_response(421, "Misdirected Request")
    handler.send_header("Content-Type", "text/plain; charset=utf-8")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)
    return False
