"""The image archive on a real directory: a run archives what it booted (the run_published listener),
deduplicated, masked, verified on read; farm reproduce fetches it back into an empty cache and runs the
pipeline as run with those very bytes (through the real runner, a flow that boots nothing)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from farm.archive import ArchiveError, NotArchived, open_archive
from farm.archive.archiving import archive_run
from farm.archive.directory import DirArchive
from farm.archive.record import Entry
from farm.archive.reproduce import reproduce
from farm.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_TEST_FAILURE, JobError
from farm.run import run_pipeline

from .archive_helpers import ENV, fake_image, pipeline_tree, use_image, values
from ..fakes import FakeFlow


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """FARM_ARCHIVE and FARM_DB of the test's own, no step summary."""
    monkeypatch.setenv("FARM_ARCHIVE", str(tmp_path / "archive"))
    monkeypatch.setenv("FARM_DB", str(tmp_path / "results.db"))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def original_run(lab, monkeypatch, *numbers, out="run", image=None, extra=""):
    image = image or fake_image(lab / "cache" / "images" / "fake-1")
    use_image(monkeypatch, image)
    flow = FakeFlow()
    run = run_pipeline(pipeline_tree(lab / "repo", extra=extra), out=lab / out, flow_for=lambda s: flow,
                       registry=values(*(numbers or (10.0,))))
    return run, image


def test_a_run_archives_what_it_booted_its_pipeline_and_recipe_and_its_results(lab, monkeypatch, capfd):
    run, image = original_run(lab, monkeypatch)
    assert run.status == EXIT_OK
    archive = open_archive()
    record = archive.record(run.run_id)
    assert record is not None, capfd.readouterr().err
    manifest = json.loads((image / "manifest.json").read_text())
    got = record.images["fake"]
    assert {n: e.sha256 for n, e in got.artifacts.items()} == {n: a["sha256"] for n, a in manifest["artifacts"].items()}
    for name, entry in got.artifacts.items():  # the very bytes, named by their sha256, read-only
        path = archive.object_path(entry.sha256)
        assert path.read_bytes() == (image / name).read_bytes()
        assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert json.loads(archive.read(got.manifest, "manifest")) == manifest
    assert record.pipeline.path == "pipelines/p.yaml" and [r.path for r in record.recipes] == ["images/fake.yaml"]
    assert archive.read(record.pipeline, "p") == (lab / "repo" / "pipelines" / "p.yaml").read_bytes()
    assert set(record.files) == {"run.json", "results.csv"} and not record.missing
    assert f"archived run {run.run_id}" in capfd.readouterr().err
    assert not list((lab / "archive" / "tmp").glob("put-*"))  # nothing left half-made


def test_the_same_image_twice_is_one_object_and_archiving_again_writes_nothing(lab, monkeypatch):
    first, image = original_run(lab, monkeypatch, out="one")
    second, _ = original_run(lab, monkeypatch, out="two", image=image)
    archive = open_archive()
    a, b = archive.record(first.run_id), archive.record(second.run_id)
    assert a.images["fake"].artifacts == b.images["fake"].artifacts
    objects = archive.object_shas()
    again = archive_run(second.path, archive)
    assert again.unchanged and again.new_objects == 0 and archive.object_shas() == objects


def test_a_file_changed_since_the_run_is_named_and_its_image_left_out(lab, monkeypatch):
    image = fake_image(lab / "img")
    run, _ = original_run(lab, monkeypatch, image=image)
    archive = DirArchive(lab / "other-archive")
    (image / "Image").write_bytes(b"rebuilt with other bytes")
    done = archive_run(run.path, archive)
    assert "fake" not in done.record.images
    assert any(m.startswith("image fake: Image:") and "not the file the run booted" in m for m in done.record.missing)
    (image / "Image").unlink()
    done = archive_run(run.path, DirArchive(lab / "third"))
    assert any("Image: not in" in m and "any more" in m for m in done.record.missing)


def test_secrets_are_masked_in_every_archived_text_and_the_pipeline_says_so(lab, monkeypatch):
    monkeypatch.setenv("FARM_SECRET_TOKEN", "s3cr3t-value")
    from farm import secrets

    secrets.register_environment()
    image = fake_image(lab / "img")
    use_image(monkeypatch, image)
    flow = FakeFlow()
    pipeline = pipeline_tree(lab / "repo", extra="description: token s3cr3t-value and !secret\n")
    pipeline.write_text(pipeline.read_text().replace("and !secret\n", "and\n") + "repeats: 1\n")
    (lab / "repo" / "images" / "fake.yaml").write_text("name: fake\narch: arm64\ndescription: also s3cr3t-value\n"
                                                       "kernel: {package: linux-image-arm64}\n")
    run = run_pipeline(pipeline, out=lab / "run", flow_for=lambda s: flow, registry=values(1.0))
    archive = open_archive()
    record = archive.record(run.run_id)
    texts = [archive.read(e, "x") for e in record.objects().values() if e.size < 100_000]
    assert texts and not any(b"s3cr3t-value" in t for t in texts)
    assert record.pipeline.masked and record.recipes[0].masked
    with pytest.raises(JobError, match="held secrets and is archived masked.*--pipeline FILE"):
        reproduce(run.run_id, cache=lab / "empty", flow_for=lambda s: flow, registry=values(1.0))


def test_a_tampered_object_is_refused_naming_the_run_image_and_file(lab, monkeypatch):
    run, _ = original_run(lab, monkeypatch)
    archive = open_archive()
    entry = archive.record(run.run_id).images["fake"].artifacts["Image"]
    path = archive.object_path(entry.sha256)
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[1000] ^= 0xFF  # the same size: only its hash can tell
    path.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match=rf"run {run.run_id}: image fake: Image: corrupt in the archive.*refused"):
        reproduce(run.run_id, cache=lab / "empty", flow_for=lambda s: FakeFlow(), registry=values(1.0))
    assert not list((lab / "empty").glob("archive/images/fake-*"))  # nothing fetched under the name
    path.unlink()
    with pytest.raises(ArchiveError, match=rf"image fake: Image: missing from the archive .*{entry.sha256}"):
        reproduce(run.run_id, cache=lab / "empty2", flow_for=lambda s: FakeFlow(), registry=values(1.0))


def test_reproduce_boots_the_archived_bytes_from_an_empty_cache_and_judges_every_figure(lab, monkeypatch, capfd):
    run, image = original_run(lab, monkeypatch, 10.0, extra="boots: 5\n")  # 5 boots: enough for a verdict
    built: list = []
    use_image(monkeypatch, lab / "nowhere", built)  # nothing may be built: the archive's image is booted
    flow = FakeFlow()
    booted = []
    real_boot = flow.boot

    def boot(request):
        booted.append({n: hashlib.sha256((request.image.path / n).read_bytes()).hexdigest()
                       for n in request.image.manifest["artifacts"]})
        return real_boot(request)
    flow.boot = boot
    done = reproduce(run.run_id, out=lab / "again", cache=lab / "empty", flow_for=lambda s: flow,
                     registry=values(10.2))
    assert built == []
    manifest = json.loads((image / "manifest.json").read_text())
    assert booted == [{n: a["sha256"] for n, a in manifest["artifacts"].items()}] * 5
    assert str(lab / "empty") in str(done.run.info.images["fake"]["dir"])
    rep = done.reproduction
    assert rep.passed and done.exit_code == EXIT_OK and [f.verdict for f in rep.figures] == ["reproduced"]
    saved = json.loads((lab / "again" / "reproduction.json").read_text())
    assert saved["original_run_id"] == run.run_id and saved["verdict"] == "reproduced"
    assert "reproduced" in (lab / "again" / "reproduction.md").read_text()
    assert "<testcase" in (lab / "again" / "reproduction.xml").read_text()
    # the store knows the reproduction, the archive has it too (the same image objects)
    from farm.store.db import open_store
    from farm.store.reproductions import reproductions_of

    with open_store().connect() as c:
        [row] = reproductions_of(c, run.run_id)
    assert row.run_id == done.run.run_id and row.verdict == "reproduced"
    again = open_archive().record(done.run.run_id)
    assert again.images["fake"].artifacts == open_archive().record(run.run_id).images["fake"].artifacts
    assert "reproduction.json" in again.files


def test_a_figure_off_its_band_is_not_reproduced_and_exits_1(lab, monkeypatch):
    run, _ = original_run(lab, monkeypatch, 10.0, extra="boots: 5\n")
    done = reproduce(str(run.path), out=lab / "again", cache=lab / "empty", flow_for=lambda s: FakeFlow(),
                     registry=values(13.0))
    [figure] = done.reproduction.figures
    assert figure.verdict == "not reproduced" and figure.new_median == 13.0 and figure.original_median == 10.0
    assert (figure.original_n, figure.new_n) == (5, 5)
    assert done.exit_code == EXIT_TEST_FAILURE
    assert "failure" in (lab / "again" / "reproduction.xml").read_text()


def test_repeats_of_one_boot_are_one_value_so_one_boot_a_side_is_inconclusive_and_exits_4(lab, monkeypatch):
    run, _ = original_run(lab, monkeypatch, 10.0, extra="repeats_in_boot: 6\n")  # six repeats, one boot
    done = reproduce(run.run_id, out=lab / "again", cache=lab / "empty", flow_for=lambda s: FakeFlow(),
                     registry=values(10.0), min_boots=1)  # one boot a side has no interval: not judged
    [figure] = done.reproduction.figures
    assert (figure.verdict, figure.original_n, figure.new_n) == ("inconclusive", 1, 1)
    assert "no interval" in figure.note
    assert done.reproduction.verdict == "inconclusive" and done.exit_code == EXIT_INCONCLUSIVE == 4
    assert "<skipped" in (lab / "again" / "reproduction.xml").read_text()
    from farm.store.db import open_store
    from farm.store.reproductions import reproductions_of

    with open_store().connect() as c:
        [row] = reproductions_of(c, run.run_id)
    assert row.verdict == "inconclusive"


def test_an_original_of_one_boot_is_reproduced_with_enough_boots_by_its_prediction_interval(lab, monkeypatch):
    # issue #45: a 1-boot original (smoke, network) could never conclude; the reproduction boots the rule's
    # 5 times and says whether the original's value lies within what it measured
    run, _ = original_run(lab, monkeypatch, 10.0, extra="repeats_in_boot: 6\n")
    done = reproduce(run.run_id, out=lab / "again", cache=lab / "empty", flow_for=lambda s: FakeFlow(),
                     registry=values(10.2))
    [figure] = done.reproduction.figures
    assert (figure.verdict, figure.original_n, figure.new_n) == ("reproduced", 1, 5)
    assert figure.prediction == pytest.approx((10.2 * 0.95, 10.2 * 1.05))  # no spread: the threshold's band
    assert "lies within the new run's 95% prediction interval for 1 boot (from n=5" in figure.note
    assert done.exit_code == EXIT_OK
    assert "prediction" in (lab / "again" / "reproduction.md").read_text()
    far = reproduce(run.run_id, out=lab / "again2", cache=lab / "empty", flow_for=lambda s: FakeFlow(),
                    registry=values(13.0))
    assert far.reproduction.figures[0].verdict == "not reproduced" and far.exit_code == EXIT_TEST_FAILURE


def test_reproduce_refuses_a_run_that_is_not_archived_and_a_target_of_another_architecture(lab, monkeypatch):
    with pytest.raises(NotArchived, match="run 20200101-000000-beef is not in the archive"):
        reproduce("20200101-000000-beef", cache=lab / "c")
    run, _ = original_run(lab, monkeypatch)
    with pytest.raises(JobError, match="amd64, but run .* booted setup a on arm64 only"):
        reproduce(run.run_id, envs=[ENV.parent / "qemu-x86.yaml"], cache=lab / "c", flow_for=lambda s: FakeFlow(),
                  registry=values(1.0))
    with pytest.raises(JobError, match="neither a run directory nor a run id"):
        reproduce("../etc/passwd", cache=lab / "c")


def test_an_extra_kernel_argument_of_the_original_is_given_again(lab, monkeypatch):
    image = fake_image(lab / "img")
    use_image(monkeypatch, image)
    run = run_pipeline(pipeline_tree(lab / "repo"), out=lab / "run", flow_for=lambda s: FakeFlow(),
                       registry=values(1.0), extra_bootargs=["maxcpus=1"])
    seen = []
    flow = FakeFlow()
    real_boot = flow.boot
    flow.boot = lambda request: (seen.append(request.bootargs), real_boot(request))[1]
    reproduce(run.run_id, out=lab / "again", cache=lab / "empty", flow_for=lambda s: flow, registry=values(1.0))
    assert seen == [("maxcpus=1",)] * 5  # the original's one boot, and enough more to judge it


def test_a_fetched_image_that_was_damaged_in_the_cache_is_fetched_again(lab, monkeypatch, capfd):
    run, _ = original_run(lab, monkeypatch)
    first = reproduce(run.run_id, out=lab / "r1", cache=lab / "cache2", flow_for=lambda s: FakeFlow(),
                      registry=values(10.0))
    fetched = Path(first.run.info.images["fake"]["dir"])
    (fetched / "Image").write_bytes(b"damaged")
    second = reproduce(run.run_id, out=lab / "r2", cache=lab / "cache2", flow_for=lambda s: FakeFlow(),
                       registry=values(10.0))
    assert "is damaged (Image" in capfd.readouterr().err
    assert Path(second.run.info.images["fake"]["dir"]) == fetched
    assert hashlib.sha256((fetched / "Image").read_bytes()).hexdigest() == \
        first.original.record.images["fake"].artifacts["Image"].sha256


def test_an_import_is_not_archived_and_an_unwritable_archive_only_warns(lab, monkeypatch, capfd):
    from farm.archive.hook import archive_after

    folder = lab / "imp"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"imported_from": "x.csv"}))  # farm import's: no run id
    assert archive_after(folder) is False and not (lab / "archive" / "runs").exists()
    pytest_session = lab / "pytest-session"  # farm's pytest plugin: records and consoles, no run.json
    pytest_session.mkdir()
    (pytest_session / "results.csv").write_text("")
    assert archive_after(pytest_session) is False
    assert capfd.readouterr().err == ""  # nothing to say of either
    run, _ = original_run(lab, monkeypatch)
    monkeypatch.setenv("FARM_ARCHIVE", str(lab / "file"))
    (lab / "file").write_text("not a directory")
    assert archive_after(run.path) is False
    err = capfd.readouterr().err
    assert "warning: archive:" in err and f"farm archive {run.path}" in err


def test_put_refuses_bytes_that_are_not_the_recorded_sha256(tmp_path):
    archive = DirArchive(tmp_path / "a")
    source = tmp_path / "f"
    source.write_bytes(b"abc")
    from farm.archive.directory import SourceChanged

    with pytest.raises(SourceChanged):
        archive.put_file(source, Entry("0" * 64, 3))
    assert archive.object_shas() == set()
    good = Entry(hashlib.sha256(b"abc").hexdigest(), 3)
    assert archive.put_file(source, good) is True and archive.put_file(source, good) is False
    (tmp_path / "dest").mkdir()
    archive.fetch(good, tmp_path / "dest" / "x", "x")
    assert (tmp_path / "dest" / "x").read_bytes() == b"abc"


def test_where_a_reproduction_runs_the_original_s_env_files_the_farm_s_board_or_env(tmp_path, monkeypatch):
    from farm.archive.record import RunRecord
    from farm.archive.reproduce import Original, default_board, target_envs

    def original(**info):
        return Original(RunRecord("r1", "", "", "p", "passed", "", {}, (), {}), info, (), tmp_path)

    monkeypatch.chdir(tmp_path)
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "maaxboard.yaml").write_text("targets: {}\n")
    (tmp_path / "env" / "qemu-maaxboard.yaml").write_text("targets: {}\n")
    ran_here = original(envs=["env/qemu-maaxboard.yaml"])
    assert target_envs(ran_here, None, None) == [Path("env/qemu-maaxboard.yaml")]
    assert target_envs(ran_here, [Path("x.yaml")], None) == [Path("x.yaml")]
    assert target_envs(ran_here, None, "maaxboard") == [Path("env/maaxboard.yaml")]
    with pytest.raises(JobError, match="--farm board=pc: no env file env/pc.yaml"):
        target_envs(ran_here, None, "pc")
    elsewhere = original(envs=["/lab/env/board-3.yaml"])
    with pytest.raises(JobError, match="ran on /lab/env/board-3.yaml, which is not here: give .* --env FILE"):
        target_envs(elsewhere, None, None)
    assert default_board(ran_here) == "qemu-maaxboard"
    assert default_board(original(envs=["env/x.yaml"], place={"name": "m-1", "tags": {"board": "maaxboard"}})) \
        == "maaxboard"


def test_a_shuffled_order_drawn_for_the_original_is_run_again_in_the_same_order(lab, monkeypatch):
    """No seed in the pipeline: the original drew one (run.json records it); its reproduction uses it."""
    image = fake_image(lab / "img")
    use_image(monkeypatch, image)
    pipeline = pipeline_tree(lab / "repo", extra="boots: 5\norder: shuffled\nsettle: false\n")
    pipeline.write_text(pipeline.read_text().replace("setups: [{name: a}]", "setups: [{name: a}, {name: b}, {name: c}]"))
    run = run_pipeline(pipeline, out=lab / "run", flow_for=lambda s: FakeFlow(), registry=values(1.0))
    done = reproduce(run.run_id, out=lab / "again", cache=lab / "empty", flow_for=lambda s: FakeFlow(),
                     registry=values(1.0))
    original, again = run.info.experiment, done.run.info.experiment
    assert isinstance(original["seed"], int) and again["seed"] == original["seed"]
    assert again["plan"] == original["plan"] and len(again["plan"]) == 15


def test_a_target_of_another_board_type_is_refused_naming_both_unless_allowed(lab, monkeypatch, capfd):
    run, _ = original_run(lab, monkeypatch)  # on env/qemu-maaxboard.yaml: options.board maaxboard, arm64
    other = lab / "imx8mp.yaml"  # the same architecture, another board
    other.write_text(ENV.read_text().replace("board: maaxboard", "board: imx8mp-evk"))
    with pytest.raises(JobError, match=rf"imx8mp.yaml: board imx8mp-evk, but run {run.run_id} ran on board "
                       rf"maaxboard \(options.board of its env file .*qemu-maaxboard.yaml\).*--allow-other-board"):
        reproduce(run.run_id, envs=[other], cache=lab / "c", flow_for=lambda s: FakeFlow(), registry=values(10.0))
    done = reproduce(run.run_id, envs=[other], out=lab / "again", cache=lab / "c", flow_for=lambda s: FakeFlow(),
                     registry=values(10.0), allow_other_board=True)
    assert done.run.status == EXIT_OK and "reproducing there anyway (--allow-other-board)" in capfd.readouterr().err
    nameless = lab / "nameless.yaml"  # no options.board at all: not the same board type either
    nameless.write_text(ENV.read_text().replace("board: maaxboard", "flavour: x"))
    with pytest.raises(JobError, match=r"board \(none: no options.board\), but run .* ran on board maaxboard"):
        reproduce(run.run_id, envs=[nameless], cache=lab / "c", flow_for=lambda s: FakeFlow(), registry=values(1.0))


def test_the_original_s_board_type_is_its_place_s_tag_else_its_env_file_s(tmp_path):
    from farm.archive.record import RunRecord
    from farm.archive.reproduce import Original, original_board

    def original(**info):
        return Original(RunRecord("r1", "", "", "p", "passed", "", {}, (), {}), info, (), tmp_path)

    assert original_board(original(envs=[str(ENV)], place={"tags": {"board": "maaxboard-rev-b"}})) == \
        ("maaxboard-rev-b", "its farm place's board tag")
    assert original_board(original(envs=[str(ENV)]))[0] == "maaxboard"
    assert original_board(original(envs=["/lab/env/gone.yaml"])) is None  # only its architecture can be checked
