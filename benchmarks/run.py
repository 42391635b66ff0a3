#!/usr/bin/env python3
"""farm's own speed, measured side by side with a hand-written script and with LAVA.

    .venv/bin/python benchmarks/run.py [--boots N] [--quick] [--levers|--no-levers] [--out DIR]

In one run, on the same image and the same QEMU twin of the MaaXBoard:

- boot + 2 commands, N times each way, interleaved (so the host's load drifts over all alike):
  farm (farm.boot.session.boot_target + two BootedTarget.run, in a child process: its own peak RSS),
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
environment and is killed at the end, on Ctrl-C and on SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from markers import PHASES, MarkerClock, phases  # noqa: E402

PY = sys.executable
ENV_TWIN = ROOT / "env" / "qemu-maaxboard.yaml"
ENV_BOARD = ROOT / "env" / "maaxboard.yaml"
RECIPE = ROOT / "images" / "maaxboard-bench.yaml"
TOKEN_VAR = "FARM_BENCH_TOKEN"
TOKEN = uuid.uuid4().hex


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# --- processes: every child in its own session, all of them (and theirs) killed at the end -----

class Processes:
    def __init__(self):
        self.children: list[subprocess.Popen] = []
        self.env = {**os.environ, TOKEN_VAR: TOKEN}

    def popen(self, argv, **kw) -> subprocess.Popen:
        kw.setdefault("env", self.env)
        proc = subprocess.Popen(argv, start_new_session=True, **kw)
        self.children.append(proc)
        return proc

    def run(self, argv, timeout: float = 600, **kw) -> tuple[subprocess.CompletedProcess, float]:
        """Run to the end; returns the completed process and its wall time (start to exit)."""
        t0 = time.monotonic()
        proc = self.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop(proc)
            out, err = proc.communicate()
            raise RuntimeError(f"{argv[:3]} did not finish within {timeout:.0f} s") from None
        finally:
            if proc in self.children and proc.poll() is not None:
                self.children.remove(proc)
        return subprocess.CompletedProcess(argv, proc.returncode, out, err), time.monotonic() - t0

    @staticmethod
    def stop(proc: subprocess.Popen, grace: float = 10) -> None:
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # farm's child unwinds: power off, unstage
            proc.wait(grace)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()

    def tokened_pids(self) -> list[int]:
        """Processes started by this run at any depth (QEMU in a pexpect session included)."""
        mine = []
        needle = f"{TOKEN_VAR}={TOKEN}".encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        mine.append(int(entry))
            except OSError:
                continue
        return mine

    def cleanup(self) -> list[int]:
        for proc in list(self.children):
            self.stop(proc)
        self.children.clear()
        leftovers = self.tokened_pids()
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return leftovers


class LoadSampler(threading.Thread):
    """The machine's 1-minute load average and the other QEMUs running (not ours), every second."""

    def __init__(self, procs: Processes):
        super().__init__(daemon=True)
        self.procs = procs
        self.samples: list[tuple[float, float, int]] = []  # (time, loadavg1, other qemus)
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(1.0):
            load = float(Path("/proc/loadavg").read_text().split()[0])
            self.samples.append((time.monotonic(), load, self._other_qemus()))

    def _other_qemus(self) -> int:
        mine = set(self.procs.tokened_pids())
        count = 0
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) not in mine:
                try:
                    if Path(f"/proc/{entry}/comm").read_text().startswith("qemu-system"):
                        count += 1
                except OSError:
                    pass
        return count

    def summary(self, since: float = 0.0) -> dict:
        rows = [s for s in self.samples if s[0] >= since]
        if not rows:
            load = float(Path("/proc/loadavg").read_text().split()[0])
            return {"load_min": load, "load_median": load, "load_max": load, "other_qemus_max": 0}
        loads = [r[1] for r in rows]
        return {"load_min": min(loads), "load_median": statistics.median(loads), "load_max": max(loads),
                "other_qemus_max": max(r[2] for r in rows)}


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
    procs.children.remove(proc)
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
        _kill_pidfile(pidfile)
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


def _kill_pidfile(pidfile: Path) -> None:
    try:
        pid = int(pidfile.read_text())
    except (OSError, ValueError):
        return
    try:
        if TOKEN.encode() in Path(f"/proc/{pid}/environ").read_bytes():  # still ours, not a reused pid
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


# --- builds --------------------------------------------------------------------------------------

def farm_build(procs: Processes, recipe: Path, env: dict | None = None) -> tuple[Path, float]:
    done, wall = procs.run([PY, "-m", "farm.cli", "build", str(recipe)], timeout=900, cwd=ROOT,
                           env={**procs.env, **(env or {})})
    if done.returncode != 0:
        raise RuntimeError(f"farm build {recipe} failed: {done.stderr.strip()[-600:]}")
    return Path(done.stdout.strip().splitlines()[-1]), wall


def image_files(path: Path) -> dict:
    manifest = json.loads((path / "manifest.json").read_text())
    return {"dir": str(path), "kernel": str(path / manifest["kernel"]), "initrd": str(path / manifest["initrd"]),
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
    reference = image_files(farm_build(procs, RECIPE)[0])["manifest"]["artifacts"]
    for _ in range(cold_n):
        with tempfile.TemporaryDirectory(prefix="farm-cold-") as tmp:
            os.symlink(home_cache / "debs", Path(tmp) / "debs")
            # farm bug: PackageCache.tree() needs pkgs/ but only download() makes it, so a cache with
            # every .deb present and no pkgs/ fails (FileNotFoundError); an empty pkgs/ is still cold
            (Path(tmp) / "pkgs").mkdir()
            path, wall = farm_build(procs, RECIPE, {"FARM_CACHE": tmp})
            cold.append(wall)
            same.append(image_files(path)["manifest"]["artifacts"] == reference)
    return {"cached": cached, "cached_call": call, "cold": cold, "cold_same_sha256": same}


# --- env file / recipe variants (temporary copies) -----------------------------------------------

def env_variant(tmp: Path, name: str, strategy_settings: dict | None = None, bootargs: str | None = None) -> Path:
    text = ENV_TWIN.read_text()
    if bootargs is not None:
        text, n = re.subn(r'(\n\s+bootargs: )"[^"]*"', lambda m: f'{m.group(1)}"{bootargs}"', text)
        assert n == 1, "bootargs line not found in the env file"
    if strategy_settings:
        lines = "".join(f"        {k}: {json.dumps(v)}\n" for k, v in strategy_settings.items())
        text, n = re.subn(r"(\n      UBootNetbootStrategy:\n)", lambda m: m.group(1) + lines, text)
        assert n == 1, "UBootNetbootStrategy not found in the env file"
    path = tmp / f"env-{name}.yaml"
    path.write_text(text)
    return path


def recipe_variant(tmp: Path, name: str, *, compress: str | None = None, modules: list | None = None) -> Path:
    import yaml

    doc = yaml.safe_load(RECIPE.read_text())
    if compress:
        doc["kernel"]["compress"] = compress
    if modules is not None:
        doc["kernel"]["modules"] = modules
    for program in doc.get("programs") or []:
        program["source"] = str((RECIPE.parent / program["source"]).resolve())
    path = tmp / f"recipe-{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


# --- sections ------------------------------------------------------------------------------------

def section_main(procs, out, image, boots, with_lava) -> dict:
    results = {"farm": [], "naive": [], "lava": []}
    ways = ["naive", "farm"] + (["lava"] if with_lava else [])
    for r in range(boots):
        order = ways[r % len(ways):] + ways[:r % len(ways)]  # rotate who goes first
        for way in order:
            if way == "farm":
                res = run_farm(procs, out, Path(image["dir"]), f"bench-{os.getpid()}-main-{r}")
            elif way == "naive":
                res = run_naive(procs, image)
            else:
                res = run_lava(procs, out, image, f"{os.getpid()}{r:03d}")  # LAVA's dirs are per job id
            results[way].append(res)
            say(f"main {r + 1}/{boots} {way:5}: " + (f"{res['seconds']:.2f} s (process {res['wall']:.2f} s)"
                                                        if res["ok"] else f"FAILED {res['error']}"))
    return results


def section_parallel(procs, out, image, rounds, use_lab: bool = True) -> dict:
    lab_dir = Path(tempfile.mkdtemp(prefix="farm-bench-lab-"))
    mode, extra_env, env, places = "local twins", {}, ENV_TWIN, [None, None]
    note = "" if use_lab else "local twins asked for (--parallel local)"
    try:
        if not use_lab:
            raise _Local()
        done, wall = procs.run([PY, "-m", "farm.cli", "lab", "up", "--boards", "maaxboard=2", "--dir", str(lab_dir)],
                               timeout=180, cwd=ROOT)
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
            say(f"parallel {r + 1}/{rounds}: one {_fmt(res)}, two {' / '.join(_fmt(b) for b in both)}")
    finally:
        if mode.startswith("farm lab"):
            done, _ = procs.run([PY, "-m", "farm.cli", "lab", "down", "--dir", str(lab_dir)], timeout=120, cwd=ROOT)
            if done.returncode != 0:
                say("farm lab down: " + done.stderr.strip()[-300:])
        shutil.rmtree(lab_dir, ignore_errors=True)
    return {"mode": mode, "note": note, "single": single, "pair": pair}


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
    mods_path, mods_wall = farm_build(procs, recipe_variant(tmp, "twin-modules", modules=["virtio_net", "virtio_pci"]))
    builds["twin-modules"] = mods_wall
    gz_img, mods_img = image_files(gz_path), image_files(mods_path)
    variants = [
        ("farm as configured", {}),
        ("recipe kernel.compress: gzip", {"image": gz_img}),
        *[(f"env tftp_blocksize: {n}", {"env": env_variant(tmp, f"bs{n}", {"tftp_blocksize": n})})
          for n in (1468, 4096, 8192, 16384)],
        ("env tftp_windowsize: 8", {"env": env_variant(tmp, "ws8", {"tftp_windowsize": 8})}),
        ("recipe twin-only modules (virtio_net, virtio_pci)", {"image": mods_img}),
        ("env bootargs without quiet", {"env": env_variant(tmp, "noquiet", bootargs="")}),
        ("env bootargs quiet loglevel=1", {"env": env_variant(tmp, "loglevel1", bootargs="quiet loglevel=1")}),
        ("env pass_lease: false", {"env": env_variant(tmp, "nolease", {"pass_lease": False})}),
        ("patch console _read without the 10 ms sleep", {"patches": ["read-nosleep"]}),
        ("patch back: labgrid's _check_prompt before every shell command", {"patches": ["check-prompt-always"]}),
        ("patch U-Boot commands batched (&&)", {"patches": ["batch-uboot"]}),
        ("read without sleep + batched U-Boot", {"patches": ["read-nosleep", "batch-uboot"]}),
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
    sizes = {"Image": image["manifest"]["artifacts"], "Image.gz": gz_img["manifest"]["artifacts"],
             "twin-modules initrd": mods_img["manifest"]["artifacts"]}
    return {"builds": builds, "results": results, "sizes": sizes, "micro": micro}


# --- report --------------------------------------------------------------------------------------

def ok(results):
    return [r for r in results if r.get("ok")]


def med(results, key="seconds"):
    return median([r[key] for r in ok(results)])


def build_table(data: dict) -> list[tuple]:
    """Rows: (what, farm, baseline, ratio, target, met)."""
    rows = []
    main = data.get("main")
    if main:
        f, n = med(main["farm"]), med(main["naive"])
        rows.append(("boot + 2 commands, call to 2nd return (median s)", f, ("naive", n),
                     f / n if f and n else None, "<= 0.9", lambda r: r <= 0.9))
        fw, nw = med(main["farm"], "wall"), med(main["naive"], "wall")
        rows.append(("  same, whole process: start to exit (median s)", fw, ("naive", nw),
                     fw / nw if fw and nw else None, "(info)", None))
        if main["lava"]:
            lw = med(main["lava"], "wall")
            rows.append(("boot + 2 commands, whole process vs lava-run (median s)", fw, ("LAVA", lw),
                         fw / lw if fw and lw else None, "<= 0.6", lambda r: r <= 0.6))
        else:
            rows.append(("boot + 2 commands vs lava-run", fw, ("LAVA", None), None, "<= 0.6",
                         "skipped: " + (data.get("lava_skipped") or "")))
        rss = [r["vm_hwm_kb"] / 1024 for r in ok(main["farm"])]
        if rss:
            rows.append(("peak RSS of the farm process (max VmHWM, MB)", max(rss), ("", None), None, "<= 60 MB",
                         lambda v: v <= 60, "value"))
    b = data.get("build")
    if b:
        c = median(b["cached"])
        rows.append(("cached rebuild, `farm build` (median s)", c, ("", None), None, "<= 1 s", lambda v: v <= 1.0, "value"))
        if b["cold"]:
            rows.append(("cold build, fresh FARM_CACHE + shared debs (median s)", median(b["cold"]), ("", None),
                         None, "(info)", None))
    p = data.get("parallel")
    if p:
        one = med(p["single"])
        two = median([max(x["seconds"] for x in pair) for pair in p["pair"] if all(x.get("ok") for x in pair)])
        skews = [pair[0].get("start_skew") for pair in p["pair"] if pair[0].get("start_skew") is not None]
        if skews:
            p["note"] = (p["note"] + "; " if p["note"] else "") + f"the two boots started within {max(skews):.3f} s of each other"
        rows.append((f"two boards in parallel vs one ({p['mode']}; slower of two, median s)", two,
                     ("one board", one), two / one if two and one else None, "<= 1.3", lambda r: r <= 1.3))
    ip = data.get("iperf")
    if ip and ip.get("ok"):
        fm, hm = median(ip["iperf_farm_bps"]) / 1e6, median(ip["iperf_hand_bps"]) / 1e6
        rows.append((f"iperf3 host->twin TCP, {len(ip['iperf_farm_bps'])} runs each, through farm vs by hand "
                     "(median Mbit/s)", fm, ("by hand", hm), fm / hm, "0.95-1.05", lambda r: 0.95 <= r <= 1.05))
        pairs = [f / h for f, h in zip(ip["iperf_farm_bps"], ip["iperf_hand_bps"])]
        rows.append(("  same, median of the ratios of back-to-back pairs", None, ("", None), median(pairs),
                     "(info)", None))
    return rows


def render_table(rows) -> str:
    lines = ["| what | farm | baseline | ratio | target | met? |", "|---|---|---|---|---|---|"]
    for row in rows:
        what, farm, (bname, base), ratio, target, check = row[:6]
        on_value = len(row) > 6 and row[6] == "value"
        if isinstance(check, str):
            met = check
        elif check is None:
            met = ""
        else:
            subject = farm if on_value else ratio
            met = "—" if subject is None else ("yes" if check(subject) else "**no**")
        lines.append(f"| {what} | {_num(farm)} | {(bname + ' ' + _num(base)) if base is not None else bname or '—'} "
                     f"| {_num(ratio, 2) if ratio is not None else '—'} | {target} | {met} |")
    return "\n".join(lines)


def _num(v, digits=2):
    return "—" if v is None else f"{v:.{digits}f}"


def render_phases(data: dict) -> str:
    main = data.get("main")
    if not main:
        return ""
    cols = [(w, main[w]) for w in ("naive", "farm", "lava") if ok(main[w])]
    lines = ["| phase (median s) | " + " | ".join(f"{w} ({len(ok(res))}/{len(res)} ok)" for w, res in cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    for name, _, _ in PHASES:
        vals = [median([r["phases"].get(name) for r in ok(res)]) for _, res in cols]
        lines.append(f"| {name} | " + " | ".join(_num(v) for v in vals) + " |")
    lines.append("| **call to 2nd command done** | " + " | ".join(_num(med(res)) for _, res in cols) + " |")
    lines.append("| process start to exit | " + " | ".join(_num(med(res, 'wall')) for _, res in cols) + " |")
    lines.append("| orchestrator's own CPU (user+sys s) | " + " | ".join(
        _num(median([r.get("cpu_seconds") for r in ok(res)])) for _, res in cols) + " |")
    return "\n".join(lines)


def render_micro(data: dict) -> str:
    m = (data.get("levers") or {}).get("micro") or {}
    if "uboot_run" not in m:
        return f"driver round trips: not measured ({m.get('error', '')})"
    ms = lambda k: f"{m[k] * 1000:.1f} ms"  # noqa: E731
    return "\n".join([
        f"| labgrid round trip on the twin (median of {m['n']}) | as is | changed |", "|---|---|---|",
        f"| UBootDriver.run('true') | {ms('uboot_run')} | {ms('uboot_run_nosleep')} (QEMUDriver._read without the 10 ms sleep) |",
        f"| farm's {len(m['uboot_commands'])} non-TFTP U-Boot commands | {ms('uboot_setup_one_by_one')} one by one | "
        f"{ms('uboot_setup_batched')} joined with && |",
        f"| {m.get('shell_driver', 'ShellDriver')}.run('true') | {ms('shell_run')} as farm has it | "
        f"{ms('shell_run_check_always')} with labgrid's _check_prompt before each command; "
        f"{ms('shell_run_nosleep')} without the read sleep; {ms('shell_run_check_always_nosleep')} both |",
    ])


UBOOT_PHASES = ("interrupt + dhcp", "tftp kernel", "tftp initrd", "setenv + booti (+ unpack)")
ACTS_ON = {  # the phases a lever can change: their sum is compared, the rest is the guest's noise
    "batched": UBOOT_PHASES,  # first: "gzip + batched" acts on all of U-Boot's phases
    "gzip": ("tftp kernel", "setenv + booti (+ unpack)"),
    "tftp_": ("tftp kernel", "tftp initrd"),
    "modules": ("/init: modules + network",),
    "quiet": ("kernel boot -> /init",),
    "pass_lease": ("/init: modules + network",),
    "_check_prompt": ("shell prompt -> 2nd command done",),
}


def acts_on(name: str) -> tuple:
    for key, phases_ in ACTS_ON.items():
        if key in name:
            return phases_
    return ()


def render_levers(data: dict) -> str:
    lev = data.get("levers")
    if not lev:
        return ""
    base = lev["results"]["farm as configured"]
    base_total = med(base)
    keys = ["interrupt + dhcp", "tftp kernel", "tftp initrd", "setenv + booti (+ unpack)", "kernel boot -> /init",
            "/init: modules + network", "shell prompt -> 2nd command done"]
    lines = ["| lever | call to 2nd return (median s) | vs farm as configured | phases it acts on: change "
             "of their summed medians | " + " | ".join(keys) + " | orchestrator CPU s | console reads |",
             "|---" * (6 + len(keys)) + "|"]
    for name, res in lev["results"].items():
        total = med(res)
        delta = (total - base_total) if (total is not None and base_total is not None) else None
        cells = [median([r["phases"].get(k) for r in ok(res)]) for k in keys]
        capped = sorted({r.get("tftp_blocksize_capped_to") for r in ok(res)} - {None})
        note = f" (U-Boot capped the block size to {capped[0]})" if capped else ""
        reads = median([r.get("console_reads") for r in ok(res)])
        acting = acts_on(name)
        if acting and ok(res) and ok(base):
            own = sum(median([r["phases"].get(k, 0) for r in ok(res)]) for k in acting)
            ref = sum(median([r["phases"].get(k, 0) for r in ok(base)]) for k in acting)
            on_phases = f"{own - ref:+.2f} s ({', '.join(acting)})"
        else:
            on_phases = ""
        lines.append(f"| {name}{note} | {_num(total)} ({len(ok(res))}/{len(res)} ok) | "
                     f"{'' if delta is None else f'{delta:+.2f} s'} | {on_phases} | " + " | ".join(_num(c) for c in cells)
                     + f" | {_num(median([r.get('cpu_seconds') for r in ok(res)]))} | {_num(reads, 0)} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description="farm's own speed vs a hand-written script and LAVA")
    p.add_argument("--boots", type=int, help="boots per way in the main comparison (default 5; --quick 3)")
    p.add_argument("--quick", action="store_true", help="fewer boots, no levers: under ~5 minutes")
    p.add_argument("--levers", action=argparse.BooleanOptionalAction, default=None,
                   help="measure the levers too (default: on, off with --quick)")
    p.add_argument("--lever-boots", type=int, help="boots per lever (default 4)")
    p.add_argument("--only", help="comma-separated sections: main,build,parallel,iperf,levers")
    p.add_argument("--iperf-pairs", type=int, help="farm/by-hand iperf3 pairs (default 6; --quick 3)")
    p.add_argument("--iperf-duration", type=int, help="seconds per iperf3 run (default 5; --quick 3)")
    p.add_argument("--parallel", choices=("lab", "local"), default="lab",
                   help="two boards at once on the virtual farm (default; local twins if it fails) or local twins")
    p.add_argument("--out", help="output directory (default results/speed-<time>)")
    args = p.parse_args()
    boots = args.boots or (3 if args.quick else 5)
    levers = args.levers if args.levers is not None else not args.quick
    sections = set((args.only or "main,build,parallel,iperf,levers").split(","))
    if not levers:
        sections.discard("levers")
    out = Path(args.out or ROOT / "results" / f"speed-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    out.mkdir(parents=True, exist_ok=True)

    procs = Processes()

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)  # also when started with SIGINT ignored (a background job)
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
        say(f"building the image (cached if unchanged); results in {out}")
        image = image_files(farm_build(procs, RECIPE)[0])
        data["image"] = {k: image[k] for k in ("dir", "kernel", "initrd")}
        data["lava_skipped"] = lava_missing()
        if data["lava_skipped"]:
            say(f"LAVA skipped: {data['lava_skipped']}")
        sec_t = {}
        for name in ("main", "build", "parallel", "iperf", "levers"):
            if name not in sections:
                continue
            t0 = time.monotonic()
            if name == "main":
                data["main"] = section_main(procs, out, image, boots, not data["lava_skipped"])
            elif name == "build":
                data["build"] = measure_builds(procs, out, 3, 1 if args.quick else 2)
            elif name == "parallel":
                data["parallel"] = section_parallel(procs, out, image, 2 if args.quick else 3, args.parallel == "lab")
            elif name == "iperf":
                data["iperf"] = section_iperf(procs, out, image, args.iperf_pairs or (3 if args.quick else 6),
                                             args.iperf_duration or (3 if args.quick else 5))
            elif name == "levers":
                data["levers"] = section_levers(procs, out, image, args.lever_boots or 4)
            sec_t[name] = {"seconds": time.monotonic() - t0, **sampler.summary(since=t0)}
        data["sections"] = sec_t
    except KeyboardInterrupt:
        say("interrupted: stopping everything this run started")
        raise
    finally:
        leftovers = procs.cleanup()
        sampler.stopped.set()
        if leftovers:
            say(f"killed {len(leftovers)} leftover process(es) of this run: {leftovers}")
    data["seconds"] = time.monotonic() - t_start
    data["load"] = sampler.summary()
    rows = build_table(data)
    load = data["load"]
    load_line = (f"machine: {os.cpu_count()} CPUs, 1-min loadavg during the run min {load['load_min']:.2f} / "
                 f"median {load['load_median']:.2f} / max {load['load_max']:.2f}; up to {load['other_qemus_max']} "
                 f"other QEMU processes (other engineers) running at once; run took {data['seconds']:.0f} s")
    fv = data["farm_version"]
    version_line = f"farm at commit {fv['commit']}" + (f" with uncommitted changes in {', '.join(fv['changed'])}"
                                                       if fv["changed"] else "")
    report = [f"# farm speed, {data['started']} ({'quick, ' if args.quick else ''}{boots} boots per way)", "",
              load_line, "", version_line, "", render_table(rows), ""]
    if "main" in data:
        report += ["## Where the time goes (console markers)", "", render_phases(data), ""]
    if "build" in data:
        b = data["build"]
        report += [f"build: cached `farm build` CLI {', '.join(f'{v:.2f}' for v in b['cached'])} s (build() call "
                   f"alone {_num(b['cached_call'], 3)} s); cold {', '.join(f'{v:.1f}' for v in b['cold'])} s, "
                   f"same sha256 as the cached image: {b['cold_same_sha256']}", ""]
    if "parallel" in data and data["parallel"]["note"]:
        report += [f"parallel: {data['parallel']['note']}", ""]
    if "levers" in data:
        report += ["## Levers (interleaved rounds, medians)", "", render_levers(data), "", render_micro(data), "",
                   "variant builds: " + ", ".join(f"{k} {v:.1f} s" for k, v in data["levers"]["builds"].items()), ""]
    if "sections" in data:
        report += ["sections: " + "; ".join(f"{k} {v['seconds']:.0f} s (load {v['load_median']:.2f}, "
                                           f"max {v['load_max']:.2f}, other QEMUs up to {v['other_qemus_max']})"
                                           for k, v in data["sections"].items()), ""]
    text = "\n".join(report)
    (out / "results.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    (out / "report.md").write_text(text)
    print(text)
    print(f"\n(results.json and report.md in {out})")
    failed = [row[0] for row in rows if callable(row[5]) and (row[3] if len(row) < 7 else row[1]) is not None
              and not row[5](row[3] if len(row) < 7 else row[1])]
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
