"""The speed benchmark's report: the table of targets, where the time goes, the levers (pure: from results.json's data)."""

from __future__ import annotations

import statistics

from markers import PHASES


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None



def ok(results):
    return [r for r in results if r.get("ok")]


def med(results, key="seconds"):
    return median([r[key] for r in ok(results)])


def mains(data: dict) -> list[dict]:
    """The main section per image (results.json of an older run: one image, in ``main``)."""
    if data.get("mains"):
        return data["mains"]
    main = data.get("main")
    return [{"image": "", "lean": "lean" in str((data.get("image") or {}).get("recipe", "")), **main}] if main else []


def build_table(data: dict) -> list[tuple]:
    """Rows: (what, farm, baseline, ratio, target, met)."""
    rows = []
    rss = []
    for main in mains(data):
        on = f"{main['image']}: " if main.get("image") else ""
        nw = med(main["naive"], "wall")
        if main.get("cli"):
            cw = med(main["cli"], "wall")
            rows.append((f"{on}`farm boot` CLI (boot, its facts, power off), whole process vs naive's (median s)", cw,
                         ("naive", nw), cw / nw if cw and nw else None, "<= 0.9", lambda r: r <= 0.9))
            pairs = [c["wall"] / n["wall"] for c, n in zip(main["cli"], main["naive"]) if c.get("ok") and n.get("ok")]
            rows.append((f"  same, median of the {len(pairs)} rounds' own ratios (each round's two boots minutes apart "
                         "at most: steadier under a drifting load)", None, ("", None), median(pairs), "(info)", None))
        f, n = med(main["farm"]), med(main["naive"])
        rows.append((f"{on}boot + 2 commands, call to 2nd return (median s)", f, ("naive", n),
                     f / n if f and n else None, "<= 0.9", lambda r: r <= 0.9))
        fw = med(main["farm"], "wall")
        rows.append(("  same, whole process: start to exit (median s)", fw, ("naive", nw),
                     fw / nw if fw and nw else None, "(info)", None))
        lava_target = ("<= 0.5", lambda r: r <= 0.5) if main.get("lean") else ("(info)", None)
        if main["lava"]:
            lw = med(main["lava"], "wall")
            rows.append((f"{on}boot + 2 commands, whole process vs lava-run (median s)", fw, ("LAVA", lw),
                         fw / lw if fw and lw else None, *lava_target))
        else:
            rows.append((f"{on}boot + 2 commands vs lava-run", fw, ("LAVA", None), None, lava_target[0],
                         "skipped: " + (data.get("lava_skipped") or "")))
        rss += [r["vm_hwm_kb"] / 1024 for r in ok(main["farm"])]
    if rss:
        rows.append(("peak RSS of the farm process (max VmHWM, MB)", max(rss), ("", None), None, "<= 60 MB",
                     lambda v: v <= 60, "value"))
    for g in data.get("guest") or []:
        name = g.get("guest_image") or g["recipe"]
        if not g.get("ok"):
            rows.append((f"guest ready after its QEMU starts ({name})", None, ("", None), None, "<= 5 s",
                         f"failed: {g.get('error')}"))
            continue
        lean = "lean" in name  # the target is the lean guest's; Debian's kernel beside it for information
        rows.append((f"guest ready after its QEMU starts, {name} guest on its host, 1 vCPU (median of "
                     f"{len(g['guest_seconds'])} boots, s; baseline: the host's own boot, power-on to shell)",
                     median(g["guest_seconds"]), ("bare boot", g["host_seconds"]), None,
                     *(("<= 5 s", lambda v: v <= 5.0) if lean else ("(info)", None)), "value"))
    for mode, s in sorted((data.get("suite") or {}).items()):
        load = s.get("load", {})
        rows.append((f"`make test`'s suite, {mode} ({'empty FARM_CACHE and CCACHE_DIR' if mode == 'fresh' else 'caches kept'};"
                     f" load median {load.get('median', float('nan')):.1f}, farm {s.get('commit')}, exit {s.get('exit')}; "
                     "minutes)", s["wall_seconds"] / 60, ("", None), None,
                     *(("<= 30 min", lambda v: v <= 30.0) if mode == "fresh" else ("(info)", None)), "value"))
    b = data.get("build")
    if b:
        c = median(b["cached"])
        rows.append(("cached rebuild, `farm build` (median s)", c, ("", None), None, "<= 1 s", lambda v: v <= 1.0, "value"))
        if b["cold"]:
            shared = " and built kernels" if b.get("cold_kernel_shared") else ""
            rows.append((f"cold build, fresh FARM_CACHE + shared debs{shared} (median s)", median(b["cold"]), ("", None),
                         None, "(info)", None))
    for p in _parallel(data):
        one = med(p["single"])
        two = median([max(x["seconds"] for x in pair) for pair in p["pair"] if all(x.get("ok") for x in pair)])
        skews = [pair[0].get("start_skew") for pair in p["pair"] if pair[0].get("start_skew") is not None]
        if skews:
            p["note"] = (p["note"] + "; " if p["note"] else "") + f"the two boots started within {max(skews):.3f} s of each other"
        cpus = p.get("cpus", 4)
        target = ("<= 1.3", lambda r: r <= 1.3) if cpus == 1 else ("(info)", None)
        rows.append((f"two {cpus}-vCPU boards in parallel vs one ({p['mode']}; slower of two, median s)", two,
                     ("one board", one), two / one if two and one else None, *target))
    ip = data.get("iperf")
    if ip and ip.get("ok"):
        fm, hm = median(ip["iperf_farm_bps"]) / 1e6, median(ip["iperf_hand_bps"]) / 1e6
        rows.append((f"iperf3 host->twin TCP, {len(ip['iperf_farm_bps'])} runs each, through farm vs by hand "
                     "(median Mbit/s)", fm, ("by hand", hm), fm / hm, "0.95-1.05", lambda r: 0.95 <= r <= 1.05))
        pairs = [f / h for f, h in zip(ip["iperf_farm_bps"], ip["iperf_hand_bps"])]
        rows.append(("  same, median of the ratios of back-to-back pairs", None, ("", None), median(pairs),
                     "(info)", None))
    return rows


def _parallel(data: dict) -> list[dict]:
    p = data.get("parallel") or []
    return [p] if isinstance(p, dict) else p  # one dict: results.json of an older run


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
    return "\n\n".join(_render_phases(m) for m in mains(data))


def _render_phases(main: dict) -> str:
    cols = [(w, main[w]) for w in ("naive", "farm", "lava") if ok(main.get(w, []))]
    lines = ([f"{main['image']}:", ""] if main.get("image") else []) + ["| phase (median s) | " + " | ".join(f"{w} ({len(ok(res))}/{len(res)} ok)" for w, res in cols) + " |",
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
    "initrd.compress": ("tftp initrd", "kernel boot -> /init"),  # before "gzip": the initrd's, not the kernel's
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




def render_report(data: dict, rows: list[tuple]) -> str:
    """report.md: the table, then the phases, builds, parallel note, levers and sections measured."""
    load = data["load"]
    load_line = (f"machine: {data['host']['cpus']} CPUs, 1-min loadavg during the run min {load['load_min']:.2f} / "
                 f"median {load['load_median']:.2f} / max {load['load_max']:.2f}; up to {load['other_qemus_max']} "
                 f"other QEMU processes (other engineers) running at once; run took {data['seconds']:.0f} s")
    fv = data["farm_version"]
    version_line = f"farm at commit {fv['commit']}" + (f" with uncommitted changes in {', '.join(fv['changed'])}"
                                                       if fv["changed"] else "")
    report = [f"# farm speed, {data['started']} ({'quick, ' if data['quick'] else ''}{data['boots']} boots per way)", "",
              load_line, "", version_line, "", render_table(rows), ""]
    if data.get("interrupted"):
        report += ["**interrupted**: the figures are those of the boots measured before it stopped", ""]
    if mains(data):
        report += ["## Where the time goes (console markers)", "", render_phases(data), ""]
    for g in data.get("guest") or []:
        if g.get("ok"):
            report += [f"guest {g['guest_image']} on {g['host_image']}: host boot {g['host_seconds']:.2f} s; guest boots "
                       + ", ".join(f"{v:.2f}" for v in g["guest_seconds"]) + f" s (load {g['load_before']:.2f} before, "
                       f"{g['load_after']:.2f} after)", ""]
    for mode, s in sorted((data.get("suite") or {}).items()):
        report += [f"suite, {mode} ({s['dir']}): " + ", ".join(
            f"{x['group']} {x['seconds'] / 60:.1f} min" for x in s.get("groups", [])), ""]
    if "build" in data:
        b = data["build"]
        report += [f"build: cached `farm build` CLI {', '.join(f'{v:.2f}' for v in b['cached'])} s (build() call "
                   f"alone {_num(b['cached_call'], 3)} s); cold {', '.join(f'{v:.1f}' for v in b['cold'])} s, "
                   f"same sha256 as the cached image: {b['cold_same_sha256']}", ""]
    for p in _parallel(data):
        if p["note"]:
            report += [f"parallel ({p.get('cpus', 4)} vCPU): {p['note']}", ""]
    if "levers" in data:
        report += ["## Levers (interleaved rounds, medians)", "", render_levers(data), "", render_micro(data), "",
                   "variant builds: " + ", ".join(f"{k} {v:.1f} s" for k, v in data["levers"]["builds"].items()), ""]
    for name, error in (data.get("failed_sections") or {}).items():
        report += [f"**section {name} failed**: {error} (the other sections' figures are above)", ""]
    if "sections" in data:
        report += ["sections: " + "; ".join(f"{k} {v['seconds']:.0f} s (load {v['load_median']:.2f}, "
                                           f"max {v['load_max']:.2f}, other QEMUs up to {v['other_qemus_max']})"
                                           for k, v in data["sections"].items()), ""]
    return "\n".join(report)


def missed(rows: list[tuple]) -> list[str]:
    """The rows whose target was measured and missed."""
    return [row[0] for row in rows if callable(row[5]) and (row[3] if len(row) < 7 else row[1]) is not None
            and not row[5](row[3] if len(row) < 7 else row[1])]
