/*
 * What the user asked for, as plain data: filled by the CLI parser, checked
 * in one place (config_validate), read by everything that builds the VM.
 * Runtime state never lives here.
 */
#ifndef LAGVISOR_VMM_CONFIG_H
#define LAGVISOR_VMM_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

enum sched_mode { SCHED_MODE_HOST, SCHED_MODE_EEVDF };
enum irqchip_mode { IRQCHIP_KERNEL, IRQCHIP_USER };
enum serial_mode { SERIAL_STDIO, SERIAL_FILE, SERIAL_NONE };

struct vm_config {
	const char *kernel_path;
	const char *initrd_path;     /* NULL: none */
	const char *cmdline;         /* never NULL after parsing ("" default) */
	unsigned nr_cpus;            /* 1..KVM_CAP_MAX_VCPUS */
	uint64_t mem_bytes;          /* guest RAM */
	enum sched_mode sched;
	enum irqchip_mode irqchip;
	enum serial_mode serial;
	const char *serial_path;     /* SERIAL_FILE only */
	bool strict_io;              /* unhandled I/O ends the VM */
};

#endif
