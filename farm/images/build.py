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
import re
import shutil
import stat
import subprocess
import time
from importlib import resources
from pathlib import Path

import attrs

from ..errors import JobError
from . import cachefs, debian, host, kernel as source_kernel
from .cpio import Entry, write_newc
from .elf import elf_deps, is_elf
from .modules import load_order, parse_modules_dep
from .needs import Needs, with_needs
from .programs import build_program, compiler_fingerprint
from .progress import BuildProgress
from .image import Image, default_cache, load_image, manifest_problem, read_initrd  # noqa: F401  (farm.images.build.*, as before)
from .recipe import INITRD_COMPRESSIONS, Recipe, load_recipe

BUILDER_VERSION = "1"
TRIPLETS = {"arm64": "aarch64-linux-gnu", "amd64": "x86_64-linux-gnu"}
KERNEL_NAMES = {"arm64": "Image", "amd64": "bzImage"}
ZSTD_LEVEL = 19  # the smallest initrd zstd makes in seconds; the kernel's unzstd takes any level


def zstd_command(level: int = ZSTD_LEVEL) -> list[str]:
    """The initrd's compressor, reading stdin: single-threaded, so one input, level and zstd version give
    the same bytes (benchmarks/initrd_levels.py measures the levels with it)."""
    return ["zstd", "-q", f"-{level}", "-T1", "--check", "-c"]
#: the library glibc dlopens to unwind a cancelled thread (farm.images.build._collect adds it to a glibc closure)
UNWINDER = "libgcc_s.so.1"
#: packages of the target's C library a program is not linked against (the cross compiler has its own)
TOOLCHAIN_OWN = frozenset({"libc6-dev"})
BASE_DIRS = ("bin", "dev", "etc", "etc/farm", "lib", "proc", "root", "run", "sbin", "sys", "tmp",
             "usr", "usr/bin", "usr/sbin", "var")


VERIFIED = ".verified.json"  # in a cached image: the stat fingerprints of its artifacts when last hashed
BUILD_PREFIX = ".build-"  # private build directories under images/


def _support_file(name: str) -> bytes:
    return resources.files("farm.images").joinpath(name).read_bytes()


def _hash_json(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


@attrs.frozen
class Resolution:
    kernel: debian.Package | None  # None: the recipe builds its kernel from source
    packages: tuple[debian.Package, ...]


def resolve_recipe(recipe: Recipe, cache: Path) -> Resolution:
    """Exact package versions for the recipe, cached per state of apt's package lists."""
    key = _hash_json([recipe.canonical(), debian.apt_lists_fingerprint(recipe.arch)])
    cached = cache / "resolved" / f"{key}.json"
    try:
        data = json.loads(cached.read_text())
        return Resolution(debian.package_from_json(data["kernel"]) if data["kernel"] is not None else None,
                          tuple(debian.package_from_json(p) for p in data["packages"]))
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError) as exc:  # ValueError: bad JSON, bad UTF-8, bad package
        cachefs.say(f"{cached}: corrupt cache file ({type(exc).__name__}: {str(exc)[:120]}), "
                    "discarded; resolving the recipe again")
        cached.unlink(missing_ok=True)
    started = time.monotonic()
    hint = (f"not found for {recipe.arch} (does apt know this architecture? "
            f"`dpkg --add-architecture {recipe.arch} && apt-get update`, which `make setup` runs)")
    try:
        kernel = debian.follow_metapackage(recipe.kernel_package, recipe.arch) if not recipe.kernel_source else None
    except debian.PackageNotFound as exc:
        raise recipe.error("kernel.package", f"Debian package '{exc.args[0]}' {hint}") from None
    program_packages = [name for program in recipe.programs for name in program.packages]
    packages, missing = debian.resolve([*recipe.packages, *program_packages], recipe.arch)
    if missing:
        where = "programs" if missing[0] in program_packages and missing[0] not in recipe.packages else "initrd.packages"
        raise recipe.error(where, f"Debian package '{missing[0]}' {hint}")
    resolution = Resolution(kernel, tuple(packages[n] for n in sorted(packages)))
    cachefs.say(f"build {recipe.name}: resolve done: {len(resolution.packages) + (kernel is not None)} packages' "
                f"exact versions (apt-cache) in {time.monotonic() - started:.0f}s")
    cachefs.atomic_write(cached, debian.dumps({"kernel": debian.package_to_json(kernel) if kernel else None,
                                               "packages": [debian.package_to_json(p) for p in resolution.packages]}))
    return resolution


def image_key(recipe: Recipe, resolution: Resolution, cache: Path) -> str:
    return _hash_json({
        "builder": BUILDER_VERSION,
        "recipe": recipe.canonical(),
        "kernel": debian.package_to_json(resolution.kernel) if resolution.kernel else None,
        **({"kernel_build": _kernel_key(recipe, cache)} if recipe.kernel_source else {}),
        "packages": [debian.package_to_json(p) for p in resolution.packages],
        "support": [hashlib.sha256(_support_file(n)).hexdigest() for n in ("init.sh", "udhcpc.sh")],
        "compiler": compiler_fingerprint(recipe.arch) if recipe.programs else None,
        **({"initrd_tool": _zstd_version()} if recipe.initrd_compress == "zstd" else {}),
    })


def _zstd_version() -> str:
    """Which zstd compresses the initrd (another version may pick other bytes for the same cpio), by its
    binary's stat: no process started, a cached build runs none."""
    found = shutil.which("zstd")
    if found is None:
        return "zstd missing"  # the build says so, naming initrd.compress (check_initrd_tool)
    return cachefs.tool_fingerprint(found)


def build(recipe_path: str | Path, out: str | Path | None = None, cache: Path | None = None,
          guest: Image | None = None, needs: Needs | None = None) -> Image:
    """Build (or fetch from the cache) the image of a recipe; with ``out``, also copy it there.

    With ``guest``, the host image of a setup with a guest: the recipe plus QEMU, chrt/taskset and
    the guest's kernel and initrd (farm.images.host). With ``needs``, the recipe gains what the
    benchmarks that run on the image need (farm.images.needs).

    A cached image is served only once its artifacts are checked against its manifest (size and sha256,
    rehashed only when a file's stat fingerprint changed); a damaged one is rebuilt, and says so. Builds of
    one image wait for each other (a lock per image, and per package extraction), so concurrent first
    builds on an empty cache both succeed.
    """
    recipe = load_recipe(recipe_path)
    if needs:
        recipe = with_needs(recipe, needs)
    if guest is not None:
        recipe = host.host_recipe(recipe, guest.manifest)
    cache = cache or default_cache()
    if out is not None and cachefs.is_inside(Path(out), cache):
        raise JobError(f"--out {out}: is inside farm's cache {cache}, whose images are served to every later "
                       "build; choose a directory outside it (the printed image directory can be used as it is)")
    pkgs = debian.PackageCache(cache)
    _clean_abandoned(cache, pkgs)
    resolution = resolve_recipe(recipe, cache)
    key = image_key(recipe, resolution, cache)
    if guest is not None:
        key = host.host_key(key, guest.manifest)
    image_dir = cache / "images" / f"{recipe.name}-{key[:16]}"
    with cachefs.locked(image_dir.with_name(f".{image_dir.name}.lock")):
        problem = verify_cached(image_dir, key)
        if problem is not None:
            if image_dir.exists() or image_dir.is_symlink():
                cachefs.say(f"cached image {image_dir} is damaged ({problem}): rebuilding it")
            check_initrd_tool(recipe)
            progress = BuildProgress(recipe.name, cachefs.say)
            _build_into(recipe, resolution, key, image_dir, pkgs, cache, guest, progress)
            progress.finished(f"{image_dir}")
        image = attrs.evolve(load_image(image_dir), cached=problem is None)
        if out is not None:
            image = attrs.evolve(export(image, Path(out)), cached=image.cached)
    return image


def _clean_abandoned(cache: Path, pkgs: debian.PackageCache) -> None:
    for prefix in (BUILD_PREFIX, cachefs.TRASH_PREFIX):
        for path in cachefs.clean_abandoned(cache / "images", prefix):
            cachefs.say(f"removed {path}, left by a build that was killed")
    pkgs.clean_abandoned()


def verify_cached(image_dir: Path, key: str) -> str | None:
    """Why the cached image in ``image_dir`` must not be served (``"missing"`` when there is none), or None.

    Every artifact is compared with the manifest: size always, sha256 when the file's stat fingerprint
    differs from the one recorded when it was last hashed (so a served image costs a few stat calls)."""
    if image_dir.is_symlink() or not image_dir.is_dir():
        return "missing" if not image_dir.is_symlink() else "a symlink, not a directory"
    try:
        manifest = json.loads((image_dir / "manifest.json").read_text())
    except FileNotFoundError:
        return "no manifest.json"
    except (OSError, ValueError) as exc:
        return f"manifest.json unreadable: {type(exc).__name__}"
    problem = manifest_problem(manifest)
    if problem:
        return f"manifest.json: {problem}"
    if manifest.get("key") != key:
        return "manifest.json is of another build"
    record_path = image_dir / VERIFIED
    record = _read_record(record_path)
    fresh: dict[str, list[int]] = {}
    for name, info in sorted(manifest["artifacts"].items()):
        path = image_dir / name
        try:
            if path.is_symlink() or not path.is_file():
                return f"{name} is not a regular file"
            fingerprint = cachefs.stat_fingerprint(path)
        except OSError as exc:
            return f"{name}: {exc.strerror}"
        if fingerprint[0] != info["size"]:
            return f"{name} has {fingerprint[0]} bytes, the manifest says {info['size']}"
        if record.get(name) != fingerprint:
            if debian.sha256_file(path) != info["sha256"]:
                return f"{name} does not match its sha256 in the manifest"
        fresh[name] = fingerprint
    if fresh != record:
        _write_record(record_path, fresh)
    return None


def _read_record(path: Path) -> dict[str, list[int]]:
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        record = exc
    if not (isinstance(record, dict) and all(isinstance(v, list) for v in record.values())):
        cachefs.say(f"{path}: corrupt cache file, discarded; the image's artifacts are hashed again")
        return {}
    return record


def _write_record(path: Path, record: dict[str, list[int]]) -> None:
    try:
        cachefs.atomic_write(path, json.dumps(record, sort_keys=True) + "\n")
    except OSError:  # a read-only cache still serves; it only hashes again next time
        pass


def export(image: Image, out: Path) -> Image:
    """Copy the image's files into ``out`` (reflinked where the file system can): never hard links, so
    an exported file edited later cannot change the cache. Each file is replaced by a rename, so a file
    already there (even a hard link into the cache from an older farm) is never written through."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name in [*image.manifest["artifacts"], "manifest.json"]:
            _copy_replacing(image.path / name, out / name)
    except OSError as exc:
        raise JobError(f"--out {out}: cannot write the image there: {exc.strerror or exc}") from None
    return load_image(out)


def _copy_replacing(src: Path, dst: Path) -> None:
    tmp = dst.with_name(f".{dst.name}.{os.urandom(6).hex()}.tmp")
    with open(src, "rb") as fsrc:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            with os.fdopen(fd, "wb") as fdst:
                _copy_data(fsrc, fdst)
            os.replace(tmp, dst)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def _copy_data(fsrc, fdst) -> None:
    """copy_file_range: the kernel copies (or shares extents on btrfs/XFS); plain reads where it cannot."""
    size = os.fstat(fsrc.fileno()).st_size
    copied = 0
    try:
        while copied < size:
            n = os.copy_file_range(fsrc.fileno(), fdst.fileno(), size - copied)
            if n == 0:
                break
            copied += n
    except OSError:  # EXDEV on older kernels, ENOSYS, a file system without it
        pass
    if copied < size:
        fsrc.seek(copied)
        fdst.seek(copied)
        shutil.copyfileobj(fsrc, fdst, 1 << 20)


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

    def drain() -> None:
        while queue:
            path = queue.pop(0)
            if path not in done:
                done.add(path)
                add_path(path, path if path in wanted else "a program in the image")

    drain()
    # glibc loads libgcc_s.so.1 itself (dlopen: no DT_NEEDED names it) to unwind a thread that is cancelled
    # or exits (pthread_cancel, pthread_exit: DPDK's EAL cancels its control threads); without it such a
    # program aborts ("libgcc_s.so.1 must be installed for pthread_cancel to work")
    if any(posixpath.basename(p) == "libc.so.6" for p in entries):
        for d in lib_dirs:
            if tree.lookup(f"{d}/{UNWINDER}"):
                queue.append(f"{d}/{UNWINDER}")
                break
        drain()
    return entries, used


def _kernel_key(recipe: Recipe, cache: Path) -> str:
    assert recipe.kernel_source is not None
    where = recipe.where.get("kernel.source", recipe.source)
    identity = source_kernel.source_identity(recipe.kernel_source, cache, where)
    return source_kernel.kernel_key(recipe.kernel_source, identity, recipe.arch)


def initrd_name(compress: str) -> str:
    return "initrd.cpio" + INITRD_COMPRESSIONS[compress]


def check_initrd_tool(recipe: Recipe) -> None:
    if recipe.initrd_compress == "zstd" and shutil.which("zstd") is None:
        raise recipe.error("initrd.compress", "zstd needs the zstd program (Debian package zstd; make setup "
                                              "installs it)")


def write_initrd(directory: Path, cpio: bytes, recipe: Recipe) -> str:
    """The compressed cpio in ``directory``, the same bytes for the same cpio; returns its file name."""
    name = initrd_name(recipe.initrd_compress)
    with open(directory / name, "wb") as raw:
        if recipe.initrd_compress == "gzip":
            # mtime=0 and no file name in the header: the same cpio gives the same .gz
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
                gz.write(cpio)
        else:  # zstd: the same bytes for one input, level and zstd version (single-threaded)
            done = subprocess.run(zstd_command(), input=cpio, stdout=raw, stderr=subprocess.PIPE)
            if done.returncode != 0:
                raise recipe.error("initrd.compress", f"zstd failed (exit {done.returncode}): "
                                                      f"{done.stderr.decode(errors='replace').strip()[-300:]}")
    return name


def _kernel_parts(recipe: Recipe, tree: Path) -> tuple[Path, str, list[str]]:
    vmlinuz = sorted((tree / "boot").glob("vmlinuz-*"))
    if len(vmlinuz) != 1:
        raise recipe.error("kernel.package", f"expected one /boot/vmlinuz-* in the package, found {len(vmlinuz)}")
    version = vmlinuz[0].name[len("vmlinuz-"):]
    moddir = tree / "lib" / "modules" / version
    if recipe.kernel_source and not moddir.is_dir():  # everything built in (CONFIG_MODULES is not set)
        if recipe.modules:
            raise recipe.error("kernel.modules", f"kernel {version} is built without modules (its config sets no "
                                                 "CONFIG_MODULES): drop kernel.modules, its drivers are built in")
        return vmlinuz[0], version, []
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


def _fetch_packages(packages: list[debian.Package], pkgs: debian.PackageCache, progress: BuildProgress) -> None:
    """Download the .debs not in the cache, then extract the trees not extracted yet: two phases
    with their progress (a cold build's first minutes)."""
    to_download = [p for p in packages if not pkgs.has_tree(p) and not pkgs.has_deb(p)]
    if to_download:
        progress.start("download", len(to_download), f"{len(to_download)} Debian packages (apt-get download)")
        pkgs.prefetch(to_download)  # one apt run for them all; what it could not fetch, download() fetches alone
        for p in to_download:
            progress.step(pkgs.download(p).stat().st_size)
        progress.end()
    to_extract = [p for p in packages if not pkgs.has_tree(p)]
    if to_extract:
        progress.start("extract", len(to_extract), f"{len(to_extract)} packages (dpkg-deb -x)")
        for p in to_extract:
            pkgs.tree(p)
            progress.step()
        progress.end()


def _build_into(recipe: Recipe, resolution: Resolution, key: str, image_dir: Path, pkgs: debian.PackageCache,
                cache: Path, guest: Image | None = None, progress: BuildProgress | None = None) -> None:
    progress = progress or BuildProgress(recipe.name, cachefs.say)
    _fetch_packages([*([resolution.kernel] if resolution.kernel else []), *resolution.packages], pkgs, progress)
    built_kernel = None
    if recipe.kernel_source:
        progress.start("kernel", what=f"from {recipe.kernel_source.location} (cached, or built: its own lines "
                                      "follow)")
        built_kernel = source_kernel.kernel_for(recipe.kernel_source, recipe.arch, cache,
                                                recipe.where.get("kernel.source", recipe.source))
        ktree = built_kernel.tree
        progress.end(f"kernel {built_kernel.release}")
    else:
        assert resolution.kernel is not None
        ktree = pkgs.tree(resolution.kernel)
    vmlinuz, kversion, modules = _kernel_parts(recipe, ktree)
    trees = {p: pkgs.tree(p) for p in resolution.packages}
    if recipe.programs:
        progress.start("programs", len(recipe.programs), ", ".join(p.name for p in recipe.programs)
                       + f" ({TRIPLETS[recipe.arch]})")
    built = {}
    # the cross compiler brings its own C library: a libc6-dev among the packages (dpdk-dev pulls it in) has
    # linker scripts naming /lib/<triplet>/libc.so.6, absolute paths of the target that are not on this host
    sysroot = [tree for pkg, tree in trees.items() if pkg.name not in TOOLCHAIN_OWN]
    for program in recipe.programs:
        built[f"/usr/bin/{program.name}"] = build_program(program, recipe.arch, sysroot, TRIPLETS[recipe.arch])
        progress.step()
    if recipe.programs:
        progress.end()
    progress.start("initrd", what=f"collecting files, the cpio and {recipe.initrd_compress}")
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
    if guest is not None:
        entries.update(host.guest_entries(guest.path, guest.manifest))
    dirs = set(BASE_DIRS)
    for path in list(entries):
        parent = posixpath.dirname(path.strip("/"))
        while parent:
            dirs.add(parent)
            parent = posixpath.dirname(parent)
    for d in dirs:
        entries.setdefault("/" + d, Entry.directory(d))

    cpio = write_newc(entries.values())
    progress.note(f"cpio of {len(entries)} files, {len(cpio) / 1e6:.1f} MB; compressing ({recipe.initrd_compress})")
    with cachefs.private_dir(image_dir.parent, BUILD_PREFIX) as tmp:
        kernel_name = KERNEL_NAMES[recipe.arch]
        if recipe.kernel_compress == "gzip":
            kernel_name += ".gz"
            with open(vmlinuz, "rb") as src, open(tmp / kernel_name, "wb") as raw, \
                    gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
                shutil.copyfileobj(src, gz, 1 << 20)
        else:
            shutil.copyfile(vmlinuz, tmp / kernel_name)
        dtbs = dict(source_kernel.iter_dtbs(built_kernel)) if built_kernel else {}
        for name, path in dtbs.items():
            shutil.copyfile(path, tmp / name)
        initrd_name = write_initrd(tmp, cpio, recipe)
        artifacts = {name: {"sha256": debian.sha256_file(tmp / name), "size": (tmp / name).stat().st_size}
                     for name in (kernel_name, initrd_name, *dtbs)}
        manifest = {
            "name": recipe.name, "arch": recipe.arch, "key": key, "builder": BUILDER_VERSION,
            "recipe": recipe.canonical(), "kernel": kernel_name, "initrd": initrd_name,
            "initrd_compression": recipe.initrd_compress,
            "kernel_compression": recipe.kernel_compress,
            "kernel_version": kversion, "modules": [posixpath.basename(m) for m in modules],
            "artifacts": artifacts,
            "packages": [{"name": p.name, "version": p.version, "arch": p.arch, "sha256": p.sha256}
                         for p in sorted({resolution.kernel, *used} - {None}, key=lambda p: p.name)],
            "initrd_files": len(entries),
        }
        if guest is not None:
            manifest["guest"] = host.guest_record(guest.manifest)
        if built_kernel:  # what it was built from: the source's version and sha256, the merged config's sha256
            manifest["kernel_source"] = {k: built_kernel.info[k] for k in (
                "source", "source_kind", "config_base", "config_fragments", "config_sha256", "modules")}
            manifest["dtbs"] = sorted(dtbs)
        progress.end(f"{initrd_name} {artifacts[initrd_name]['size'] / 1e6:.1f} MB, {len(entries)} files")
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        _write_record(tmp / VERIFIED, {name: cachefs.stat_fingerprint(tmp / name) for name in artifacts})
        if image_dir.exists() or image_dir.is_symlink():  # damaged (the caller holds the image's lock)
            cachefs.discard(image_dir)
        os.replace(tmp, image_dir)
