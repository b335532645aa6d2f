#include "vmm/vm_devices.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "vmm/vm.h"

static int64_t host_now_s(void *opaque)
{
	(void)opaque;
	return (int64_t)time(NULL);
}

static void guest_debug_exit(void *opaque, int status)
{
	struct vm *vm = opaque;

	/* The process exit status keeps the low 8 bits, as with QEMU. */
	log_info("guest wrote the debug-exit port: exit status %d", status & 0xff);
	vm_stop(vm, status & 0xff);
}

static void guest_reset(void *opaque)
{
	vm_guest_reset(opaque);
}

static size_t console_to_uart(void *opaque, const uint8_t *buf, size_t len)
{
	struct vm *vm = opaque;

	return uart_input(&vm->devices.uart, buf, len);
}

static void console_quit(void *opaque, int exit_code)
{
	vm_stop(opaque, exit_code);
}

/*
 * pc-testdev line n is ISA IRQ n, raised the way the UART's line is: KVM's
 * GSI routing maps GSI 0 to IOAPIC pin 2 itself; the userspace IOAPIC is
 * addressed by pin, so ISA 0 goes to pin 2 there (the MP table's wiring).
 */
static void testdev_irq(void *opaque, unsigned isa_irq, int level)
{
	struct vm *vm = opaque;
	const struct irq_line *uart = &vm->devices.uart_irq;
	unsigned gsi = isa_irq;

	if (vm->cfg->irqchip == IRQCHIP_USER && isa_irq == 0)
		gsi = 2;
	uart->set(uart->opaque, gsi, level);
}

static int attach_failed(const char *what, int r, char *err, size_t errlen)
{
	snprintf(err, errlen, "attaching %s: %s", what, strerror(-r));
	return r;
}

int vm_devices_init(struct vm *vm, char *err, size_t errlen)
{
	struct vm_devices *d = &vm->devices;
	bool has_out = vm->cfg->serial != SERIAL_NONE;
	int r;

	/* ISA IRQ 4 = IOAPIC pin 4 (MP table), in KVM's IOAPIC or ours. */
	if (vm->cfg->irqchip == IRQCHIP_USER)
		d->uart_irq = (struct irq_line){
			.set = ioapic_irq_line_set, .opaque = &vm->irqchip.ioapic,
			.gsi = VM_UART_GSI,
		};
	else
		d->uart_irq = (struct irq_line){
			.set = vm_irq_set_kvm, .opaque = vm, .gsi = VM_UART_GSI,
		};
	r = uart_init(&d->uart, &d->uart_irq, has_out ? console_output : NULL,
		      has_out ? (void *)&vm->console : NULL);
	if (r)
		return attach_failed("the UART", r, err, errlen);
	d->uart_ok = true;
	uart_set_room_cb(&d->uart, console_room, &vm->console);
	r = uart_attach(&d->uart, &vm->pio, VM_UART_PORT);
	if (r)
		return attach_failed("the UART", r, err, errlen);

	r = rtc_init(&d->rtc, host_now_s, NULL);
	if (r)
		return attach_failed("the RTC", r, err, errlen);
	d->rtc_ok = true;
	r = rtc_attach(&d->rtc, &vm->pio);
	if (r)
		return attach_failed("the RTC", r, err, errlen);

	d->debug_exit = (struct debug_exit){ .exit = guest_debug_exit, .opaque = vm };
	r = debug_exit_attach(&d->debug_exit, &vm->pio, DEBUG_EXIT_PORT);
	if (r)
		return attach_failed("the debug-exit port", r, err, errlen);

	d->reset.reset = guest_reset;
	d->reset.opaque = vm;
	r = reset_attach(&d->reset, &vm->pio);
	if (r)
		return attach_failed("the reset ports", r, err, errlen);
	d->reset_ok = true;

	r = pci_none_attach_dev(&d->pci, &vm->pio);
	if (r)
		return attach_failed("the PCI config ports", r, err, errlen);

	if (vm->cfg->qemu_testdev) {
		d->testdev = (struct qemu_testdev){
			.ram_bytes = vm->cfg->mem_bytes, .nr_cpus = (uint16_t)vm->cfg->nr_cpus,
			.irq_set = testdev_irq, .irq_opaque = vm,
		};
		r = qemu_testdev_attach(&d->testdev, &vm->pio);
		if (r)
			return attach_failed("the QEMU test devices", r, err, errlen);
		d->testdev_ok = true;
	}

	r = console_attach(&vm->console, &vm->iothread, console_to_uart,
			   console_quit, vm);
	if (r)
		snprintf(err, errlen, "console input: %s", strerror(-r));
	return r;
}

void vm_devices_destroy(struct vm *vm)
{
	struct vm_devices *d = &vm->devices;

	if (d->testdev_ok)
		qemu_testdev_destroy(&d->testdev);
	d->testdev_ok = false;
	if (d->reset_ok)
		reset_destroy(&d->reset);
	if (d->rtc_ok)
		rtc_destroy(&d->rtc);
	if (d->uart_ok)
		uart_destroy(&d->uart);
	d->reset_ok = d->rtc_ok = d->uart_ok = false;
}
