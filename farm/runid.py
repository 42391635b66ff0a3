"""Run ids: ``<UTC time>-<4 hex digits>``, unique lab-wide in practice, and sortable by start time.

Apart from farm.run (the runner, its listeners and the benchmarks it imports) so that a command that only
needs an id (``farm boot``'s job) does not import them."""

from __future__ import annotations

import secrets
from datetime import datetime, timezone


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
