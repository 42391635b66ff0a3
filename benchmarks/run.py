#!/usr/bin/env python3
"""farm's own speed, measured side by side with a hand-written script and with LAVA.

    .venv/bin/python benchmarks/run.py [--boots N] [--quick] [--levers|--no-levers] [--out DIR]

In one run, on the same image and the same QEMU twin of the MaaXBoard:

- boot + 2 commands, N times each way, interleaved (so the host's load drifts over all alike):
  farm (farm.boot.session.boot_target + two LinuxTarget.run, in a child process: its own peak RSS),
  the naive pexpect script (benchmarks/naive_boot.py) and LAVA's lava-run (benchmarks/lava/, when
  installed);
- image build: cached (`farm build`, nothing changed) and cold (a fresh FARM_CACHE that shares only
  the downloaded .debs);
- two boards in parallel vs one (the virtual farm of `farm lab up` if it works, else two local twins);
- iperf3 through farm (farm.bench.network.run_iperf3) vs the same iperf3 command by hand, same twin;
- with --levers (default unless --quick): settings of the env file / recipe and labgrid driver changes,
  each on a temporary copy or in the benchmark's own child process, never by editing farm.

Every phase of every boot is timed from the outside by console markers (benchmarks/markers.py).
It prints the table (what, farm, baseline, ratio, target, met?) and writes results.json and
report.md into the output directory. Every process it starts (QEMU included) carries a token in its
environment and is stopped at the end, on Ctrl-C, SIGTERM and SIGHUP (benchmarks/supervision.py, on
farm.virtual.processes).

The parts: supervision.py (processes), hostload.py (the host's load), variants.py (env file and
recipe copies, edited as YAML data), speed_report.py (table and report.md), markers.py (phases).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from farm import signals  # noqa: E402
from hostload import LoadSampler  # noqa: E402
from markers import MarkerClock, phases  # noqa: E402
from speed_report import build_table, missed, render_report  # noqa: E402
from supervision import Processes  # noqa: E402
from variants import env_variant as _env_variant, recipe_variant as _recipe_variant  # noqa: E402

PY = sys.executable
ENV_TWIN = ROOT / "env" / "qemu-maaxboard.yaml"
ENV_BOARD = ROOT / "env" / "maaxboard.yaml"
RECIPE = ROOT / "images" / "maaxboard-bench.yaml"


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# --- one boot each way -------------------------------------------------------------------------

def farm_boot(procs: Processes, out: Path, image: Path, job: str, *, env: Path = ENV_TWIN,
              patches=(), bootargs=(), place: str | None = None, start_at: float | None = None,
              iperf: int = 0, iperf_duration: int = 3, extra_env: dict | None = None) -> subprocess.Popen:
    argv = [PY, str(HERE / "farm_boot.py"), "--env", str(env), "--image", str(image), "--job", job,
            "--log-dir", str(out / "console" / job)]
    for p in patches:
        argv += ["--patch", p]
    for b in bootargs:
        argv += ["--bootarg", b]
    if place:
        argv += ["--place", place]
    if start_at:
        argv += ["--start-at", repr(start_at)]
    if iperf:
        argv += ["--iperf", str(iperf), "--iperf-duration", str(iperf_duration)]
    return procs.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env={**procs.env, **(extra_env or {})}, cwd=ROOT)


def finish_farm(procs: Processes, proc: subprocess.Popen, t_start: float, timeout: float = 400) -> dict:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        procs.stop(proc)
        return {"ok": False, "error": "timeout"}
    wall = time.monotonic() - t_start
    procs.forget(proc)
    line = next((l for l in reversed(out.splitlines()) if l.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        return {"ok": False, "error": (err.strip().splitlines() or ["exit %s" % proc.returncode])[-1][-400:]}
    result = json.loads(line[len("RESULT "):])
    result.update(ok=True, wall=wall, phases=phases(result["marks"], result["seconds"]))
    return result


def run_farm(procs, out, image, job, **kw) -> dict:
    t0 = time.monotonic()
    return finish_farm(procs, farm_boot(procs, out, image, job, **kw), t0)


def run_naive(procs: Processes, image: dict, *, bootargs="console=ttyAMA0", blocksize=None,
              compressed=False, pass_lease=False) -> dict:
    argv = [PY, str(HERE / "naive_boot.py"), "--json", "--marks", "--kernel", image["kernel"],
            "--initrd", image["initrd"], "--bootargs", bootargs]
    if blocksize:
        argv += ["--blocksize", str(blocksize)]
    if compressed:
        argv.append("--compressed")
    if pass_lease:
        argv.append("--pass-lease")
    done, wall = procs.run(argv, timeout=300)
    if done.returncode != 0:
        return {"ok": False, "error": (done.stderr.strip().splitlines() or ["?"])[-1][-400:]}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result.update(ok=True, wall=wall, phases=phases(result.get("marks", {}), result["seconds"]))
    return result


LAVA_DIR = HERE / "lava"


def lava_missing() -> str | None:
    if not shutil.which("lava-run"):
        return "lava-run not found (Debian: apt-get install lava-dispatcher)"
    if not shutil.which("in.tftpd") or not Path("/etc/default/tftpd-hpa").exists():
        return "LAVA's tftp deploy needs tftpd-hpa's in.tftpd and /etc/default/tftpd-hpa (apt-get install tftpd-hpa)"
    return None


def lava_tftp_dir() -> str:
    text = Path("/etc/default/tftpd-hpa").read_text()
    m = re.search(r'^TFTP_DIRECTORY="?([^"\n]+)"?', text, re.M)
    return os.path.realpath(m.group(1) if m else "/srv/tftp")


def run_lava(procs: Processes, out: Path, image: dict, job_id: str) -> dict:
    work = out / "lava" / job_id
    work.mkdir(parents=True, exist_ok=True)
    pidfile = work / "qemu.pid"
    console = f"{LAVA_DIR / 'qemu-console.sh'} {lava_tftp_dir()} {pidfile}"
    (work / "device.yaml").write_text((LAVA_DIR / "device.yaml").read_text()
                                      .replace("@CONSOLE@", console).replace("@PIDFILE@", str(pidfile)))
    (work / "job.yaml").write_text((LAVA_DIR / "job.yaml").read_text()
                                   .replace("@KERNEL@", "file://" + image["kernel"])
                                   .replace("@INITRD@", "file://" + image["initrd"]))
    argv = ["lava-run", "--job-id", job_id, "--output-dir", str(work / "output"),
            "--device", str(work / "device.yaml"), "--dispatcher", str(LAVA_DIR / "dispatcher.yaml"),
            str(work / "job.yaml")]
    t_start = time.time()
    try:
        done, wall = procs.run(argv, timeout=400)
    finally:
        _kill_pidfile(procs, pidfile)
    log = done.stdout + done.stderr  # lava-run writes its JSON log lines to stderr
    (work / "lava.log").write_text(log)
    ok = bool(re.search(r'"case": "job", "definition": "lava", "result": "pass"', log))
    result = {"ok": ok and done.returncode == 0, "wall": wall, "seconds": wall}
    if not result["ok"]:
        result["error"] = f"lava-run exit {done.returncode}, see {work / 'lava.log'}"
        return result
    # the target's lines carry LAVA's own timestamps: the same markers, timed from lava-run's start
    clock = MarkerClock(t0=0.0)
    for line in log.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("lvl") == "target" and isinstance(entry.get("msg"), str):
            when = datetime.fromisoformat(entry["dt"]).timestamp() - t_start
            clock.feed((entry["msg"] + "\n").encode(), now=when)
    result["marks"] = clock.marks
    result["phases"] = phases(clock.marks, wall)
    return result


def _kill_pidfile(procs: Processes, pidfile: Path) -> None:
    try:
        pid = int(pidfile.read_text())
    except (OSError, ValueError):
        return
    procs.kill_if_ours(pid)  # still ours, not a reused pid


# --- env file / recipe variants (temporary copies, benchmarks/variants.py) ----------------------

def env_variant(tmp: Path, name: str, strategy_settings: dict | None = None, bootargs: str | None = None,
                qemu_settings: dict | None = None) -> Path:
    return _env_variant(ENV_TWIN, tmp, name, strategy_settings, bootargs, qemu_settings)


def recipe_variant(tmp: Path, name: str, *, compress: str | None = None, modules: list | None = None,
                   initrd_compress: str | None = None) -> Path:
    return _recipe_variant(RECIPE, tmp, name, compress=compress, modules=modules, initrd_compress=initrd_compress)


# --- builds --------------------------------------------------------------------------------------

def farm_build(procs: Processes, recipe: Path, env: dict | None = None) -> tuple[Path, float]:
    done, wall = procs.run([PY, "-m", "farm.cli", "build", str(recipe)], timeout=900, cwd=ROOT,
                           env={**procs.env, **(env or {})})
    if done.returncode != 0:
        raise RuntimeError(f"farm build {recipe} failed: {done.stderr.strip()[-600:]}")
    return Path(done.stdout.strip().splitlines()[-1]), wall


def image_files(path: Path, recipe: Path | None = None) -> dict:
    manifest = json.loads((path / "manifest.json").read_text())
    return {"dir": str(path), "recipe": str(recipe or ""), "kernel": str(path / manifest["kernel"]), "initrd": str(path / manifest["initrd"]),
            "compressed": manifest.get("kernel_compression", "none") != "none", "manifest": manifest}


def measure_builds(procs: Processes, out: Path, cached_n: int, cold_n: int) -> dict:
    say(f"build: {cached_n} cached, {cold_n} cold")
    cached = [farm_build(procs, RECIPE)[1] for _ in range(cached_n)]
    # in-process: the build() call alone, without the interpreter's start
    done, _ = procs.run([PY, "-c", "import sys,time; t=time.monotonic(); from farm.images.build import build; "
                         f"build({str(RECIPE)!r}); print(time.monotonic()-t)"], cwd=ROOT)
    call = float(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    home_cache = Path(os.environ.get("FARM_CACHE") or Path.home() / ".cache" / "farm")
    cold, same = [], []
    manifest = image_files(farm_build(procs, RECIPE)[0])["manifest"]
    reference = manifest["artifacts"]
    source_kernel = "kernel_source" in manifest  # a kernel built from source (farm/images/build.py)
    for _ in range(cold_n):
        with tempfile.TemporaryDirectory(prefix="farm-cold-") as tmp:
            os.symlink(home_cache / "debs", Path(tmp) / "debs")
            if source_kernel:  # the kernel's own cold build is minutes: measured apart (docs/images.md)
                os.symlink(home_cache / "kernels", Path(tmp) / "kernels")
            # farm bug: PackageCache.tree() needs pkgs/ but only download() makes it, so a cache with
            # every .deb present and no pkgs/ fails (FileNotFoundError); an empty pkgs/ is still cold
            (Path(tmp) / "pkgs").mkdir()
            path, wall = farm_build(procs, RECIPE, {"FARM_CACHE": tmp})
            cold.append(wall)
            same.append(image_files(path)["manifest"]["artifacts"] == reference)
    return {"cached": cached, "cached_call": call, "cold": cold, "cold_same_sha256": same,
            "cold_kernel_shared": source_kernel}


# --- sections ------------------------------------------------------------------------------------

def run_farm_cli(procs: Processes, out: Path, image: Path, job: str) -> dict:
    """`farm boot` as a CI job runs it: the CLI process from start to exit (boot, the facts it reports, power off)."""
    argv = [PY, "-m", "farm.cli", "boot", "--env", str(ENV_TWIN), "--image", str(image), "--job", job,
            "--log-dir", str(out / "console" / job), "--attempts", "1"]
    done, wall = procs.run(argv, timeout=300, cwd=ROOT)
    if done.returncode != 0:
        return {"ok": False, "error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1][-400:]}
    return {"ok": True, "wall": wall, "seconds": wall}


def section_main(procs, out, images: list[dict], boots, with_lava, mains: list[dict]) -> list[dict]:
    """Every way on every image, ``boots`` rounds; each round runs the images one after the other and, per
    image, the ways in a rotated order, so the host's load drifts over all of them alike. Fills ``mains``
    as it goes (an interrupted run keeps the boots it measured)."""
    mains[:] = [{"image": img["manifest"]["name"], "recipe": img["recipe"], "lean": "kernel_source" in img["manifest"],
              "farm": [], "naive": [], "lava": [], "cli": []} for img in images]
    ways = ["naive", "farm", "cli"] + (["lava"] if with_lava else [])
    for r in range(boots):
        for i, (image, results) in enumerate(zip(images, mains)):
            order = ways[(r + i) % len(ways):] + ways[:(r + i) % len(ways)]  # rotate who goes first
            for way in order:
                job = f"{os.getpid()}-{i}-{r}"
                if way == "farm":
                    res = run_farm(procs, out, Path(image["dir"]), f"bench-{job}-main")
                elif way == "naive":
                    res = run_naive(procs, image)
                elif way == "cli":
                    res = run_farm_cli(procs, out, Path(image["dir"]), f"bench-{job}-cli")
                else:
                    res = run_lava(procs, out, image, f"{os.getpid()}{i}{r:03d}")  # LAVA's dirs are per job id
                results[way].append(res)
                say(f"main {r + 1}/{boots} {results['image']} {way:5}: " + (
                    f"{res['seconds']:.2f} s (process {res['wall']:.2f} s)" if res["ok"] else f"FAILED {res['error']}"))
    return mains


def section_guest(procs, out, recipes: list[Path], runs: int, found: list[dict]) -> list[dict]:
    """benchmarks/guest_boot.py for each recipe (host and guest of the same recipe): the host's bare boot
    beside ``runs`` guest boots, host ready -> guest FARM-READY. Fills ``found`` as it goes."""
    for recipe in recipes:
        say(f"guest: {recipe.name}, {runs} guest boots")
        done, wall = procs.run([PY, str(HERE / "guest_boot.py"), "--recipe", str(recipe), "--runs", str(runs),
                                "--log", str(out / "console" / f"guest-{recipe.stem}"), "--json"],
                               timeout=300 + 120 * runs, cwd=ROOT)
        if done.returncode != 0:
            found.append({"recipe": str(recipe), "ok": False,
                          "error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1][-400:]})
            say(f"guest {recipe.name}: FAILED {found[-1]['error']}")
            continue
        result = json.loads(done.stdout.strip().splitlines()[-1])
        found.append({"recipe": str(recipe), "ok": True, "wall": wall, **result})
        say(f"guest {recipe.name}: host boot {result['host_seconds']:.2f} s, guest "
            + ", ".join(f"{s:.2f}" for s in result["guest_seconds"]) + " s")
    return found


def suite_results(paths: list[Path]) -> dict:
    """The newest results of benchmarks/suite_time.py, fresh and warm (results/suite-{fresh,warm}-*/), or
    the directories given: what the suite rows of the table show (the suite takes half an hour: not run here)."""
    found: dict = {}
    for path in paths:
        try:
            data = json.loads((path / "results.json").read_text())
        except (OSError, ValueError):
            continue
        data.pop("cases", None), data.pop("load_samples", None)
        found.setdefault(data.get("mode", path.name), {**data, "dir": str(path)})
    return found


def section_parallel(procs, out, image, rounds, use_lab: bool = True, cpus: int = 4) -> dict:
    """One board alone vs two at once, each twin with ``cpus`` vCPUs (1: two boards fit on 2 host cores, so
    the figure is farm's coordination rather than TCG's share of the host)."""
    lab_dir = Path(tempfile.mkdtemp(prefix="farm-bench-lab-"))
    (out / "variants").mkdir(parents=True, exist_ok=True)
    local_env = env_variant(out / "variants", f"smp{cpus}", qemu_settings={"extra_args": f"-smp {cpus}"})
    mode, extra_env, env, places = "local twins", {}, local_env, [None, None]
    note = "" if use_lab else "local twins asked for (--parallel local)"
    try:
        if not use_lab:
            raise _Local()
        done, wall = procs.run([PY, "-m", "farm.cli", "lab", "up", "--boards", "maaxboard=2", "--cpus", str(cpus),
                                "--dir", str(lab_dir)], timeout=180, cwd=ROOT)
        m = re.search(r"export LG_COORDINATOR=(\S+)", done.stdout)
        if done.returncode == 0 and m:
            mode, extra_env, env = "farm lab (virtual farm)", {"LG_COORDINATOR": m.group(1)}, ENV_BOARD
            places = ["maaxboard-1", "maaxboard-2"]
            say(f"parallel: farm lab up in {wall:.1f} s, coordinator {m.group(1)}")
        else:
            note = "farm lab up failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
            say(note + "; using two local twins")
    except _Local:
        pass
    except Exception as exc:  # noqa: BLE001 - fall back to local twins, say why
        note = f"farm lab up failed: {exc}"
        say(note + "; using two local twins")
    single, pair = [], []
    try:
        for r in range(rounds):
            res = run_farm(procs, out, Path(image["dir"]), f"bench-{os.getpid()}-one-{r}", env=env,
                           place=places[0], extra_env=extra_env)
            single.append(res)
            start_at = time.time() + 4  # both processes imported, places locked: start the boots together
            t0 = time.monotonic()
            children = [farm_boot(procs, out, Path(image["dir"]), f"bench-{os.getpid()}-two-{r}-{i}", env=env,
                                  place=places[i], start_at=start_at, extra_env=extra_env) for i in (0, 1)]
            both = [finish_farm(procs, c, t0) for c in children]
            if all(b.get("ok") for b in both):
                skew = abs(both[0]["t0_wall"] - both[1]["t0_wall"])
                for b in both:
                    b["start_skew"] = skew
            pair.append(both)
            say(f"parallel {cpus} vCPU {r + 1}/{rounds}: one {_fmt(res)}, two {' / '.join(_fmt(b) for b in both)}")
    finally:
        if mode.startswith("farm lab"):
            done, _ = procs.run([PY, "-m", "farm.cli", "lab", "down", "--dir", str(lab_dir)], timeout=120, cwd=ROOT)
            if done.returncode != 0:
                say("farm lab down: " + done.stderr.strip()[-300:])
        shutil.rmtree(lab_dir, ignore_errors=True)
    return {"mode": mode, "note": note, "single": single, "pair": pair, "cpus": cpus}


class _Local(Exception):
    pass


def _fmt(res: dict) -> str:
    return f"{res['seconds']:.2f} s" if res.get("ok") else f"FAILED ({res.get('error')})"


def section_iperf(procs, out, image, pairs, duration) -> dict:
    res = run_farm(procs, out, Path(image["dir"]), f"bench-{os.getpid()}-iperf", iperf=pairs,
                   iperf_duration=duration)
    if res.get("ok"):
        say("iperf3: farm " + ", ".join(f"{v / 1e6:.0f}" for v in res["iperf_farm_bps"]) + " Mbit/s; by hand "
            + ", ".join(f"{v / 1e6:.0f}" for v in res["iperf_hand_bps"]) + " Mbit/s")
    else:
        say(f"iperf3: FAILED {res.get('error')}")
    return res


def section_levers(procs, out, image, boots) -> dict:
    """Each lever on a temporary copy of the env file / recipe, or as a patch in farm's child process;
    interleaved with farm as configured, so that each round sees the same load."""
    tmp = out / "variants"
    tmp.mkdir(parents=True, exist_ok=True)
    builds = {}
    say("levers: building the recipe variants")
    gz_path, gz_wall = farm_build(procs, recipe_variant(tmp, "gzip", compress="gzip"))
    builds["gzip"] = gz_wall
    other_rd = "gzip" if image["manifest"].get("initrd_compression", "gzip") != "gzip" else "zstd"
    rd_path, builds[f"initrd-{other_rd}"] = farm_build(procs, recipe_variant(tmp, f"initrd-{other_rd}",
                                                                            initrd_compress=other_rd))
    gz_img, rd_img = image_files(gz_path), image_files(rd_path)
    has_modules = bool(image["manifest"].get("modules"))  # a lean kernel has every driver built in
    mods_img = None
    if has_modules:
        mods_path, builds["twin-modules"] = farm_build(procs, recipe_variant(tmp, "twin-modules",
                                                                             modules=["virtio_net", "virtio_pci"]))
        mods_img = image_files(mods_path)
    variants = [
        ("farm as configured", {}),
        ("recipe kernel.compress: gzip", {"image": gz_img}),
        (f"recipe initrd.compress: {other_rd}", {"image": rd_img}),
        *[(f"env tftp_blocksize: {n}", {"env": env_variant(tmp, f"bs{n}", {"tftp_blocksize": n})})
          for n in (1468, 4096, 8192, 16384)],
        ("env tftp_windowsize: 8", {"env": env_variant(tmp, "ws8", {"tftp_windowsize": 8})}),
        *([("recipe twin-only modules (virtio_net, virtio_pci)", {"image": mods_img})] if has_modules else []),
        ("env bootargs without quiet", {"env": env_variant(tmp, "noquiet", bootargs="")}),
        ("env bootargs quiet loglevel=1", {"env": env_variant(tmp, "loglevel1", bootargs="quiet loglevel=1")}),
        ("env pass_lease: false", {"env": env_variant(tmp, "nolease", {"pass_lease": False})}),
        ("patch back: labgrid's _check_prompt before every shell command", {"patches": ["check-prompt-always"]}),
        ("patch U-Boot commands batched (&&)", {"patches": ["batch-uboot"]}),
        ("gzip + batched U-Boot", {"image": gz_img, "patches": ["batch-uboot"]}),
        ("naive script with farm's settings (quiet, lease)", {"naive": {"bootargs": "console=ttyAMA0 quiet",
                                                                       "pass_lease": True}}),
        ("naive script as in main (baseline)", {"naive": {}}),
    ]
    say("levers: labgrid driver round trips on a live twin (benchmarks/drivers_micro.py)")
    done, _ = procs.run([PY, str(HERE / "drivers_micro.py"), "--env", str(ENV_TWIN), "--image", image["dir"],
                         "--job", f"bench-{os.getpid()}-micro", "--log-dir", str(out / "console" / "micro"),
                         "-n", "40"], timeout=400, cwd=ROOT)
    line = next((l for l in reversed(done.stdout.splitlines()) if l.startswith("RESULT ")), None)
    micro = json.loads(line[len("RESULT "):]) if line else {"error": done.stderr.strip()[-400:]}
    results = {name: [] for name, _ in variants}
    for r in range(boots):
        for i, (name, v) in enumerate(variants):
            if "naive" in v:
                res = run_naive(procs, image, **v["naive"])
            else:
                img = v.get("image", image)
                res = run_farm(procs, out, Path(img["dir"]), f"bench-{os.getpid()}-lever{i}-{r}",
                               env=v.get("env", ENV_TWIN), patches=v.get("patches", ()))
            results[name].append(res)
            say(f"lever {r + 1}/{boots} {name}: {_fmt(res)}")
    sizes = {"as configured": image["manifest"]["artifacts"], "Image.gz": gz_img["manifest"]["artifacts"],
             f"initrd {other_rd}": rd_img["manifest"]["artifacts"],
             **({"twin-modules initrd": mods_img["manifest"]["artifacts"]} if mods_img else {})}
    return {"builds": builds, "results": results, "sizes": sizes, "micro": micro}



def main() -> int:
    p = argparse.ArgumentParser(description="farm's own speed vs a hand-written script and LAVA")
    p.add_argument("--boots", type=int, help="boots per way in the main comparison (default 5; --quick 3)")
    p.add_argument("--quick", action="store_true", help="fewer boots, no levers: under ~5 minutes")
    p.add_argument("--levers", action=argparse.BooleanOptionalAction, default=None,
                   help="measure the levers too (default: on, off with --quick)")
    p.add_argument("--lever-boots", type=int, help="boots per lever (default 4)")
    p.add_argument("--only", help="comma-separated sections: main,guest,build,parallel,iperf,levers (and suite: the "
                   "newest results of benchmarks/suite_time.py, read, not run)")
    p.add_argument("--iperf-pairs", type=int, help="farm/by-hand iperf3 pairs (default 6; --quick 3)")
    p.add_argument("--iperf-duration", type=int, help="seconds per iperf3 run (default 5; --quick 3)")
    p.add_argument("--parallel", choices=("lab", "local"), default="lab",
                   help="two boards at once on the virtual farm (default; local twins if it fails) or local twins")
    p.add_argument("--parallel-cpus", default="1,4", metavar="N[,N]",
                   help="vCPUs of each twin in the parallel section, one measurement each (default 1,4; the target "
                   "applies to 1: two boards of 1 vCPU fit on 2 host cores)")
    p.add_argument("--out", help="output directory (default results/speed-<time>)")
    p.add_argument("--recipe", help="one image recipe all ways boot, in every section (default: --recipes)")
    p.add_argument("--recipes", default="images/maaxboard-bench.yaml,images/maaxboard-lean.yaml", metavar="R[,R]",
                   help="the main section's images, side by side (default: the bench image with Debian's kernel and "
                   "the lean one, its kernel built from source); the other sections boot the first")
    p.add_argument("--guest-runs", type=int, help="guest boots per recipe in the guest section (default 5; --quick 3)")
    p.add_argument("--suite-results", metavar="DIR[,DIR]",
                   help="benchmarks/suite_time.py result directories for the suite rows (default: the newest "
                   "results/suite-fresh-* and results/suite-warm-*)")
    args = p.parse_args()
    boots = args.boots or (3 if args.quick else 5)
    levers = args.levers if args.levers is not None else not args.quick
    global RECIPE
    recipes = [Path(args.recipe).resolve()] if args.recipe else \
        [(ROOT / r if not Path(r).is_absolute() else Path(r)).resolve() for r in args.recipes.split(",") if r]
    RECIPE = recipes[0]
    sections = set((args.only or "main,guest,build,parallel,iperf,levers,suite").split(","))
    if not levers:
        sections.discard("levers")
    out = Path(args.out or ROOT / "results" / f"speed-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    out.mkdir(parents=True, exist_ok=True)

    procs = Processes()
    sampler = LoadSampler(procs)
    sampler.start()
    data: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "boots": boots, "quick": args.quick,
                  "host": {"cpus": os.cpu_count(), "loadavg_at_start": Path("/proc/loadavg").read_text().split()[:3]}}
    git = lambda *a: subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout  # noqa: E731
    data["farm_version"] = {"commit": git("rev-parse", "--short", "HEAD").strip(),
                            "changed": [l[3:] for l in git("status", "--porcelain", "--", "farm", "env", "images")
                                        .splitlines() if l.strip()]}
    t_start = time.monotonic()
    try:
        say(f"building the images (cached if unchanged); results in {out}")
        images = [image_files(farm_build(procs, r)[0], r) for r in recipes]
        image = images[0]
        data["image"] = {"recipe": str(RECIPE), **{k: image[k] for k in ("dir", "kernel", "initrd")}}
        data["images"] = [{k: i[k] for k in ("recipe", "dir", "kernel", "initrd")} for i in images]
        data["lava_skipped"] = lava_missing()
        if data["lava_skipped"]:
            say(f"LAVA skipped: {data['lava_skipped']}")
        sec_t = {}
        for name in ("main", "guest", "build", "parallel", "iperf", "levers", "suite"):
            if name not in sections:
                continue
            t0 = time.monotonic()
            try:
                run_section(name, data, procs, out, images, boots, args, recipes)
            except Exception as exc:  # noqa: BLE001 - keep every other section's figures; say what failed
                say(f"section {name} FAILED: {type(exc).__name__}: {exc}")
                data.setdefault("failed_sections", {})[name] = f"{type(exc).__name__}: {exc}"
            sec_t[name] = {"seconds": time.monotonic() - t0, **sampler.summary(since=t0)}
        data["sections"] = sec_t
    except KeyboardInterrupt:
        say("interrupted: stopping everything this run started; what was measured is kept")
        data["interrupted"] = True
        raise
    finally:
        leftovers = procs.cleanup()
        sampler.stopped.set()
        if leftovers:
            say(f"killed {len(leftovers)} leftover process(es) of this run: {leftovers}")
        if data.get("interrupted"):
            write_results(data, out, sampler, t_start)
    return write_results(data, out, sampler, t_start)


def write_results(data: dict, out: Path, sampler, t_start: float) -> int:
    """results.json and report.md (also of an interrupted run: its boots so far); the table printed."""
    data["seconds"] = time.monotonic() - t_start
    data["load"] = sampler.summary()
    rows = build_table(data)
    text = render_report(data, rows)
    (out / "results.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    (out / "report.md").write_text(text)
    print(text)
    print(f"\n(results.json and report.md in {out})")
    return 1 if missed(rows) or data.get("failed_sections") else 0


def run_section(name: str, data: dict, procs, out: Path, images: list[dict], boots: int, args, recipes) -> None:
    image = images[0]
    if name == "main":
        data["mains"] = []
        section_main(procs, out, images, boots, not data["lava_skipped"], data["mains"])
        data["main"] = data["mains"][0]  # the first image's, where the levers and older reports look
    elif name == "guest":
        lean = [r for r, i in zip(recipes, images) if "kernel_source" in i["manifest"]]
        data["guest"] = []
        section_guest(procs, out, list(dict.fromkeys([*lean, *recipes])), args.guest_runs or (3 if args.quick else 5),
                      data["guest"])
    elif name == "suite":
        paths = [Path(p) for p in args.suite_results.split(",")] if args.suite_results else [
            d for mode in ("fresh", "warm") for d in sorted((ROOT / "results").glob(f"suite-{mode}-*"))[-1:]]
        data["suite"] = suite_results(paths)
    elif name == "build":
        data["build"] = measure_builds(procs, out, 3, 1 if args.quick else 2)
    elif name == "parallel":
        data["parallel"] = [section_parallel(procs, out, image, 2 if args.quick else 3, args.parallel == "lab", int(n))
                            for n in args.parallel_cpus.split(",")]
    elif name == "iperf":
        data["iperf"] = section_iperf(procs, out, image, args.iperf_pairs or (3 if args.quick else 6),
                                     args.iperf_duration or (3 if args.quick else 5))
    elif name == "levers":
        data["levers"] = section_levers(procs, out, image, args.lever_boots or 4)


if __name__ == "__main__":
    # Ctrl-C even when started with SIGINT ignored (a background job); SIGTERM and SIGHUP: farm.signals
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(signals.run(main))
