/* What farm's bare-metal programs share: the console (a PL011 UART), the generic timer's counter,
 * the exception level, PSCI, and a small printf. No libc: these run before any operating system. */
#ifndef FARM_RUNTIME_H
#define FARM_RUNTIME_H

#include <stdarg.h>
#include <stdint.h>

/* QEMU virt's PL011; a board's UART is another (-DUART_BASE=..., a PL011 only) */
#ifndef UART_BASE
#define UART_BASE 0x09000000UL
#endif

static inline uint64_t current_el(void)
{
	uint64_t el;
	__asm__ volatile("mrs %0, CurrentEL" : "=r"(el));
	return (el >> 2) & 3;
}

static inline uint64_t counter_frequency(void)
{
	uint64_t f;
	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(f));
	return f;
}

/* the virtual counter: readable at every EL without a trap (CNTVOFF_EL2 is 0 where U-Boot or QEMU
 * left it, and constant in a KVM guest), ordered after the instructions before it */
static inline uint64_t counter(void)
{
	uint64_t v;
	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}

static inline uint32_t mmio_read32(uintptr_t addr)
{
	return *(volatile uint32_t *)addr;
}

static inline void mmio_write32(uintptr_t addr, uint32_t value)
{
	*(volatile uint32_t *)addr = value;
}

void putc(char c);
void puts(const char *s);
void printf(const char *fmt, ...);
/* PSCI SYSTEM_OFF, by smc at EL2 (QEMU's conduit with virtualization=on) and hvc at EL1 */
void power_off(void) __attribute__((noreturn));
/* a PSCI call (function id and three arguments) by the conduit of this exception level */
uint64_t psci_call(uint64_t fn, uint64_t a1, uint64_t a2, uint64_t a3);

#define PSCI_VERSION 0x84000000UL
#define PSCI_SYSTEM_OFF 0x84000008UL

#endif
