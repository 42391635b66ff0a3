"""Just enough ELF to find what a program needs at run time: its interpreter and DT_NEEDED libraries.

Used to put into the initrd only the shared libraries the chosen programs load (a lean initrd boots
faster), whatever the architecture: it reads the file, it never runs it.
"""

from __future__ import annotations

import struct

import attrs

PT_INTERP = 3
SHT_DYNAMIC = 6
DT_NEEDED = 1


@attrs.frozen
class ElfDeps:
    interpreter: str | None
    needed: tuple[str, ...]


def is_elf(data: bytes) -> bool:
    return data[:4] == b"\x7fELF"


def elf_deps(data: bytes) -> ElfDeps:
    """Interpreter and DT_NEEDED entries of an ELF file (32/64-bit, either byte order).

    Raises ValueError for anything that is not a whole ELF file (not ELF, truncated, offsets out of range).
    """
    if not is_elf(data):
        raise ValueError("not an ELF file")
    try:
        return _elf_deps(data)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"truncated or malformed ELF file: {exc}") from None


def _elf_deps(data: bytes) -> ElfDeps:
    bits64 = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    if bits64:
        phoff, shoff = struct.unpack_from(end + "QQ", data, 0x20)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", data, 0x36)
    else:
        phoff, shoff = struct.unpack_from(end + "II", data, 0x1C)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", data, 0x2A)

    interpreter = None
    for i in range(phnum):
        base = phoff + i * phentsize
        p_type = struct.unpack_from(end + "I", data, base)[0]
        if p_type == PT_INTERP:
            off, size = (struct.unpack_from(end + "Q", data, base + 8)[0], struct.unpack_from(end + "Q", data, base + 32)[0]) \
                if bits64 else (struct.unpack_from(end + "I", data, base + 4)[0], struct.unpack_from(end + "I", data, base + 16)[0])
            interpreter = data[off:off + size].split(b"\0", 1)[0].decode()

    def section(i: int) -> tuple[int, int, int, int]:
        """(type, offset, size, link) of section i."""
        base = shoff + i * shentsize
        if bits64:
            sh_type = struct.unpack_from(end + "I", data, base + 4)[0]
            off, size = struct.unpack_from(end + "QQ", data, base + 24)
            link = struct.unpack_from(end + "I", data, base + 40)[0]
        else:
            sh_type = struct.unpack_from(end + "I", data, base + 4)[0]
            off, size, link = struct.unpack_from(end + "III", data, base + 16)
        return sh_type, off, size, link

    needed: list[str] = []
    for i in range(shnum):
        sh_type, off, size, link = section(i)
        if sh_type != SHT_DYNAMIC:
            continue
        _, str_off, str_size, _ = section(link)
        fmt, step = (end + "qQ", 16) if bits64 else (end + "iI", 8)
        for pos in range(off, off + size, step):
            tag, val = struct.unpack_from(fmt, data, pos)
            if tag == 0:
                break
            if tag == DT_NEEDED:
                needed.append(data[str_off + val:str_off + str_size].split(b"\0", 1)[0].decode())
    return ElfDeps(interpreter, tuple(needed))
