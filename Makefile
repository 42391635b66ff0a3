# The two commands of the README. Both set the machine up first (idempotent, quick when done).
.PHONY: setup demo test unit

setup:
	@scripts/setup.sh

# the main job: build the MaaXBoard image, netboot its QEMU twin, benchmark, publish into results/
demo: setup
	.venv/bin/farm run pipelines/smoke.yaml

# the whole test suite, QEMU boots included (what CI runs)
test: setup
	.venv/bin/pytest

# only the fast tests that need no QEMU
unit: setup
	.venv/bin/pytest tests/unit
