"""The farm at lab scale (issue 31), the short form for CI: 3 lab hosts and 2 load generators in
network namespaces around one coordinator (farm.virtual.multihost), concurrent `farm run --farm`
jobs at priorities 10/5/0/0, half sweeping through the load generator reserved with their board,
and the lab failing under them: a board that never boots, an exporter killed, a load
generator lost mid-sweep, the coordinator restarted, a host's network cut for 30 s
(farm.virtual.multiload). The boards are stand-ins (farm.virtual.standin: U-Boot, TFTP from their
host, a real shell), not QEMU twins: this is about the farm, not the boot.

CI runs 8 jobs on 3 lab hosts x 2 places (every fault, ~5 min on 2 busy cores); FARM_MULTIHOST=full
runs the issue's 20 jobs on 3 x 4 places (10 min or more here, too long for CI's 90 minutes).
benchmarks/farm_multihost.py is the full form (faults apart, several runs, figures in docs/farm.md).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from farm.virtual import multihost
from farm.virtual.multiload import promises_broken, report, run

#: FARM_MULTIHOST=full: the issue's size; the default is CI's. With 8 jobs each job meets more of the
#: five faults than with 20 (one job was failed by three of them in turn: the dead board, the
#: coordinator's restart, the cut network), so CI's size gives a job one attempt more
FULL = os.environ.get("FARM_MULTIHOST", "") == "full"
SIZE = (dict(jobs=20, hosts=3, places_per_host=4, generators=2, attempts=3) if FULL else
        dict(jobs=8, hosts=3, places_per_host=2, generators=2, attempts=4))

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"),
                                reason="network namespaces need root and iproute2 (CI and scripts/setup.sh have both)")


@pytest.mark.timeout(1500)
def test_concurrent_jobs_on_three_lab_hosts_while_the_lab_fails(tmp_path):
    summary = run(tmp_path / "farm", **SIZE, form="short", say=lambda text: print(text, flush=True))
    print(report(summary))
    (tmp_path / "summary.json").write_text(json.dumps(summary, indent=2))
    faults = " ".join(f["fault"] for f in summary["faults"])
    # every fault happened (the load generator's only when a sweep ran there to lose)
    for words in ("never boots", "exporter of h1 killed", "coordinator restarted", "network of h2 cut",
                  "network of h2 restored", "mended"):
        assert words in faults, faults
    assert promises_broken(summary) == []
    assert summary["double_holds"] == {"boards": [], "locks": [], "load_generators": []}
    assert summary["holds"]["load_runs"] > 0 and summary["holds"]["boots"] >= SIZE["jobs"]
    jobs = summary["outcomes"]["passed first time"] + summary["outcomes"]["passed after a class-3 retry"]
    assert jobs == SIZE["jobs"]
    # nothing of the farm is left on the machine: namespaces, the boards' directory, SSH drop-ins
    down = json.loads((tmp_path / "farm" / "multihost.json.down").read_text())
    assert not [n for n in multihost.netns.names() if n.startswith(f"fm{down['tag']}-")]
    assert not os.path.exists(down["world"])
    assert not [a for a in down["hosts"] if os.path.exists(f"/etc/ssh/ssh_config.d/fm{down['tag']}-{a['name']}.conf")]
