/* farm-exitcost: what a KVM guest exit costs on arm64, in the generic timer's counter ticks.
 *
 * Run as the guest of a VMM (QEMU with -accel kvm on the board, or in the EL2 twin):
 *   qemu-system-aarch64 -M virt,gic-version=3 -accel kvm -cpu host -m 64M -nographic -nodefaults \
 *       -serial stdio -kernel farm-exitcost.elf -append "iterations=1000"
 * Each test leaves the guest the same way `iterations` times in a row, timed by the virtual counter
 * (cntvct_el0, which no hypervisor traps) around the whole loop:
 *   hvc           a hypercall (PSCI_VERSION), answered by KVM itself: the round trip to EL2 and back
 *   timer-sysreg  a read of the EL1 physical timer's control (cntp_ctl_el0), which KVM traps and emulates
 *   gicd-read     a read of the GIC distributor (GICD_TYPER), emulated by KVM's in-kernel vGIC
 *   mmio-qemu     a read of a virtio-mmio transport's magic, which KVM hands to QEMU (a user-space exit)
 * It prints, and farm.measure.exitcost reads:
 *   farm-exitcost 1: counter 62500000 Hz, 1000 iterations per test, at EL1
 *   exit hvc: iterations 1000 ticks 123456
 *   exit mmio-qemu: skipped (no virtio-mmio transport at 0xa000000)
 *   farm-exitcost: done
 * Parameters from the device tree's /chosen/bootargs (QEMU's -append; QEMU puts the DTB of a bare ELF
 * at the start of RAM): iterations=N (default 1000).
 */
#include "fdt.h"
#include "runtime.h"

#define VERSION 1
#define RAM_BASE 0x40000000UL      /* QEMU virt: the DTB of a bare ELF is here */
#define GICD_BASE 0x08000000UL     /* QEMU virt's GIC distributor */
#define GICD_TYPER 0x004
#define VIRTIO_MMIO_BASE 0x0a000000UL
#define VIRTIO_MMIO_MAGIC 0x74726976u /* "virt" */

static uint64_t parse_iterations(const char *args)
{
	static const char key[] = "iterations=";
	uint64_t n = 0;

	for (const char *p = args; p && *p; p++) {
		if (p != args && p[-1] != ' ')
			continue;
		int i = 0;
		while (key[i] && p[i] == key[i])
			i++;
		if (key[i])
			continue;
		for (p += i; *p >= '0' && *p <= '9'; p++)
			n = n * 10 + (uint64_t)(*p - '0');
		return n;
	}
	return 0;
}

static void report(const char *test, uint64_t iterations, uint64_t t0, uint64_t t1)
{
	printf("exit %s: iterations %lu ticks %lu\n", test, iterations, t1 - t0);
}

int main(void)
{
	uint64_t iterations = parse_iterations(fdt_string(RAM_BASE, "/chosen", "bootargs"));
	uint64_t t0, t1;

	if (iterations == 0)
		iterations = 1000;
	printf("farm-exitcost %d: counter %lu Hz, %lu iterations per test, at EL%lu\n", VERSION,
	       counter_frequency(), iterations, current_el());

	t0 = counter();
	for (uint64_t i = 0; i < iterations; i++)
		psci_call(PSCI_VERSION, 0, 0, 0);
	t1 = counter();
	report("hvc", iterations, t0, t1);

	t0 = counter();
	for (uint64_t i = 0; i < iterations; i++) {
		uint64_t v;
		__asm__ volatile("mrs %0, cntp_ctl_el0" : "=r"(v) : : "memory");
	}
	t1 = counter();
	report("timer-sysreg", iterations, t0, t1);

	t0 = counter();
	for (uint64_t i = 0; i < iterations; i++)
		(void)mmio_read32(GICD_BASE + GICD_TYPER);
	t1 = counter();
	report("gicd-read", iterations, t0, t1);

	if (mmio_read32(VIRTIO_MMIO_BASE) != VIRTIO_MMIO_MAGIC) {
		printf("exit mmio-qemu: skipped (no virtio-mmio transport at 0x%lx)\n", VIRTIO_MMIO_BASE);
	} else {
		t0 = counter();
		for (uint64_t i = 0; i < iterations; i++)
			(void)mmio_read32(VIRTIO_MMIO_BASE);
		t1 = counter();
		report("mmio-qemu", iterations, t0, t1);
	}
	printf("farm-exitcost: done\n");
	return 0;
}
