"""``farm build``."""

from __future__ import annotations

import argparse
import sys

from ..values import out_dir_arg


def cmd_build(args: argparse.Namespace) -> int:
    from ..images.build import build

    guest = build(args.guest) if args.guest else None
    image = build(args.recipe, out=args.out, guest=guest)
    m = image.manifest
    state = "cached" if image.cached else "built"
    print(f"{state} {m['name']} ({m['arch']}, kernel {m['kernel_version']}): "
          + ", ".join(f"{n} {a['size'] / 1e6:.1f} MB sha256:{a['sha256'][:12]}" for n, a in m["artifacts"].items()),
          file=sys.stderr)
    print(image.path)
    return 0


def register(sub) -> None:
    p = sub.add_parser("build", help="build a kernel + initrd image from a recipe",
                       description="Build the image of RECIPE (Debian kernel, initrd from Debian packages, "
                       "kernel modules) reproducibly, served from the cache ($FARM_CACHE, default ~/.cache/farm) when "
                       "unchanged and its files still match their sha256 (a damaged image is rebuilt). Prints "
                       "the image directory (artifacts + manifest.json) on the last line of stdout; a build that "
                       "is not cached says its progress on stderr, phase by phase (resolve, download, extract, "
                       "kernel, programs, initrd), a line at least every 10 s of a long phase.")
    p.add_argument("recipe", help="image recipe, e.g. images/maaxboard-bench.yaml")
    p.add_argument("--out", metavar="DIR", type=out_dir_arg, help="also copy the image files into DIR, which must be outside "
                   "farm's cache (and print DIR)")
    p.add_argument("--guest", metavar="GUEST_RECIPE", help="build the host image of a setup with a guest: "
                   "RECIPE plus QEMU, chrt/taskset and the kernel and initrd of GUEST_RECIPE's image (built "
                   "too), at /guest/ (see docs/guest.md)")
    p.set_defaults(func=cmd_build)
