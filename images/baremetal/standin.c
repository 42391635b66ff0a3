/* farm-standin: a stand-in for a system image a lab brings (an seL4/Microkit loader.img, say), so that
 * farm's system-image flow is tested end to end on the QEMU twin: booted by U-Boot through bootm (a
 * uImage), bootelf (this ELF) or go, it prints a banner and a ready line, runs three "components" in
 * turn over one buffer and prints each one's share of the counter ticks, as a system's per-component
 * statistics are printed, and powers the machine off (PSCI SYSTEM_OFF).
 *
 * What it prints (the pipeline's `ready` and `stats` patterns read these lines):
 *   farm-standin 1: booted at EL2 by a bootloader that handed over a device tree at 0x7ee7e000
 *   farm-standin: counter 62500000 Hz, 4 rounds of 65536 bytes
 *   farm-standin: ready
 *   farm-standin: component fill: ticks 1234 of 5678 (21.7%), bytes 262144
 *   farm-standin: component checksum: ...
 *   farm-standin: component copy: ...
 *   farm-standin: total ticks 5678, checksum 0x1b2c3d4e
 *   farm-standin: powering off
 */
#include "runtime.h"

#define BYTES 65536
#define ROUNDS 4
#define VERSION 1

static uint8_t buffer[BYTES] __attribute__((aligned(16)));
static uint8_t copy[BYTES] __attribute__((aligned(16)));

struct component {
	const char *name;
	uint64_t ticks;
};

static void fill(uint32_t round)
{
	uint32_t x = 0x9e3779b9u * (round + 1);

	for (int i = 0; i < BYTES; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buffer[i] = (uint8_t)x;
	}
}

static uint32_t checksum(void)
{
	uint32_t a = 1, b = 0;

	for (int i = 0; i < BYTES; i++) {
		a = (a + buffer[i]) % 65521u;
		b = (b + a) % 65521u;
	}
	return (b << 16) | a;
}

static void copy_buffer(void)
{
	for (int i = 0; i < BYTES; i += 8)
		*(volatile uint64_t *)(copy + i) = *(const uint64_t *)(buffer + i);
}

/* a device tree's magic (0xd00dfeed, big-endian) at x0: the bootloader booted this as Linux (bootm);
 * bootelf and go pass argc there. Only an aligned address in QEMU virt's RAM is read. */
static int is_device_tree(uint64_t x0)
{
	if (x0 < 0x40000000UL || x0 >= 0x100000000UL || (x0 & 7))
		return 0;
	return mmio_read32(x0) == 0xedfe0dd0u;
}

int main(uint64_t x0, uint64_t x1)
{
	struct component parts[3] = {{"fill", 0}, {"checksum", 0}, {"copy", 0}};
	uint32_t sum = 0;
	uint64_t total, start;

	(void)x1;
	if (is_device_tree(x0))
		printf("farm-standin %d: booted at EL%lu by a bootloader that handed over a device tree at 0x%lx\n",
		       VERSION, current_el(), x0);
	else
		printf("farm-standin %d: booted at EL%lu, called with argc %lu (bootelf or go)\n", VERSION,
		       current_el(), x0);
	printf("farm-standin: counter %lu Hz, %d rounds of %d bytes\n", counter_frequency(), ROUNDS, BYTES);
	printf("farm-standin: ready\n");
	start = counter();
	for (uint32_t round = 0; round < ROUNDS; round++) {
		uint64_t t0 = counter();
		fill(round);
		uint64_t t1 = counter();
		sum ^= checksum();
		uint64_t t2 = counter();
		copy_buffer();
		uint64_t t3 = counter();
		parts[0].ticks += t1 - t0;
		parts[1].ticks += t2 - t1;
		parts[2].ticks += t3 - t2;
	}
	total = counter() - start;
	if (total == 0)
		total = 1;
	for (int i = 0; i < 3; i++) {
		uint64_t permille = (parts[i].ticks * 1000 + total / 2) / total;
		printf("farm-standin: component %s: ticks %lu of %lu (%lu.%lu%%), bytes %d\n", parts[i].name,
		       parts[i].ticks, total, permille / 10, permille % 10, ROUNDS * BYTES);
	}
	printf("farm-standin: total ticks %lu, checksum 0x%08x\n", total, sum);
	printf("farm-standin: powering off\n");
	return 0;
}
