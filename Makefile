# The two commands of the README. Both set the machine up first (idempotent, quick when done).
.PHONY: setup demo test unit bench clean-root-check

setup:
	@scripts/setup.sh

# the main job: build the MaaXBoard image, netboot its QEMU twin, benchmark, publish into results/
demo: setup
	.venv/bin/farm run pipelines/smoke.yaml

# the whole test suite, QEMU boots included (what CI runs); three lanes side by side, a worker each: the
# twins' tests, the virtual farm's, the rest (tests/lanes.py)
test: setup
	.venv/bin/pytest -n 3

# only the fast tests that need no QEMU
unit: setup
	.venv/bin/pytest tests/unit

# farm's own speed against a hand-written pexpect script and LAVA's lava-run (docs/speed.md); installs LAVA
bench:
	@scripts/setup.sh --lava
	.venv/bin/python benchmarks/run.py $(BENCH_ARGS)

# the README's promise checked where nothing was installed by hand: make demo, farm lab up/status/down and
# the x86 smoke run in a minimal Debian 12 root (mmdebstrap; needs root). CI runs it after make test.
clean-root-check: setup
	scripts/clean-root-check.sh
