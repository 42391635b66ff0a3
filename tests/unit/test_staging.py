"""farm.boot.staging: path components that cannot escape, and per-job TFTP staging on a real labgrid Target."""

from __future__ import annotations

import os
from pathlib import Path

import labgrid
import pytest
from labgrid.resource import TFTPProvider

import farm.boot.drivers  # noqa: F401  (registers JobTFTPProviderDriver with labgrid)
from farm.boot.staging import JobTFTPProviderDriver, current_user, job_folder, safe_component
from farm.errors import JobError

# --- safe_component / job_folder ---

@pytest.mark.parametrize("bad", ["..", "../etc", "a..b", "/abs", "/", "a/b", "a\0b", "\0", "", ".", ".hidden",
                                 "-rf", "_x", "a b", "a\nb", "job\n", "a\\b", "a;b", "$(id)", "x" * 129, "é"])
def test_safe_component_refuses(bad):
    with pytest.raises(JobError) as info:
        safe_component(bad, "job id")
    assert str(info.value).startswith(f"unsafe job id {bad!r}: ")


@pytest.mark.parametrize("good", ["alice", "Image", "initrd.cpio.gz", "20261129-224807-71fa-maaxboard-twin-default-0",
                                  "a", "x" * 128, "g++", "v1.2_rc3"])
def test_safe_component_accepts(good):
    assert safe_component(good, "file name") == good


def test_job_folder():
    assert job_folder("alice", "20261129-224807-71fa-twin-default-0") == "alice/20261129-224807-71fa-twin-default-0"
    with pytest.raises(JobError, match=r"^unsafe user name '\.\.'"):
        job_folder("..", "job")
    with pytest.raises(JobError, match=r"^unsafe job id 'a/b'"):
        job_folder("alice", "a/b")
    with pytest.raises(JobError, match=r"^unsafe job id ''"):
        job_folder("alice", "")


def test_current_user_is_made_safe(monkeypatch):
    monkeypatch.setenv("LG_USERNAME", "Jane Doe/../x")
    assert current_user() == "Jane_Doe_.._x"
    # and it is then refused as a component, not silently used ('..' inside)
    with pytest.raises(JobError):
        job_folder(current_user(), "job")
    monkeypatch.setenv("LG_USERNAME", "ci-runner")
    assert job_folder(current_user(), "j1") == "ci-runner/j1"


# --- JobTFTPProviderDriver on a real labgrid Target ---

@pytest.fixture(autouse=True)
def _no_tftp_root_override(monkeypatch):
    """$LG_TFTP_ROOT overrides a local provider's root (farm.boot.lgenv); the boot tests' session
    fixture sets it, and these tests give the root themselves."""
    monkeypatch.delenv("LG_TFTP_ROOT", raising=False)


def _driver(root: Path, external: str = "") -> JobTFTPProviderDriver:
    target = labgrid.Target("twin")
    TFTPProvider(target, name=None, internal=str(root), external=external)
    driver = JobTFTPProviderDriver(target, name=None)
    target.activate(driver)
    return driver


@pytest.fixture
def files(tmp_path):
    """Two different kernels with the same name, as two builds would make them."""
    a, b = tmp_path / "build-a", tmp_path / "build-b"
    a.mkdir()
    b.mkdir()
    (a / "Image").write_bytes(b"kernel A")
    (b / "Image").write_bytes(b"kernel B")
    return a / "Image", b / "Image"


def test_two_jobs_same_name_do_not_overwrite(tmp_path, files):
    root = tmp_path / "tftp"
    root.mkdir()
    driver = _driver(root)
    assert driver.remote is False
    image_a, image_b = files
    assert driver.stage_as(str(image_a), "alice/job1", "Image") == "alice/job1/Image"
    assert driver.stage_as(str(image_b), "alice/job2", "Image") == "alice/job2/Image"
    link_a, link_b = root / "alice/job1/Image", root / "alice/job2/Image"
    assert link_a.is_symlink() and link_b.is_symlink()
    assert os.readlink(link_a) == str(image_a)
    assert os.readlink(link_b) == str(image_b)
    assert link_a.read_bytes() == b"kernel A"
    assert link_b.read_bytes() == b"kernel B"
    # nothing was put at the root, where labgrid's own stage() would link <root>/Image
    assert sorted(p.name for p in root.iterdir()) == ["alice"]
    assert sorted(p.name for p in (root / "alice").iterdir()) == ["job1", "job2"]


def test_staging_again_relinks_the_jobs_own_file(tmp_path, files):
    root = tmp_path / "tftp"
    root.mkdir()
    driver = _driver(root)
    image_a, image_b = files
    driver.stage_as(str(image_a), "alice/job1", "Image")
    driver.stage_as(str(image_b), "alice/job1", "Image")
    assert os.readlink(root / "alice/job1/Image") == str(image_b)


def test_stage_under_another_name_and_external_prefix(tmp_path, files):
    root = tmp_path / "tftp"
    root.mkdir()
    driver = _driver(root, external="boards/")
    assert driver.stage_as(str(files[0]), "bob/j", "vmlinuz") == "boards/bob/j/vmlinuz"
    assert (root / "bob/j/vmlinuz").read_bytes() == b"kernel A"


def test_root_with_trailing_slash(tmp_path, files):
    root = tmp_path / "tftp"
    root.mkdir()
    driver = _driver(Path(str(root) + "/"))
    assert _driver(root).stage_as(str(files[0]), "u/j", "Image") == "u/j/Image"
    assert driver.stage_as(str(files[1]), "u/k", "Image") == "u/k/Image"
    assert os.readlink(root / "u/k/Image") == str(files[1])


@pytest.mark.parametrize("folder, name", [
    ("../evil", "Image"), ("alice/..", "Image"), ("alice/../../x", "Image"), ("/etc", "Image"), ("alice//j", "Image"),
    ("alice/j/", "Image"), ("", "Image"), ("alice/.ssh", "Image"), ("alice/j", "../Image"), ("alice/j", "a/b"),
    ("alice/j", ".."), ("alice/j", ""), ("alice/j", "Image\n"), ("alice\0/j", "Image"),
])
def test_refuses_escaping_folders_and_names(tmp_path, files, folder, name):
    root = tmp_path / "tftp"
    root.mkdir()
    with pytest.raises(JobError, match="^unsafe "):
        _driver(root).stage_as(str(files[0]), folder, name)
    assert list(root.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build-a", "build-b", "tftp"]


def test_refuses_a_sibling_prefix_folder(tmp_path, files):
    """<root>/mallory -> <root>-evil: '<root>-evil/...' starts with '<root>' but is outside it."""
    root = tmp_path / "tftp"
    root.mkdir()
    evil = tmp_path / "tftp-evil"
    evil.mkdir()
    (root / "mallory").symlink_to(evil)
    driver = _driver(root)
    with pytest.raises(JobError) as info:
        driver.stage_as(str(files[0]), "mallory/job", "Image")
    assert str(info.value) == f"staging path {root}/mallory/job/Image is outside the TFTP root {root}"
    assert list(evil.iterdir()) == []
    # a link that stays inside the root is fine
    (root / "shared").mkdir()
    (root / "carol").symlink_to(root / "shared")
    assert driver.stage_as(str(files[0]), "carol/job", "Image") == "carol/job/Image"
    assert (root / "shared/job/Image").read_bytes() == b"kernel A"


def test_refuses_a_link_out_of_the_root(tmp_path, files):
    root = tmp_path / "tftp"
    root.mkdir()
    (root / "mallory").symlink_to("/")
    with pytest.raises(JobError, match="is outside the TFTP root"):
        _driver(root).stage_as(str(files[0]), "mallory/tmp", "Image")


def test_unstage_removes_only_that_job(tmp_path, files):
    root = tmp_path / "tftp"
    root.mkdir()
    driver = _driver(root)
    driver.stage_as(str(files[0]), "alice/job1", "Image")
    driver.stage_as(str(files[0]), "alice/job1", "initrd")
    driver.stage_as(str(files[1]), "alice/job2", "Image")
    driver.unstage("alice/job1")
    assert not (root / "alice/job1").exists()
    assert (root / "alice/job2/Image").read_bytes() == b"kernel B"
    assert files[0].read_bytes() == b"kernel A"  # the link went, not the file it pointed to
    driver.unstage("alice/job1")  # already gone: fine
    with pytest.raises(JobError):
        driver.unstage("alice/..")
    assert (root / "alice/job2/Image").exists()
