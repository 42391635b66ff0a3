"""The whole serial log of each target, written as it arrives (nothing lost if the run dies).

labgrid reports every console read as a step event; this subscriber appends the bytes to
``<dir>/<target>.log`` and keeps the tail in memory for error excerpts.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

from labgrid.step import steps

from ..secrets import mask_bytes


class ConsoleLog:
    def __init__(self, directory: Path, tail_bytes: int = 8192):
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self._files: dict[str, object] = {}
        self._tails: dict[str, deque[bytes]] = {}
        self._tail_bytes = tail_bytes
        steps.subscribe(self._notify)
        self._subscribed = True

    def path(self, target: str) -> Path:
        return self.directory / f"{target}.log"

    def _notify(self, event) -> None:
        step = event.step
        if step.tag != "console" or step.title != "read" or event.data.get("state") != "stop":
            return
        if not step.result or step.source is None or step.source.target is None:
            return
        name = step.source.target.name
        if name not in self._files:
            self._files[name] = open(self.path(name), "ab", buffering=0)
            self._tails[name] = deque()
        data = mask_bytes(step.result)  # a secret split across two reads is not caught: echo none
        self._files[name].write(data)
        tail = self._tails[name]
        tail.append(data)
        while sum(map(len, tail)) > self._tail_bytes and len(tail) > 1:
            tail.popleft()

    def tail(self, target: str, lines: int = 15) -> str:
        data = b"".join(self._tails.get(target, ()))
        text = data.decode("utf-8", "replace").replace("\r", "")
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        if self._subscribed:  # close() twice (an error path, then __exit__) unsubscribes once
            steps.unsubscribe(self._notify)
            self._subscribed = False
        for f in self._files.values():
            f.close()
        self._files.clear()

    def __enter__(self) -> "ConsoleLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
