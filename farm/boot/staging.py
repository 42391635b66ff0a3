"""Stage an image's files on the TFTP server, in a folder of the job's own: ``<root>/<user>/<job>/<file>``.

labgrid's ``TFTPProviderDriver`` links every file as ``<root>/<basename>``: two jobs staging an
``Image`` would overwrite each other. This driver keeps labgrid's mechanism (ManagedFile: a symlink
locally, an rsync to the exporter's cache plus a symlink for a RemoteTFTPProvider) but puts the link in
a per-job folder whose parts are checked to stay inside the root.

For a RemoteTFTPProvider everything goes through ``ssh <exporter host>`` as labgrid does it; when the
exporter host sees the same file at the same path (the virtual lab on this machine, or an NFS-shared
cache) labgrid's ManagedFile notices and links it instead of copying.
"""

from __future__ import annotations

import getpass
import os
import re
import shlex

import attr
from labgrid.driver.provider import TFTPProviderDriver
from labgrid.factory import target_factory
from labgrid.resource.common import NetworkResource
from labgrid.step import step
from labgrid.util.managedfile import ManagedFile
from labgrid.util.ssh import sshmanager

from ..errors import JobError
from .lgenv import local_tftp_root

_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")


def safe_component(value: str, what: str) -> str:
    """A single path component that cannot escape a folder: no '/', no '..', no NUL, no leading dot."""
    if not _COMPONENT.fullmatch(value) or ".." in value:
        raise JobError(f"unsafe {what} {value!r}: only letters, digits and . _ + - are allowed, not starting with '.'")
    return value


def job_folder(user: str, job: str) -> str:
    return f"{safe_component(user, 'user name')}/{safe_component(job, 'job id')}"


def current_user() -> str:
    user = os.environ.get("LG_USERNAME") or getpass.getuser()
    return re.sub(r"[^A-Za-z0-9._+-]", "_", user) or "user"


@target_factory.reg_driver
@attr.s(eq=False)
class JobTFTPProviderDriver(TFTPProviderDriver):
    """TFTPProviderDriver that stages into ``<user>/<job>/`` and returns the path the bootloader asks for."""

    @property
    def remote(self) -> bool:
        """A RemoteTFTPProvider: the folder lives on the exporter's host."""
        return isinstance(self.provider, NetworkResource)

    @property
    def root(self) -> str:
        """The TFTP root: the exporter's for a remote provider; a local one's may be ``$LG_TFTP_ROOT``."""
        return self.provider.internal if self.remote else local_tftp_root(self.provider.internal)

    @TFTPProviderDriver.check_active
    @step(args=["filename", "folder", "name"], result=True)
    def stage_as(self, filename: str, folder: str, name: str) -> str:
        name = safe_component(name, "file name")
        parts = [safe_component(p, "folder name") for p in folder.split("/")]
        internal = self.root.rstrip("/")
        link = os.path.join(internal, *parts, name)
        # the realpath check with a trailing separator also refuses a sibling such as <root>-evil
        if not os.path.realpath(os.path.dirname(link)).startswith(os.path.realpath(internal) + os.sep) \
                and not self.remote:
            raise JobError(f"staging path {link} is outside the TFTP root {internal}")
        ManagedFile(filename, self.provider).sync_to_resource(symlink=link)
        external = self.provider.external.rstrip("/")
        return "/".join(p for p in (external, *parts, name) if p)

    def unstage(self, folder: str) -> None:
        """Remove the job's folder (its links only: staged files stay in labgrid's cache).

        For a RemoteTFTPProvider this runs on the exporter's host, over the SSH connection that
        staged the files (labgrid's sshmanager keeps it open).
        """
        parts = [safe_component(p, "folder name") for p in folder.split("/")]
        path = os.path.join(self.root, *parts)
        if self.remote:
            quoted = shlex.quote(path)
            sshmanager.open(self.provider.host).run_check(
                f"if [ -d {quoted} ]; then rm -f -- {quoted}/* && rmdir -- {quoted}; fi")
            return
        if os.path.isdir(path):
            for name in os.listdir(path):
                os.unlink(os.path.join(path, name))
            os.rmdir(path)
