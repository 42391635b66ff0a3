/* Reading a property of a flattened device tree (the DTB QEMU or U-Boot hands over): just enough to
 * find /chosen/bootargs, where a program's parameters come from. */
#ifndef FARM_FDT_H
#define FARM_FDT_H

#include <stdint.h>

/* the value of property `prop` of the node at `path` ("/chosen"), a NUL-terminated string, or 0 when
 * the tree at `fdt` has no such node or property (or `fdt` is not a device tree) */
const char *fdt_string(uintptr_t fdt, const char *path, const char *prop);

#endif
