/* The console, printf and PSCI of farm's bare-metal programs (runtime.h). */
#include "runtime.h"

#define UARTDR 0x00
#define UARTFR 0x18
#define UARTFR_TXFF (1u << 5)

void putc(char c)
{
	if (c == '\n')
		putc('\r');
	while (mmio_read32(UART_BASE + UARTFR) & UARTFR_TXFF)
		;
	mmio_write32(UART_BASE + UARTDR, (uint32_t)(unsigned char)c);
}

void puts(const char *s)
{
	while (*s)
		putc(*s++);
}

static void put_unsigned(uint64_t v, unsigned base, int width, char pad)
{
	char digits[24];
	int n = 0;

	do {
		unsigned d = (unsigned)(v % base);
		digits[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
		v /= base;
	} while (v);
	while (width-- > n)
		putc(pad);
	while (n)
		putc(digits[--n]);
}

/* %s %c %d %u %x %lu %lx %lld %llu, a width and 0-padding: what these programs print */
void printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	for (; *fmt; fmt++) {
		int width = 0, longs = 0;
		char pad = ' ';

		if (*fmt != '%') {
			putc(*fmt);
			continue;
		}
		fmt++;
		if (*fmt == '0')
			pad = '0';
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l') {
			longs++;
			fmt++;
		}
		switch (*fmt) {
		case 's':
			puts(va_arg(ap, const char *));
			break;
		case 'c':
			putc((char)va_arg(ap, int));
			break;
		case 'd': {
			int64_t v = longs ? va_arg(ap, int64_t) : va_arg(ap, int);
			if (v < 0) {
				putc('-');
				v = -v;
			}
			put_unsigned((uint64_t)v, 10, width, pad);
			break;
		}
		case 'u':
			put_unsigned(longs ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 10, width, pad);
			break;
		case 'x':
			put_unsigned(longs ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 16, width, pad);
			break;
		case '%':
			putc('%');
			break;
		default:
			putc('%');
			putc(*fmt);
		}
	}
	va_end(ap);
}

uint64_t psci_call(uint64_t fn, uint64_t a1, uint64_t a2, uint64_t a3)
{
	register uint64_t x0 __asm__("x0") = fn;
	register uint64_t x1 __asm__("x1") = a1;
	register uint64_t x2 __asm__("x2") = a2;
	register uint64_t x3 __asm__("x3") = a3;

	if (current_el() >= 2)
		__asm__ volatile("smc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3) : : "memory");
	else
		__asm__ volatile("hvc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3) : : "memory");
	return x0;
}

void power_off(void)
{
	puts("\n");
	psci_call(PSCI_SYSTEM_OFF, 0, 0, 0);
	for (;;)
		__asm__ volatile("wfi");
}

/* what the compiler may call for a structure's copy or initialisation */
void *memset(void *s, int c, unsigned long n)
{
	uint8_t *p = s;

	while (n--)
		*p++ = (uint8_t)c;
	return s;
}

void *memcpy(void *dst, const void *src, unsigned long n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	while (n--)
		*d++ = *s++;
	return dst;
}
