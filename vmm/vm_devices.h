/*
 * The PC devices every VM has, wired to the VM: COM1 (8250 UART at 0x3f8,
 * IRQ 4, to the console), CMOS RTC (host wall clock), the isa-debug-exit
 * port 0xf4 (ends the VM with the guest's status), the reset paths (0xcf9
 * and the i8042), and an empty PCI configuration space; with
 * --qemu-testdev also QEMU's fw_cfg and pc-testdev ports.
 */
#ifndef LAGVISOR_VMM_VM_DEVICES_H
#define LAGVISOR_VMM_VM_DEVICES_H

#include <stdbool.h>
#include <stddef.h>

#include "devices/debug_exit.h"
#include "devices/device.h"
#include "devices/pci_none.h"
#include "devices/qemu_testdev.h"
#include "devices/reset.h"
#include "devices/rtc.h"
#include "devices/uart.h"

#define VM_UART_PORT 0x3f8
#define VM_UART_GSI  4

struct vm;

struct vm_devices {
	struct irq_line uart_irq;
	struct uart uart;
	struct rtc rtc;
	struct debug_exit debug_exit;
	struct reset_dev reset;
	struct pci_none pci;
	bool uart_ok, rtc_ok, reset_ok;     /* initialised: destroy them */
	struct qemu_testdev testdev;        /* --qemu-testdev only */
	bool testdev_ok;
};

/* Initialise and attach every device to vm->pio. 0 or -errno (msg). */
int vm_devices_init(struct vm *vm, char *err, size_t errlen);

void vm_devices_destroy(struct vm *vm);

#endif
