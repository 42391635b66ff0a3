"""An image a boot needs, as its flow declares it (farm.boot.flow.BootFlow.images): the runner builds
each request once (the cache does the rest) and hands the flow the image.

    ImageRequest(recipe=Path("images/maaxboard-bench.yaml"), needs=run_needs)   # built, the tools added
    ImageRequest(given=image, label="--image arm64")                            # built already: used as it is
    ImageRequest(recipe=host_recipe, carries=guest_request)                     # built after, and holding, another
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from .needs import Needs

if TYPE_CHECKING:
    from .image import Image


@attrs.frozen
class ImageRequest:
    #: the recipe to build (farm's cache serves it when nothing changed)
    recipe: Path | None = None
    #: an image built already (``--image``, a lab's system image): used as it is, ``recipe`` aside
    given: "Image | None" = attrs.field(default=None, eq=False)
    #: what the benchmarks that run on it need, added to the recipe (farm.images.needs)
    needs: Needs = Needs()
    #: an image built first and put into this one (a host image carries its guest's kernel and initrd)
    carries: "ImageRequest | None" = None
    #: how the build stage names it (default: the recipe's file name)
    label: str = ""
    #: the kind of image (farm.images.image): a Linux one needs a recipe or a given image; a request of
    #: another kind may be empty, handed to a flow that brings its own (a system image's)
    kind: str = "linux"

    def __attrs_post_init__(self) -> None:
        if self.recipe is None and self.given is None and self.kind == "linux":
            raise ValueError("an image request needs a recipe or a given image")

    @property
    def key(self) -> str:
        """What makes two requests one image (built once per run)."""
        if self.given is not None:
            return f"given {self.given.path}"
        if self.recipe is None:
            return f"no {self.kind} image"
        inside = f" carrying ({self.carries.key})" if self.carries else ""
        return f"{self.recipe} + {self.needs}{inside}"

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        return Path(self.recipe).stem if self.recipe is not None else self.given.name if self.given else self.kind

    def build(self, carried: "Image | None" = None) -> "Image":
        """Build it (``carried``: the image of :attr:`carries`, built first)."""
        if self.given is not None:
            return self.given
        if self.recipe is None:
            from ..errors import JobError

            raise JobError(f"no {self.kind} image to boot: its flow brought none")
        from .build import build

        return build(self.recipe, guest=carried, needs=self.needs)
