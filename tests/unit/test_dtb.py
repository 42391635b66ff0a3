"""farm.boot.dtb: which DTB names an env file may give, and which of an image's DTBs it may boot."""

from __future__ import annotations

import pytest

from farm.boot.dtb import dtb_name_problem, dtb_record, image_dtb_problem, image_dtbs

SHA = "ab" * 32
LEAN = {"name": "maaxboard-lean", "dtbs": ["imx8mq-evk.dtb"],
        "artifacts": {"Image": {"sha256": SHA, "size": 1}, "imx8mq-evk.dtb": {"sha256": SHA, "size": 2}}}
DEBIAN = {"name": "maaxboard-bench", "artifacts": {"Image": {"sha256": SHA, "size": 1}}}


@pytest.mark.parametrize("good", ["", "imx8mq-evk.dtb", "qemu-virt-2cpu.dtb", "a_b+c.dtb", "X.dtb"])
def test_good_names(good):
    assert dtb_name_problem(good) is None


@pytest.mark.parametrize("bad", ["freescale/imx8mq-evk.dtb", "../x.dtb", "x..dtb", ".x.dtb", "-x.dtb", "x.dtb;reset",
                                 "$(id).dtb", "${fdtfile}", "x dtb", "x.dtb\n", "'x.dtb'", "x" * 129])
def test_bad_names(bad):
    assert "characters not allowed on a U-Boot command line" in dtb_name_problem(bad)


def test_not_a_string():
    assert dtb_name_problem(3) == "a DTB file name must be a string, not int"


def test_image_has_it():
    assert image_dtbs(LEAN) == ["imx8mq-evk.dtb"]
    assert image_dtb_problem("imx8mq-evk.dtb", LEAN) is None


def test_image_lacks_it_lists_what_it_has():
    assert image_dtb_problem("imx8mq-maaxboard.dtb", LEAN) == \
        "'imx8mq-maaxboard.dtb' is not a DTB of image 'maaxboard-lean' (it has: imx8mq-evk.dtb)"


def test_image_with_no_dtb_says_so():
    problem = image_dtb_problem("imx8mq-evk.dtb", DEBIAN)
    assert problem.startswith("'imx8mq-evk.dtb': image 'maaxboard-bench' has no DTB")
    assert "leave dtb empty to boot U-Boot's own device tree" in problem


def test_listed_but_not_an_artifact_is_not_there():
    # a manifest edited by hand: a DTB without its sha256 is not served
    assert image_dtbs({**LEAN, "artifacts": {"Image": LEAN["artifacts"]["Image"]}}) == []
    assert image_dtbs({**LEAN, "dtbs": "imx8mq-evk.dtb"}) == []


def test_record():
    assert dtb_record("", DEBIAN) == "u-boot"
    assert dtb_record("imx8mq-evk.dtb", LEAN) == {"name": "imx8mq-evk.dtb", "sha256": SHA}
