"""``farm run --image PATH``: images built already (by ``farm build``, by a lab, or a system image's
file), each artifact checked against its manifest, keyed by architecture and kind; and where a raw
binary among them loads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from ..errors import JobError
from ..images.image import Image, load_image, verify_artifacts

if TYPE_CHECKING:
    from .model import Pipeline


def given_load_addr(pipeline: Pipeline) -> int | None:
    """The load address of a raw image given by ``--image FILE``: the one the pipeline's setups' flows
    give it (farm.flows.FlowType.given_load_addr; none of them, or setups that differ: a JobError)."""
    found = {s.name: a for s in pipeline.setups if (a := s.flow.given_load_addr()) is not None}
    if len(set(found.values())) > 1:
        named = ", ".join(f"{name}: {a:#x}" for name, a in found.items())
        raise JobError(f"{pipeline.source}: setups boot the run's --image at different load addresses ({named}): "
                       "one image has one load address")
    return next(iter(found.values()), None)


def given_images(paths: list[Path], arches: set[str], kinds: set[str] | None = None, *,
                 load_addr: int | None = None) -> dict[tuple[str, str], Image]:
    """``--image PATH``: built images by (architecture, kind), each artifact's sha256 checked against its
    manifest (an artifact passed between CI jobs may be truncated or stale); a JobError names the path.

    A path is an image directory (``farm build``'s, or a system image's with its manifest.json) or a
    system image's file (a lab's ``loader.img``, farm.images.system), for setups of the flow system;
    ``kinds``: the kinds of image the pipeline's setups boot (a given image of another kind is refused);
    ``load_addr``: a raw binary's load address (the setups' flows', :func:`given_load_addr`)."""
    from ..images.image import LINUX, SYSTEM

    given: dict[tuple[str, str], Image] = {}
    for path in paths:
        if Path(path).is_file():
            from ..images.system import system_image

            try:
                image = system_image(path, arch=next(iter(arches)) if len(arches) == 1 else None, load_addr=load_addr)
            except JobError as exc:
                raise JobError(f"--image {exc}") from None
        else:
            image = load_image(path)
        try:
            image = attrs.evolve(verify_artifacts(image), cached=True)
        except JobError as exc:
            raise JobError(f"--image {exc}") from None
        if image.kind == SYSTEM:
            from ..images.system import content_keyed

            image = content_keyed(image)  # a lab's directory whose manifest wrote no key
        key = (image.arch, image.kind)
        if key in given:
            what = f"{image.arch} image" if image.kind == LINUX else f"{image.arch} {image.kind} image"
            raise JobError(f"--image {path}: a second {what} (first: {given[key].path})")
        if image.arch not in arches:
            raise JobError(f"--image {path}: is {image.arch}, but the run's targets are {', '.join(sorted(arches))}")
        if kinds is not None and image.kind not in kinds:
            what = {SYSTEM: "a system image (booted by setups of the flow system)",
                    LINUX: "a Linux image (kernel + initrd)"}.get(image.kind, f"a {image.kind} image")
            raise JobError(f"--image {path}: {what}, and no setup of the pipeline boots one")
        given[key] = image
    return given
