"""farm's fixtures: a target booted with farm's retries and fail-fast lines, and farm's records.

    pytest --lg-env=../../env/qemu-maaxboard.yaml --farm-out=results/example --junitxml=results/junit.xml .

Each farm_record() is a row of results/example/results.csv (read by `farm report`, `farm compare`,
`farm qualify`) and a property of the test's testcase in junit.xml.
"""


def test_cpus_online(farm_target, farm_record):
    cpus = int(farm_target.run("grep -c ^processor /proc/cpuinfo")[0])
    assert cpus >= 1
    farm_record("cpus", cpus, "count")


def test_boot_time(farm_target, farm_record):
    farm_record("boot_seconds", farm_target.boot_seconds, "s", params={"attempts": len(farm_target.failed_attempts) + 1})
    assert farm_target.boot_seconds > 0
