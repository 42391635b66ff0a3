"""What farm's netboot strategies share (U-Boot and iPXE): the image to boot, the kernel command
line, the TFTP server, and the wait for the initrd's ready marker. Each bootloader's flow is its own
subclass, read top to bottom in its ``transition``.

With no image staged (plain labgrid: ``labgrid-client -s shell``, ``strategy.transition("shell")``),
the strategy boots the env file's ``images:`` entry named by ``image`` (labgrid's convention): a
farm image directory, or a recipe built on demand (served from farm's cache when nothing changed).
It is staged under ``<user>/image-<key>/``: the same image, the same links, so sessions never clash."""

from __future__ import annotations

import enum
from typing import Any, Mapping

import attr
from labgrid.factory import target_factory
from labgrid.strategy.common import Strategy, StrategyError, never_retry

from ..errors import JobError
from ..values import bootarg_problem
from .envfile import attribute
from .staging import current_user, job_folder


def bootargs_problem(value: str) -> str | None:
    """Why one of the words of ``value`` is not a kernel argument farm types at a bootloader, or None."""
    return next((problem for arg in value.split() if (problem := bootarg_problem(arg))), None)


def image_at(path: str):
    """The image of ``path``: a recipe (``.yaml``) built on demand (farm's cache), else an image directory."""
    from ..images.build import build, load_image  # the image code only when it is needed

    return build(path) if str(path).endswith((".yaml", ".yml")) else load_image(path)


@attr.s(eq=False)
class NetbootStrategy(Strategy):
    """Netboot to a shell; a subclass is one bootloader's flow (its ``transition``), its states an enum
    ``Status`` of ``unknown``, ``off``, the bootloader's command line (:attr:`BOOTLOADER`) and ``shell``."""

    #: the state at the bootloader's command line, and the binding that drives it there (its driver)
    BOOTLOADER = "bootloader"
    # the env file's attributes (farm.boot.envfile reads them before labgrid does, `farm schema env`)
    console_device = attribute("ttyS0", str, "Linux's console device and its settings (console=ttyS0)")
    bootargs = attribute("", str, "kernel arguments after console=, typed at the bootloader: letters, digits and "
                                  "_ . , : = / + @ - each", check=bootargs_problem)
    tftp_server = attribute("", str, "the TFTP server; empty: the next-server of the bootloader's DHCP lease")
    pass_lease = attribute(True, bool, "hand the bootloader's DHCP lease to Linux (farm.ip=, farm.mac=): /init "
                                       "need not ask again")
    ready_marker = attribute("FARM-READY", str, "the line the initrd prints when its shell is ready")
    tftp_timeout = attribute(120, int, "seconds for DHCP and for each TFTP transfer")
    ready_timeout = attribute(120, int, "seconds from the kernel's start to the ready marker")
    image = attribute("farm-image", str, "the key in the env file's images: booted when nothing was staged (an "
                                         "image directory or a recipe)")

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.kernel_path: str | None = None
        self.initrd_path: str | None = None
        self.extra_bootargs: list[str] = []
        self.kernel_compressed = False
        self.dtb_path: str | None = None  # a staged DTB the boot command hands Linux (None: the bootloader's own DT)
        #: the device tree booted, for run.json (farm.boot.dtb.dtb_record); None: the flow has none (iPXE)
        self.dtb_used: dict | str | None = None
        self.retyped: list[str] = []  # bootloader commands typed again because their echo differed

    def set_image(self, kernel_path: str, initrd_path: str, extra_bootargs: list[str] | None = None,
                  kernel_compressed: bool = False, dtb_path: str | None = None) -> None:
        """The TFTP paths (as returned by staging) to boot at the next transition to ``shell``."""
        self.kernel_path, self.initrd_path = kernel_path, initrd_path
        self.extra_bootargs = list(extra_bootargs or [])
        self.kernel_compressed = kernel_compressed
        self.dtb_path = dtb_path

    def image_dtb(self, manifest: dict) -> str | None:
        """The image's DTB to stage and boot (None: none); a JobError if the image cannot give it."""
        return None

    def stage_image(self, tftp, image, folder: str, extra_bootargs: list[str] | None = None) -> None:
        """Stage ``image``'s kernel, initrd and the DTB this strategy boots in ``folder``, and set them.
        The DTB is checked against the image first: bad input stages nothing. A system image (one file,
        booted as it is) is staged by :meth:`stage_system`."""
        if getattr(image, "kind", "linux") == "system":
            return self.stage_system(tftp, image, folder)
        dtb = self.image_dtb(image.manifest)
        kernel = tftp.stage_as(str(image.kernel), folder, image.manifest["kernel"])
        initrd = tftp.stage_as(str(image.initrd), folder, image.manifest["initrd"])
        options = {}
        if image.manifest.get("kernel_compression", "none") != "none":
            options["kernel_compressed"] = True
        if dtb:
            options["dtb_path"] = tftp.stage_as(str(image.path / dtb), folder, dtb)
        self.set_image(kernel, initrd, extra_bootargs, **options)

    def stage_system(self, tftp, image, folder: str) -> None:
        """Stage a system image (farm.boot.system): a bootloader's strategy that boots them says how."""
        raise JobError(f"{type(self).__name__} boots a kernel and an initrd, not a system image such as "
                       f"'{image.name}': the flow system boots those through U-Boot (UBootNetbootStrategy)")

    def field_where(self, key: str) -> str:
        """Where the env file sets this strategy's ``key`` (``file:line: field``), for an error message."""
        from ..config import load_yaml

        name, target = type(self).__name__, self.target.name
        path = getattr(getattr(getattr(self.target, "env", None), "config", None), "filename", None)
        if path is None:
            return f"target '{target}': {name}.{key}"
        try:
            return load_yaml(path, "env file")["targets"][target]["drivers"][name].where(key)
        except (JobError, KeyError, TypeError, AttributeError):  # a list of drivers, or a file changed since
            return f"{path}: targets.{target}.drivers.{name}.{key}"

    @classmethod
    def binding_problem(cls, drivers: Mapping[str, Any]) -> tuple[str | None, str] | None:
        """Whether the target's ``drivers`` (an env file's, by class name) give the farm drivers this strategy
        binds: ``(the driver's key or None, problem)``. They subclass labgrid's, and an env file naming
        labgrid's own (an older farm's) is told which one to name instead."""
        for binding in cls.bindings.values():
            farm_driver = target_factory.drivers.get(binding) if isinstance(binding, str) else None
            if getattr(farm_driver, "ADDS", None) is None or binding in drivers:  # not farm's, or there
                continue
            base = next((b.__name__ for b in farm_driver.__mro__[1:] if b.__name__ in drivers), None)
            if base is not None:
                return base, (f"{cls.__name__} needs {binding} (labgrid's {base}, {farm_driver.ADDS}; "
                              f"same settings): rename {base} to {binding}")
            return None, f"{cls.__name__} needs {binding} ({farm_driver.ADDS}): add `{binding}: {{}}`"
        return None

    @never_retry
    def force(self, status):
        """Take the state as it is (labgrid's ``force``): activate what drives it, nothing typed or powered."""
        if not isinstance(status, enum.Enum):
            status = type(self.status)[status]
        binding = {"off": "power", self.BOOTLOADER: self.BOOTLOADER, "shell": "shell"}.get(status.name)
        if binding is None:
            raise StrategyError(f"can not force state {status}")
        self.target.activate(getattr(self, binding))
        self.status = status

    def reset_after_failure(self) -> None:
        """Make the strategy usable again after a failed transition: labgrid's ``never_retry`` keeps the
        exception in ``broken`` and refuses every later call; farm has recorded the failure and retries
        from power-off, so the state is "unknown" (the failed attempt left it mid-way)."""
        self.broken = None
        self.status = type(self.status)(0)

    def staged(self) -> tuple[str, str]:
        if not (self.kernel_path and self.initrd_path):
            self.stage_env_image()
        return self.kernel_path, self.initrd_path

    def stage_env_image(self) -> None:
        """Stage and set the env file's ``images:`` entry ``image`` (nothing staged by a job)."""
        try:
            path = self.target.env.config.get_image_path(self.image)
        except (KeyError, AttributeError):
            raise JobError(f"no image staged: call set_image(), or name an image directory or recipe in the "
                           f"env file's images: section as '{self.image}'") from None
        image = image_at(path)
        folder = job_folder(current_user(), f"image-{image.manifest.get('key', 'unknown')[:16]}")
        self.target.activate(self.tftp)
        self.stage_image(self.tftp, image, folder, self.extra_bootargs)

    def kernel_args(self) -> list[str]:
        """The kernel command line: console, the env file's arguments, the run's (setups, --bootarg)."""
        return [f"console={self.console_device}", *self.bootargs.split(), *self.extra_bootargs]
