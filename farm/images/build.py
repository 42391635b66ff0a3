"""Build an image from a recipe: kernel + a lean initrd, reproducible and content-addressed.

The image directory is named by a hash of everything the bytes depend on (recipe, exact package
versions, this builder's version, the init scripts), so an unchanged recipe is served from the cache
without touching apt, and two builds give the same sha256 for every artifact.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import posixpath
import shutil
import stat
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

import attrs

from ..errors import JobError
from . import debian
from .cpio import Entry, write_newc
from .elf import elf_deps, is_elf
from .modules import load_order, parse_modules_dep
from .programs import build_program, compiler_fingerprint
from .recipe import Recipe, load_recipe

BUILDER_VERSION = "1"
TRIPLETS = {"arm64": "aarch64-linux-gnu", "amd64": "x86_64-linux-gnu"}
KERNEL_NAMES = {"arm64": "Image", "amd64": "bzImage"}
INITRD_NAME = "initrd.cpio.gz"
BASE_DIRS = ("bin", "dev", "etc", "etc/farm", "lib", "proc", "root", "run", "sbin", "sys", "tmp",
             "usr", "usr/bin", "usr/sbin", "var")


def default_cache() -> Path:
    return Path(os.environ.get("FARM_CACHE") or Path.home() / ".cache" / "farm")


@attrs.frozen
class Image:
    """A built image directory: artifacts + manifest.json."""

    path: Path
    manifest: dict
    cached: bool = False

    @property
    def kernel(self) -> Path:
        return self.path / self.manifest["kernel"]

    @property
    def initrd(self) -> Path:
        return self.path / self.manifest["initrd"]

    @property
    def name(self) -> str:
        return self.manifest["name"]

    @property
    def arch(self) -> str:
        return self.manifest["arch"]


def load_image(path: str | Path) -> Image:
    """An image directory made by :func:`build` (``--image DIR``)."""
    path = Path(path)
    manifest_path = path / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except FileNotFoundError:
        raise JobError(f"{manifest_path}: not an image directory (no manifest.json; make one with `farm build`)") from None
    except json.JSONDecodeError as exc:
        raise JobError(f"{manifest_path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    for key in ("kernel", "initrd", "name", "arch", "artifacts"):
        if key not in manifest:
            raise JobError(f"{manifest_path}: missing field '{key}'")
    for name in (manifest["kernel"], manifest["initrd"]):
        if not (path / name).is_file():
            raise JobError(f"{path / name}: artifact listed in manifest.json is missing")
    return Image(path, manifest)


def _support_file(name: str) -> bytes:
    return resources.files("farm.images").joinpath(name).read_bytes()


def _hash_json(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


@attrs.frozen
class Resolution:
    kernel: debian.Package
    packages: tuple[debian.Package, ...]


def resolve_recipe(recipe: Recipe, cache: Path) -> Resolution:
    """Exact package versions for the recipe, cached per state of apt's package lists."""
    key = _hash_json([recipe.canonical(), debian.apt_lists_fingerprint(recipe.arch)])
    cached = cache / "resolved" / f"{key}.json"
    if cached.exists():
        data = json.loads(cached.read_text())
        return Resolution(debian.package_from_json(data["kernel"]),
                          tuple(debian.package_from_json(p) for p in data["packages"]))
    hint = (f"not found for {recipe.arch} (does apt know this architecture? "
            f"`dpkg --add-architecture {recipe.arch} && apt-get update`, which `make setup` runs)")
    try:
        kernel = debian.follow_metapackage(recipe.kernel_package, recipe.arch)
    except debian.PackageNotFound as exc:
        raise recipe.error("kernel.package", f"Debian package '{exc.args[0]}' {hint}") from None
    program_packages = [name for program in recipe.programs for name in program.packages]
    packages, missing = debian.resolve([*recipe.packages, *program_packages], recipe.arch)
    if missing:
        where = "programs" if missing[0] in program_packages and missing[0] not in recipe.packages else "initrd.packages"
        raise recipe.error(where, f"Debian package '{missing[0]}' {hint}")
    resolution = Resolution(kernel, tuple(packages[n] for n in sorted(packages)))
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    tmp.write_text(debian.dumps({"kernel": debian.package_to_json(kernel),
                                 "packages": [debian.package_to_json(p) for p in resolution.packages]}))
    os.replace(tmp, cached)
    return resolution


def image_key(recipe: Recipe, resolution: Resolution) -> str:
    return _hash_json({
        "builder": BUILDER_VERSION,
        "recipe": recipe.canonical(),
        "kernel": debian.package_to_json(resolution.kernel),
        "packages": [debian.package_to_json(p) for p in resolution.packages],
        "support": [hashlib.sha256(_support_file(n)).hexdigest() for n in ("init.sh", "udhcpc.sh")],
        "compiler": compiler_fingerprint(recipe.arch) if recipe.programs else None,
    })


def build(recipe_path: str | Path, out: str | Path | None = None, cache: Path | None = None) -> Image:
    """Build (or fetch from the cache) the image of a recipe; with ``out``, also place it there."""
    recipe = load_recipe(recipe_path)
    cache = cache or default_cache()
    resolution = resolve_recipe(recipe, cache)
    key = image_key(recipe, resolution)
    image_dir = cache / "images" / f"{recipe.name}-{key[:16]}"
    cached = (image_dir / "manifest.json").exists()
    if not cached:
        _build_into(recipe, resolution, key, image_dir, debian.PackageCache(cache))
    image = attrs.evolve(load_image(image_dir), cached=cached)
    if out is not None:
        image = attrs.evolve(export(image, Path(out)), cached=cached)
    return image


def export(image: Image, out: Path) -> Image:
    """Place the image's files in ``out`` (hard links where possible: images are immutable)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in [*image.manifest["artifacts"], "manifest.json"]:
        src, dst = image.path / name, out / name
        if dst.exists():
            dst.unlink()
        try:
            os.link(src, dst)
        except OSError:
            shutil.copyfile(src, dst)
    return load_image(out)


class _Tree:
    """The files of the userland packages, by absolute target path, with the package each came from."""

    def __init__(self, trees: dict[debian.Package, Path]):
        self.files: dict[str, tuple[debian.Package, Path]] = {}
        for pkg, root in sorted(trees.items(), key=lambda kv: kv[0].name):
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames.sort()
                for name in [*filenames, *(d for d in dirnames if os.path.islink(os.path.join(dirpath, d)))]:
                    full = Path(dirpath, name)
                    rel = "/" + full.relative_to(root).as_posix()
                    if rel == "/.farm-complete":
                        continue
                    self.files.setdefault(rel, (pkg, full))

    def lookup(self, path: str) -> tuple[debian.Package, Path] | None:
        """Find ``path``, trying the /usr-merged twin (``/lib/x`` <-> ``/usr/lib/x``) too."""
        if path in self.files:
            return self.files[path]
        twin = path[4:] if path.startswith("/usr/") else "/usr" + path
        return self.files.get(twin)


def _collect(tree: _Tree, wanted: list[str], arch: str, recipe: Recipe,
             built: dict[str, bytes] | None = None) -> tuple[dict[str, Entry], set[debian.Package]]:
    """Entries for the wanted files and ``built`` programs, their symlink chains and the shared
    libraries they load."""
    entries: dict[str, Entry] = {}
    used: set[debian.Package] = set()
    lib_dirs = [f"/lib/{TRIPLETS[arch]}", f"/usr/lib/{TRIPLETS[arch]}", "/lib", "/usr/lib"]
    queue = list(wanted)
    done: set[str] = set()

    def add_needs(path: str, data: bytes) -> None:
        deps = elf_deps(data)
        if deps.interpreter:
            queue.append(deps.interpreter)
        for soname in deps.needed:
            for d in lib_dirs:
                if tree.lookup(f"{d}/{soname}"):
                    queue.append(f"{d}/{soname}")
                    break
            else:
                raise recipe.error("initrd.files", f"library {soname} needed by {path} is in none of the packages")

    for path, data in (built or {}).items():
        entries[path] = Entry.file(path, data, 0o755)
        done.add(path)
        add_needs(path, data)

    def add_path(path: str, origin: str) -> None:
        for _ in range(40):  # symlink hops
            found = tree.lookup(path)
            if found is None:
                raise recipe.error("initrd.files", f"'{path}' (needed by {origin}) is in none of the packages "
                                                   f"{', '.join(recipe.packages)} or their dependencies")
            pkg, real = found
            used.add(pkg)
            if real.is_symlink():
                target = os.readlink(real)
                entries[path] = Entry.symlink(path, target)
                path = posixpath.normpath(target if target.startswith("/") else posixpath.join(posixpath.dirname(path), target))
                continue
            data = real.read_bytes()
            entries[path] = Entry.file(path, data, stat.S_IMODE(real.stat().st_mode))
            if is_elf(data):
                add_needs(path, data)
            return
        raise recipe.error("initrd.files", f"'{path}': too many symlink hops")

    while queue:
        path = queue.pop(0)
        if path not in done:
            done.add(path)
            add_path(path, path if path in wanted else "a program in the image")
    return entries, used


def _kernel_parts(recipe: Recipe, tree: Path) -> tuple[Path, str, list[str]]:
    vmlinuz = sorted((tree / "boot").glob("vmlinuz-*"))
    if len(vmlinuz) != 1:
        raise recipe.error("kernel.package", f"expected one /boot/vmlinuz-* in the package, found {len(vmlinuz)}")
    version = vmlinuz[0].name[len("vmlinuz-"):]
    moddir = tree / "lib" / "modules" / version
    if not (moddir / "modules.dep").exists():  # Debian's .deb ships none; depmod works across architectures
        proc = subprocess.run(["depmod", "-b", str(tree), version], capture_output=True, text=True)
        if proc.returncode != 0:
            raise JobError(f"depmod -b {tree} {version} failed: {proc.stderr.strip()}")
    deps = parse_modules_dep((moddir / "modules.dep").read_text())
    try:
        order = load_order(deps, recipe.modules)
    except KeyError as exc:
        raise recipe.error("kernel.modules", f"module '{exc.args[0]}' is not in kernel {version}") from None
    return vmlinuz[0], version, order


def _build_into(recipe: Recipe, resolution: Resolution, key: str, image_dir: Path, pkgs: debian.PackageCache) -> None:
    ktree = pkgs.tree(resolution.kernel)
    vmlinuz, kversion, modules = _kernel_parts(recipe, ktree)
    trees = {p: pkgs.tree(p) for p in resolution.packages}
    built = {f"/usr/bin/{program.name}": build_program(program, recipe.arch, list(trees.values()), TRIPLETS[recipe.arch])
             for program in recipe.programs}
    entries, used = _collect(_Tree(trees), list(recipe.files) or ["/bin/busybox"], recipe.arch, recipe, built)

    moddir = f"/lib/modules/{kversion}"
    for rel in modules:
        src = ktree / "lib" / "modules" / kversion / rel
        entries[f"{moddir}/{rel}"] = Entry.file(f"{moddir}/{rel}", src.read_bytes())
    entries["/etc/farm/modules"] = Entry.file("/etc/farm/modules", "".join(f"{kversion}/{m}\n" for m in modules).encode())
    entries["/init"] = Entry.file("/init", _support_file("init.sh"), 0o755)
    entries["/etc/farm/udhcpc.sh"] = Entry.file("/etc/farm/udhcpc.sh", _support_file("udhcpc.sh"), 0o755)
    entries["/etc/passwd"] = Entry.file("/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
    entries["/etc/group"] = Entry.file("/etc/group", b"root:x:0:\n")
    entries["/dev/console"] = Entry.chardev("/dev/console", 5, 1)
    dirs = set(BASE_DIRS)
    for path in list(entries):
        parent = posixpath.dirname(path.strip("/"))
        while parent:
            dirs.add(parent)
            parent = posixpath.dirname(parent)
    for d in dirs:
        entries.setdefault("/" + d, Entry.directory(d))

    cpio = write_newc(entries.values())
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=image_dir.parent if image_dir.parent.exists() else _mk(image_dir.parent)))
    try:
        kernel_name = KERNEL_NAMES[recipe.arch]
        if recipe.kernel_compress == "gzip":
            kernel_name += ".gz"
            with open(vmlinuz, "rb") as src, open(tmp / kernel_name, "wb") as raw, \
                    gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
                shutil.copyfileobj(src, gz, 1 << 20)
        else:
            shutil.copyfile(vmlinuz, tmp / kernel_name)
        with open(tmp / INITRD_NAME, "wb") as raw:
            # mtime=0 and no file name in the header: the same cpio gives the same .gz
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
                gz.write(cpio)
        artifacts = {name: {"sha256": debian.sha256_file(tmp / name), "size": (tmp / name).stat().st_size}
                     for name in (kernel_name, INITRD_NAME)}
        manifest = {
            "name": recipe.name, "arch": recipe.arch, "key": key, "builder": BUILDER_VERSION,
            "recipe": recipe.canonical(), "kernel": kernel_name, "initrd": INITRD_NAME,
            "kernel_compression": recipe.kernel_compress,
            "kernel_version": kversion, "modules": [posixpath.basename(m) for m in modules],
            "artifacts": artifacts,
            "packages": [{"name": p.name, "version": p.version, "arch": p.arch, "sha256": p.sha256}
                         for p in sorted({resolution.kernel, *used}, key=lambda p: p.name)],
            "initrd_files": len(entries),
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        if image_dir.exists():  # a concurrent build of the same key won: same bytes
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, image_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
