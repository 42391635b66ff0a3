"""The dashboard's pure parts: escaping, the failing excerpt, regression flags, the trend's cap."""

from __future__ import annotations

import re

from farm.dashboard import pages, runpage
from farm.dashboard.data import Trend, slug
from farm.store.history import Point, Series


def _series(medians, unit="bytes/s", spread=0.01, runs=None):
    points = tuple(Point(f"run-{i}", f"2026-12-01T{i % 24:02d}:00:00.000+00:00", (runs[i] if runs else f"run-{i}",),
                         m, m * (1 - spread), m * (1 + spread), "range", 3) for i, m in enumerate(medians))
    return Series("t", "s", "crypto", "openssl-speed", "", "throughput" if unit == "bytes/s" else "rtt_median",
                  unit, points)


def test_console_text_is_escaped_and_the_failing_lines_marked():
    text = "U-Boot 2023.01\n<script>alert(1)</script>\nTFTP error: 'File not found' (1)\nnothing & more\n"
    html, marked = runpage.highlight_console(text, ["tftpboot: TFTP error: 'File not found' (1)"])
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert marked == 1 and '<mark id="fail-0">TFTP error: &#39;File not found&#39; (1)</mark>' in html
    assert "nothing &amp; more" in html
    # the first U-Boot banner is how every boot starts: not marked
    assert "<mark" not in html.splitlines()[0]


def test_a_kernel_panic_is_marked_even_when_no_stage_names_it():
    html, marked = runpage.highlight_console("ok\nKernel panic - not syncing: VFS\n", [])
    assert marked == 1 and "<mark" in html.splitlines()[1]


def _values(medians, spread=0.01, n=5):
    """Each point's n values around its median (run-i: values), as the store holds them."""
    steps = (0, -1, 1, -0.5, 0.5)
    return {f"run-{i}": [m * (1 + spread * d) for d in steps[:n]] if n <= 5 else [m] * n
            for i, m in enumerate(medians)}


def test_regressions_follow_the_direction_of_the_unit_and_qualify_rules():
    # throughput: higher is better; a 20 % drop, 5 values a side, its interval wholly below 0.95, is a
    # regression (qualify's rule, farm compare's), a rise is not
    medians = [100.0, 80.0, 100.0]
    assert pages.flag_points(_series(medians), {}, _values(medians)) == ["", "regression", ""]
    # an RTT: lower is better; a 20 % rise is flagged
    medians = [100.0, 120.0, 100.0]
    assert pages.flag_points(_series(medians, unit="us"), {}, _values(medians)) == ["", "regression", ""]
    # within the noise (the interval straddles the band) or under the threshold: not flagged
    assert pages.flag_points(_series([100.0, 80.0]), {}, _values([100.0, 80.0], spread=0.2)) == ["", ""]
    assert pages.flag_points(_series([100.0, 97.0]), {}, _values([100.0, 97.0])) == ["", ""]
    assert pages.flag_points(_series([100.0, 101.0]), {"run-1": ["v1.2"]}, _values([100.0, 101.0])) == ["", "baseline"]


def test_fewer_than_five_values_a_side_are_never_a_regression():
    medians = [100.0, 50.0, 100.0]
    # 100 -> 50 with one value each, or four (an interval wholly below 0.95): fewer than the rule's 5, not judged
    assert pages.flag_points(_series(medians), {}, _values(medians, n=1)) == ["", "", ""]
    assert pages.flag_points(_series(medians), {}, _values(medians, n=4)) == ["", "", ""]
    assert pages.flag_points(_series(medians), {}) == ["", "", ""]  # no values known: nothing judged


def test_a_trend_page_draws_the_newest_points_only():
    series = _series([100.0 + i for i in range(pages.TREND_POINTS + 50)])
    html = pages.trend_page(Trend("crypto", "openssl-speed", "throughput", "bytes/s", 250), [series], {})
    assert html.count('<circle') == pages.TREND_POINTS
    assert f"the newest {pages.TREND_POINTS} of {pages.TREND_POINTS + 50} points" in html
    assert "run-249" in html and ">run-0<" not in html


def test_names_are_escaped_everywhere():
    hostile = '<b onmouseover="x">"quoted"</b>'
    series = _series([1.0, 2.0], runs=[hostile, "plain"])
    html = pages.trend_page(Trend("crypto", hostile, "throughput", "bytes/s", 2), [series], {hostile: ["<i>v1</i>"]})
    assert "<b " not in html and "<i>" not in html
    assert "&lt;b onmouseover=&#34;x&#34;&gt;" in html


def test_slugs_are_file_names_and_never_collide():
    assert slug("20261201-084157-97fc") == "20261201-084157-97fc"
    for text in ("a/b", "../x", "a--b", "a b", "<x>", "crypto.openssl-speed.throughput.bytes/s"):
        s = slug(text)
        assert "/" not in s and "--" not in s and not s.startswith(".") and s != text
    assert slug("a/b") != slug("a_b") and slug("a b") != slug("a/b")


def test_the_ratio_chart_colours_bars_by_better_or_worse():
    from farm.dashboard.render import macro
    from farm.dashboard.svg import ratio_chart

    svg = macro("charts.html", "ratio")(ratio_chart([("throughput", 1.5, "better"), ("rtt_median", 1.5, "worse"),
                                                     ("n", 1.004, "same")], "t"))
    bars = re.findall(r'<rect x="\d+" y="[\d.]+" width="[\d.]+" height="14" class="bar (\w+)">', svg)
    assert bars == ["better", "worse", "same"]
    assert 'class="one"' in svg and ">1.0</text>" in svg            # the line at 1.0
    assert ">better</text>" in svg and ">worse</text>" in svg      # a legend of what the colours mean


def test_the_dashboard_does_not_load_matplotlib():
    """matplotlib (0.6 s to import, and its objects slow every garbage collection of a 10,000-point
    trend query) is for PNGs; the dashboard draws SVG."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    proc = subprocess.run([sys.executable, "-c", "import sys, farm.dashboard.site, farm.dashboard.server; "
                           "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_only_the_dashboard_imports_jinja2():
    """The templates' engine is the dashboard's: farm's parser, every command's (``farm --help``), loads no
    jinja2, so no other command pays for it; the dashboard's pages do."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    check = ("import sys; from farm.cli import build_parser; build_parser(); "
             "assert 'jinja2' not in sys.modules, 'jinja2 loaded by the CLI'; "
             "import farm.dashboard.site; assert 'jinja2' in sys.modules; print('ok')")
    proc = subprocess.run([sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "ok", proc.stderr


def test_the_templates_are_package_data():
    """An installed farm (not an editable one: the clean-root check) holds every template the pages load."""
    import fnmatch
    import tomllib
    from pathlib import Path

    from tests.conftest import ROOT

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["farm"]
    templates = Path(pages.__file__).parent / "templates"
    found = [p.relative_to(ROOT / "farm").as_posix() for p in templates.rglob("*") if p.is_file()]
    assert "dashboard/templates/base.html" in found
    # setuptools' globs do not cross a "/" (fnmatch's do)
    assert [p for p in found if not any(fnmatch.fnmatchcase(p, g) and p.count("/") == g.count("/") for g in globs)] == []
