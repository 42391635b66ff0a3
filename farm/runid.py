"""Run ids: ``<UTC time>-<12 hex digits>``, unique lab-wide, and sortable by start time.

Apart from farm.run (the runner, its listeners and the benchmarks it imports) so that a command that only
needs an id (``farm boot``'s job) does not import them."""

from __future__ import annotations

import secrets
from datetime import datetime, timezone

from .secrets import mask

#: random hex digits of a run id after its UTC second: 48 bits, so that the ids of a lab's runs never
#: meet (20 jobs started in one second share an id once in about 10^12 such seconds; the 4 digits of
#: old ids met once in ~350)
RUN_ID_RANDOM_HEX = 12


def new_run_id() -> str:
    """``YYYYMMDD-HHMMSS-<12 hex>``: sorts by start time, unique lab-wide (see :data:`RUN_ID_RANDOM_HEX`);
    never one that a secret's masking would change (it names the run directory and every file of it)."""
    while True:
        run_id = (datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-")
                  + secrets.token_hex(RUN_ID_RANDOM_HEX // 2))
        if mask(run_id) == run_id:
            return run_id
