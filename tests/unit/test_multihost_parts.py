"""The pure parts of the multi-host virtual farm (issue 31): the stand-in board's U-Boot command line,
the checks the load test makes on what boards, load generators and the coordinator recorded, which
load clients a place is taken with, and a lease that may still drive a board."""

from __future__ import annotations

import json
import os
import socket
import types

import pytest

from farm.errors import JobError
from farm.places.loadgens import held, order, wanted
from farm.virtual.multiload import (Attempt, Job, board_sessions, double_board_holds, double_lock_holds, job_outcomes,
                                    load_runs, overlapping, promises_broken, why_not_passed)
from farm.virtual.standin import command_words, split_commands, staged_job


# --- the stand-in board's U-Boot, as farm's netboot types to it ----------------------------------------

def test_commands_split_at_semicolons_outside_quotes():
    line = "echo 'ABCD''EFGHIJ'; tftpboot ${kernel_addr_r} u/j/Image; echo \"$?\"; echo 'a;b' ;"
    assert split_commands(line) == ["echo 'ABCD''EFGHIJ'", " tftpboot ${kernel_addr_r} u/j/Image", ' echo "$?"',
                                    " echo 'a;b' "]


def test_words_expand_variables_and_the_last_status():
    env = {"kernel_addr_r": "0x40400000", "ipaddr": "10.1.2.3"}
    assert command_words("echo 'ABCD''EFGHIJ'", env, 0) == ["echo", "ABCDEFGHIJ"]  # the marker, unsplit
    assert command_words("tftpboot ${kernel_addr_r} u/j/Image", env, 0) == ["tftpboot", "0x40400000", "u/j/Image"]
    assert command_words('echo "$?"', env, 1) == ["echo", "1"]
    assert command_words('setenv bootargs "quiet farm.ip=${ipaddr}:x"', env, 0) == [
        "setenv", "bootargs", "quiet farm.ip=10.1.2.3:x"]
    assert command_words('test -n "${fdt_addr_r}"', env, 0) == ["test", "-n", ""]   # quoted: an empty word
    assert command_words("tftpboot ${unset} file", env, 0) == ["tftpboot", "file"]  # bare: no word at all


def test_a_staged_path_names_its_job():
    assert staged_job("job01/20261201-100000-0123456789ab-standin-default-0/Image") == \
        "20261201-100000-0123456789ab-standin-default-0"
    assert staged_job("Image") is None


# --- the load test's checks -----------------------------------------------------------------------------

def _events(*items):
    return [dict(zip(("t", "event", "job"), item)) | {"found": True} for item in items]


def test_a_power_on_that_loaded_two_jobs_files_is_a_double_hold():
    events = _events((1, "power-on", None), (2, "tftp", "A"), (3, "tftp", "A"), (4, "power-off", None),
                     (5, "power-on", None), (6, "tftp", "B"), (7, "tftp", "C"), (9, "power-off", None))
    sessions = board_sessions(events)
    assert [s["jobs"] for s in sessions] == [["A"], ["B", "C"]]
    assert double_board_holds({"standin-1-1": sessions}) == [
        "standin-1-1: one power-on at 5.0 loaded the files of B, C"]


def test_a_file_not_found_is_not_a_job_driving_the_board():
    events = [{"t": 1, "event": "power-on"}, {"t": 2, "event": "tftp", "job": "A", "found": False},
              {"t": 3, "event": "tftp", "job": "B", "found": True}, {"t": 4, "event": "power-off"}]
    assert [s["jobs"] for s in board_sessions(events)] == [["B"]]


def test_two_load_runs_of_one_generator_at_once_are_found():
    events = [{"t": 1, "pid": 10, "event": "start", "command": "timeout -s KILL 70 /x/farm_load -a 1 & echo"},
              {"t": 1.5, "pid": 11, "event": "start", "command": "cat /tmp/x.samples"},  # not a load
              {"t": 1.6, "pid": 11, "event": "end", "code": 0},
              {"t": 2, "pid": 12, "event": "start", "command": "timeout -s KILL 70 /x/farm_load -a 2 & echo"},
              {"t": 3, "pid": 10, "event": "end", "code": 0}, {"t": 5, "pid": 12, "event": "end", "code": 0},
              {"t": 6, "pid": 13, "event": "start", "command": "timeout -s KILL 70 /x/farm_load -a 3 & echo"},
              {"t": 7, "pid": 13, "event": "end", "code": 0}]
    runs = load_runs(events)
    assert runs == [(1, 3), (2, 5), (6, 7)]
    assert overlapping(runs) == [((1, 3), (2, 5))]


def test_two_owners_of_one_place_at_once_are_found():
    holds = [("p", "r/a", 1.0, 5.0), ("p", "r/b", 5.0, 9.0), ("q", "r/c", 1.0, 9.0), ("p", "r/d", 8.0, 10.0)]
    assert double_lock_holds(holds) == ["p: r/d from 8.0 while r/b until 9.0"]


def test_the_promises():
    summary = {"double_holds": {"boards": [], "locks": [], "load_generators": []}, "jobs": 2,
               "outcomes": {"passed first time": 1, "passed after a class-3 retry": 1}, "per_job": {"a": [0], "b": [3, 0]},
               "stuck_jobs": [], "runs_not_whole": [], "places_not_healthy_at_end": {}, "reservations_left": 0,
               "health_checks": [{"place": "p", "exit": 0}]}
    assert promises_broken(summary) == []
    summary["outcomes"]["passed after a class-3 retry"] = 0
    summary["per_job"]["b"] = [3, 3, 3]
    summary["why_not_passed"] = {"b": ["reserve board=standin: poll reservation T: CANCELLED",
                                       "reserve board=standin: cannot reach the labgrid coordinator", "boot: x"]}
    summary["double_holds"]["boards"] = ["p: one power-on loaded A, B"]
    assert promises_broken(summary) == ["double hold (boards): p: one power-on loaded A, B",
                                        "jobs that did not end passed: {'b': [3, 3, 3]}",
                                        "  b attempt 1: reserve board=standin: poll reservation T: CANCELLED",
                                        "  b attempt 2: reserve board=standin: cannot reach the labgrid coordinator",
                                        "  b attempt 3: boot: x"]


def test_the_outcomes_of_jobs_and_what_ended_each_failed_attempt(tmp_path):
    """summarise's outcomes, on jobs whose attempts wrote run.json (CI's run printed no reasons: a
    comprehension's walrus there rebound the reasons' name to None)."""
    def attempt(job: str, n: int, code: int, message: str | None = None) -> Attempt:
        out = tmp_path / f"{job}-{n}"
        out.mkdir()
        stages = [{"name": "build", "kind": "pass"}]
        if message:
            stages.append({"name": "boot standin/default", "kind": "error", "message": message})
        (out / "run.json").write_text(json.dumps({"stages": stages}))
        return Attempt(job, n, out, started=0.0, ended=1.0, code=code)

    jobs = [Job("a", 0, "bench", "o", [attempt("a", 1, 0)]),
            Job("b", 0, "sweep", "o", [attempt("b", 1, 3, "standin: no boot in 2 attempts"), attempt("b", 2, 0)]),
            Job("c", 0, "sweep", "o", [attempt("c", n, 3, f"standin: timeout {n}") for n in (1, 2)])]
    outcomes, per_job, why = job_outcomes(jobs)
    assert (outcomes["passed first time"], outcomes["passed after a class-3 retry"],
            outcomes["class 3, retries spent"]) == (1, 1, 1)
    assert per_job == {"a": [0], "b": [3, 0], "c": [3, 3]}
    assert why == {"b": ["boot standin/default: standin: no boot in 2 attempts", "passed"],
                   "c": ["boot standin/default: standin: timeout 1", "boot standin/default: standin: timeout 2"]}


def test_what_ended_an_attempt_is_read_from_its_run_json(tmp_path):
    stages = [{"name": "build", "kind": "pass"},
              {"name": "reserve board=standin", "kind": "error", "message": "poll reservation T: CANCELLED\nmore"},
              {"name": "publish", "kind": "pass"}]
    (tmp_path / "run.json").write_text(json.dumps({"status": "infrastructure-error", "stages": stages}))
    assert why_not_passed(tmp_path) == "reserve board=standin: poll reservation T: CANCELLED"
    assert why_not_passed(tmp_path / "missing").startswith("run.json: [Errno 2]")


# --- load clients taken with a place --------------------------------------------------------------------

def test_a_places_load_clients_in_the_one_order_all_jobs_take_them():
    assert wanted({"farm_loadgens": "lg2, lg1,lg2"}, "p") == ["lg1", "lg2"]
    assert wanted({}, "p") == [] and order(["b", "a", "b"]) == ["a", "b"]
    with pytest.raises(JobError, match="place p: tag farm_loadgens: 'lg 1' is not a valid load generator name"):
        wanted({"farm_loadgens": "lg 1"}, "p")


def test_a_sweep_on_the_place_uses_the_load_client_taken_with_it():
    from farm.bench.loadgen import RemoteGenerator, generator

    logins = {"lg1": {"address": "10.0.0.201", "port": 22, "username": "root"}}
    gen = generator("place", types.SimpleNamespace(resources=()), held=logins)
    assert isinstance(gen, RemoteGenerator) and gen.where == "load generator lg1 (root@10.0.0.201:22)"
    assert generator("lg1", types.SimpleNamespace(resources=()), held=logins).where == gen.where
    with pytest.raises(JobError, match="the load generator taken with the farm's place, but none was"):
        generator("place", types.SimpleNamespace(resources=()), held={})
    assert held({"FARM_LOADGENS": '{"lg1": {"address": "a", "port": 22, "username": "u"}}'})["lg1"]["address"] == "a"


def test_only_a_pipeline_that_sweeps_from_a_generator_takes_load_clients():
    from farm.run import drives_load_generators

    def pipeline(*params):
        return types.SimpleNamespace(benchmarks=[types.SimpleNamespace(name="sweep", params=types.SimpleNamespace(**p))
                                                 for p in params])  # typed params, as load_pipeline gives

    assert drives_load_generators(pipeline({"generator": "place"}))
    assert not drives_load_generators(pipeline({}, {"generator": "host"}))


# --- a lease that may still drive a board ---------------------------------------------------------------

def test_a_lease_whose_lock_was_lost_may_still_drive_the_board():
    """After a coordinator restart the place is free, but the job of the lease on it is alive: another
    job must not take the board yet. A lease of a process that is gone does not hold it back."""
    import attrs

    from farm.lease import new_lease
    from farm.places.locking import orphaned_leases

    alive = new_lease("runner-1/job1", "job1", pid=os.getpid())
    # the pid's process now is another than the lease's (another start time): the lease's is gone
    gone = attrs.evolve(new_lease("runner-2/job2", "job2", pid=os.getpid()), start=alive.start + 1)
    elsewhere = attrs.evolve(new_lease("runner-3/job3", "job3"), host="another-host")

    def place(acquired, *leases):
        return types.SimpleNamespace(acquired=acquired, tags={l.key: l.encode() for l in leases})

    assert sorted(l.job for l in orphaned_leases(place(None, alive, gone, elsewhere))) == ["job1", "job3"]
    assert orphaned_leases(place("runner-1/job1", alive)) == []  # its lock stands: not an orphan
    assert socket.gethostname() != "another-host"
