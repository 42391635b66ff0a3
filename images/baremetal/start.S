/* The entry of farm's bare-metal programs (arm64, any exception level U-Boot or QEMU hands over at).
 *
 * The loader's first two registers are kept for main: bootm hands over as to Linux (x0: the device
 * tree), bootelf and go as to a C function (x0: argc, x1: argv), QEMU's -kernel of an ELF with
 * nothing in x0. The stack and .bss are the program's own (link.ld), .bss is zeroed here; when main
 * returns, the machine is powered off through PSCI (runtime.c).
 */
	.section .text.start, "ax"
	.global _start
_start:
	mov	x19, x0
	mov	x20, x1
	msr	daifset, #0xf		/* no interrupts: nothing here takes one */
	adrp	x2, __stack_top
	add	x2, x2, :lo12:__stack_top
	mov	sp, x2
	adrp	x2, __bss_start
	add	x2, x2, :lo12:__bss_start
	adrp	x3, __bss_end
	add	x3, x3, :lo12:__bss_end
1:	cmp	x2, x3
	b.hs	2f
	str	xzr, [x2], #8
	b	1b
2:	mov	x0, x19
	mov	x1, x20
	bl	main
	bl	power_off
3:	wfi
	b	3b
