"""What differs between the inputs of two runs, from their run.json (and the image manifests it holds):
``farm diff RUN_A RUN_B``, and what changed across a change point (farm.store.changes). Pure: two
run.json objects in, differences out.

    for d in diff_runs(info_a, info_b):
        print(d.part, d.what, d.a, "->", d.b)          # image maaxboard-bench  package openssl  3.0.15 -> 3.0.17

Ordered by how likely each is to move a figure: the image first (the kernel, its source and config, the
Debian packages with both versions, farm's programs by their source's sha256, the rest of the recipe, the
artifacts' sha256), then the boards (place, env file, cores, frequency, the kernel each booted), the
load generators, the setups, the experiment (benchmarks and their params, boots, repeats), the pipeline
file, farm itself (its git commit and version). run.json records env files by path only: an env file
edited in place shows as no difference (its path is the same).
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, Mapping

import attrs

#: a value the other run does not have
ABSENT = None


@attrs.frozen
class Difference:
    """One input that differs: ``part`` (what it belongs to: ``image NAME``, ``target NAME``, ``setup
    NAME``, ``experiment``, ``pipeline``, ``farm``), ``what`` (the input), its value in each run (None:
    the run has none)."""

    part: str
    what: str
    a: str | None
    b: str | None

    def as_json(self) -> dict[str, Any]:
        return {"part": self.part, "what": self.what, "a": self.a, "b": self.b}


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """A mapping's leaves by dotted path (lists are leaves)."""
    if not isinstance(value, dict):
        return {prefix: value} if prefix else {}
    out: dict[str, Any] = {}
    for key, item in value.items():
        out.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
    return out


def _leaves(part: str, a: Any, b: Any, *, skip: Iterable[str] = (), prefix: str = "") -> Iterator[Difference]:
    """Every leaf of two mappings that differs, in the order of ``a``'s keys and then ``b``'s new ones."""
    fa, fb = _flat(_dict(a)), _flat(_dict(b))
    skipped = tuple(skip)
    for path in dict.fromkeys([*fa, *fb]):
        if path.split(".")[0] in skipped:
            continue
        va, vb = _text(fa.get(path)), _text(fb.get(path))
        if va != vb:
            yield Difference(part, prefix + path, va, vb)


def _by_name(items: Any) -> dict[str, dict[str, Any]]:
    return {str(i["name"]): i for i in items or () if isinstance(i, dict) and "name" in i}


def _packages(part: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> Iterator[Difference]:
    pa, pb = _by_name(a.get("packages")), _by_name(b.get("packages"))
    for name in sorted(pa.keys() | pb.keys()):
        va, vb = pa.get(name, {}).get("version"), pb.get(name, {}).get("version")
        if va != vb:
            yield Difference(part, f"package {name}", _text(va), _text(vb))
        elif pa[name].get("sha256") != pb[name].get("sha256"):  # the same version rebuilt
            yield Difference(part, f"package {name} {va} sha256", _text(pa[name].get("sha256")),
                             _text(pb[name].get("sha256")))


def _programs(part: str, a: Any, b: Any) -> Iterator[Difference]:
    pa, pb = _by_name(a), _by_name(b)
    for name in sorted(pa.keys() | pb.keys()):
        if name not in pa or name not in pb:
            yield Difference(part, f"program {name}", "built" if name in pa else None, "built" if name in pb else None)
            continue
        yield from _leaves(part, pa[name], pb[name], skip=("name",), prefix=f"program {name} ")


_KERNEL = ("kernel_version", "kernel_source")
_RECIPE_SEEN = ("programs", "packages")  # the recipe's: compared by name above


def _image(name: str, a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> Iterator[Difference]:
    part = f"image {name}"
    if a is None or b is None:
        yield Difference(part, "image", _text(_dict(a).get("key")), _text(_dict(b).get("key")))
        return
    for field in _KERNEL:
        yield from _leaves(part, {field: a.get(field)}, {field: b.get(field)})
    yield from _packages(part, a, b)
    ra, rb = _dict(a.get("recipe")), _dict(b.get("recipe"))
    yield from _programs(part, ra.get("programs"), rb.get("programs"))
    yield from _leaves(part, ra, rb, skip=_RECIPE_SEEN, prefix="recipe ")
    yield from _leaves(part, a, b, skip=(*_KERNEL, "packages", "recipe", "artifacts", "dir", "key"))
    arts_a, arts_b = _dict(a.get("artifacts")), _dict(b.get("artifacts"))
    for art in dict.fromkeys([*arts_a, *arts_b]):
        sa, sb = _dict(arts_a.get(art)).get("sha256"), _dict(arts_b.get(art)).get("sha256")
        if sa != sb:
            yield Difference(part, f"artifact {art} sha256", _text(sa), _text(sb))
    if a.get("key") != b.get("key"):
        yield Difference(part, "image key", _text(a.get("key")), _text(b.get("key")))


#: what a boot record says of the board and its kernel (the rest: addresses, times, retries, is how it went)
_BOOT_FACTS = ("kernel", "image_key", "cpus", "online", "frequency_hz", "frequency_source", "governor", "machine",
               "emulated", "dtb", "flow")


def _boot_facts(facts: Mapping[str, Any]) -> dict[str, Any]:
    """Per setup, each fact's values over the target's boots (one value when every boot agrees)."""
    out: dict[str, Any] = {}
    for boot in facts.get("boots") or ():
        if not isinstance(boot, dict):
            continue
        setup = str(boot.get("setup", ""))
        for fact in _BOOT_FACTS:
            if fact in boot:
                seen = out.setdefault(f"{setup}: {fact}", [])
                if boot[fact] not in seen:
                    seen.append(boot[fact])
    return {k: v[0] if len(v) == 1 else v for k, v in out.items()}


def _target(name: str, a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> Iterator[Difference]:
    part = f"target {name}"
    if a is None or b is None:
        yield Difference(part, "target", "booted" if a is not None else None, "booted" if b is not None else None)
        return
    yield from _leaves(part, {"env": a.get("env"), "arch": a.get("arch")}, {"env": b.get("env"), "arch": b.get("arch")})
    facts_a, facts_b = _boot_facts(a), _boot_facts(b)
    booted_a, booted_b = ({key.split(": ")[0] for key in facts} for facts in (facts_a, facts_b))
    both = booted_a & booted_b  # a setup only one run booted is named once, among the setups
    yield from _leaves(part, {k: v for k, v in facts_a.items() if k.split(": ")[0] in both},
                       {k: v for k, v in facts_b.items() if k.split(": ")[0] in both})


def _named(a: Any, b: Any) -> Iterator[tuple[str, Any, Any]]:
    da, db = _dict(a), _dict(b)
    for name in dict.fromkeys([*da, *db]):
        yield name, da.get(name), db.get(name)


#: the experiment's plan names boots by label: it follows from the boots and order compared already
_EXPERIMENT_SKIP = ("plan",)


def diff_runs(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Every input of run.json ``a`` that differs in ``b``, most likely to matter first (module docstring)."""
    out: list[Difference] = []
    for name, ia, ib in _named(a.get("images"), b.get("images")):
        out += _image(name, _dict(ia) if ia is not None else None, _dict(ib) if ib is not None else None)
    out += _programs("programs", [{"name": k, **_dict(v)} for k, v in _dict(a.get("programs")).items()],
                     [{"name": k, **_dict(v)} for k, v in _dict(b.get("programs")).items()])
    place_a, place_b = _dict(a.get("place")), _dict(b.get("place"))
    out += _leaves("place", {"place": place_a.get("name"), "load generators": place_a.get("loadgens")},
                   {"place": place_b.get("name"), "load generators": place_b.get("loadgens")})
    for name, ta, tb in _named(a.get("targets"), b.get("targets")):
        out += _target(name, _dict(ta) if ta is not None else None, _dict(tb) if tb is not None else None)
    for name, sa, sb in _named(a.get("setups"), b.get("setups")):
        if sa is None or sb is None:
            out.append(Difference(f"setup {name}", "setup", "run" if sa is not None else None,
                                  "run" if sb is not None else None))
        else:
            out += _leaves(f"setup {name}", sa, sb)
    out += _leaves("experiment", {**_dict(a.get("experiment")), "repeats_in_boot": a.get("repeats_in_boot")},
                   {**_dict(b.get("experiment")), "repeats_in_boot": b.get("repeats_in_boot")}, skip=_EXPERIMENT_SKIP)
    out += _leaves("pipeline", {k: a.get(k) for k in ("pipeline_name", "pipeline", "pipeline_sha256", "envs")},
                   {k: b.get(k) for k in ("pipeline_name", "pipeline", "pipeline_sha256", "envs")})
    out += _leaves("farm", {"git commit": a.get("git_sha"), "version": a.get("farm_version")},
                   {"git commit": b.get("git_sha"), "version": b.get("farm_version")})
    return out


def unified(a: str, b: str, name_a: str, name_b: str) -> list[str]:
    """The unified diff of two texts (a pipeline file as two runs ran it), its lines without their ends."""
    import difflib

    return list(difflib.unified_diff(a.splitlines(), b.splitlines(), name_a, name_b, lineterm=""))
