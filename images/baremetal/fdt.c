/* fdt.h: a walk of the structure block of a flattened device tree (devicetree specification, 5.4). */
#include "fdt.h"

#define FDT_MAGIC 0xd00dfeedu
#define FDT_BEGIN_NODE 1
#define FDT_END_NODE 2
#define FDT_PROP 3
#define FDT_NOP 4
#define FDT_END 9

static uint32_t be32(uintptr_t addr)
{
	const volatile uint8_t *p = (const volatile uint8_t *)addr;

	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static int same(const char *a, const char *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

static int length(const char *s)
{
	int n = 0;

	while (s[n])
		n++;
	return n;
}

const char *fdt_string(uintptr_t fdt, const char *path, const char *prop)
{
	if ((fdt & 3) || be32(fdt) != FDT_MAGIC)
		return 0;
	uintptr_t p = fdt + be32(fdt + 8);          /* off_dt_struct */
	const char *strings = (const char *)(fdt + be32(fdt + 12)); /* off_dt_strings */
	const char *want = path + 1;                /* the path's one component below the root */
	int want_len = length(want), depth = 0, inside = 0;

	for (;;) {
		uint32_t token = be32(p);

		p += 4;
		if (token == FDT_BEGIN_NODE) {
			const char *name = (const char *)p;
			int n = length(name);

			depth++;
			if (depth == 2 && n >= want_len && same(name, want, want_len) &&
			    (name[want_len] == '\0' || name[want_len] == '@'))
				inside = 1;
			p = (p + n + 1 + 3) & ~(uintptr_t)3;
		} else if (token == FDT_END_NODE) {
			if (depth == 2)
				inside = 0;
			depth--;
		} else if (token == FDT_PROP) {
			uint32_t len = be32(p), nameoff = be32(p + 4);
			const char *value = (const char *)(p + 8);

			if (((inside && depth == 2) || (want_len == 0 && depth == 1)) &&
			    length(strings + nameoff) == length(prop) &&
			    same(strings + nameoff, prop, length(prop)) && len > 0 && value[len - 1] == '\0')
				return value;
			p = (p + 8 + len + 3) & ~(uintptr_t)3;
		} else if (token == FDT_NOP) {
			continue;
		} else {
			return 0; /* FDT_END, or not a structure block */
		}
	}
}
