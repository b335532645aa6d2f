/*
 * What the user asked for, as plain data: filled by the CLI parser, checked
 * in one place (config_validate), read by everything that builds the VM.
 * Runtime state never lives here.
 */
#ifndef LAGVISOR_VMM_CONFIG_H
#define LAGVISOR_VMM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/sched/sched_opts.h"

enum sched_mode { SCHED_MODE_HOST, SCHED_MODE_EEVDF };
enum irqchip_mode { IRQCHIP_KERNEL, IRQCHIP_USER };
enum serial_mode { SERIAL_STDIO, SERIAL_FILE, SERIAL_NONE, SERIAL_FD };

struct vm_config {
	const char *kernel_path;
	const char *initrd_path;     /* NULL: none */
	const char *cmdline;         /* never NULL after parsing ("" default) */
	unsigned nr_cpus;            /* 1..KVM_CAP_MAX_VCPUS */
	uint64_t mem_bytes;          /* guest RAM */
	/* Messages quote the size as the user wrote it ("4097K", where
	 * mem_bytes is 4195328), after the option it came with: "--memory",
	 * or the QEMU front's "-m", whose bare numbers are MiB. mem_arg NULL:
	 * mem_bytes is rendered. */
	const char *mem_opt, *mem_arg;
	enum sched_mode sched;
	enum irqchip_mode irqchip;
	bool irqchip_set;            /* --irqchip given: --sched keeps it */
	bool sched_set;              /* --sched given: --irqchip kernel keeps it */
	enum serial_mode serial;
	const char *serial_path;     /* SERIAL_FILE only */
	int serial_out_fd;           /* SERIAL_FD only: output fd (not closed; */
	int serial_in_fd;            /* full means dropped), input fd or -1 */
	bool strict_io;              /* unhandled I/O ends the VM */
	bool no_x2apic;              /* CPUID without x2APIC: xAPIC only */
	bool no_native;              /* --native off (or $LAGVISOR_NATIVE=off):
	                              * a PVM backend emulates the guest */
	uint64_t halt_poll_ns;       /* --halt-poll: max poll window (user irqchip) */
	bool qemu_testdev;           /* QEMU fw_cfg + pc-testdev ports (test images) */
	bool no_seccomp;             /* --no-seccomp: no syscall filters (vmm/seccomp.h) */
	unsigned verbose;            /* -v count: 1 info, 2+ debug */
	struct sched_options sched_opts;  /* --host-cpus, --weight, ... (zero: defaults) */
};

/*
 * Bounds that do not depend on the host. VM_MAX_CPUS: xAPIC and MP table
 * APIC IDs are 8 bits, 0xff is the broadcast ID and the IOAPIC takes the
 * ID after the last CPU's (vmm/x86/mptable.c), so 254 CPUs at most.
 * VM_MIN_MEM_BYTES: the boot structures and the kernel live above 1 MiB.
 * Guest RAM is handed to KVM in whole pages.
 */
/* Environment default for --native (auto|off), read by config_init. */
#define CONFIG_NATIVE_ENV "LAGVISOR_NATIVE"

#define VM_MAX_CPUS        254u
#define VM_MIN_MEM_BYTES   (2ull << 20)
#define VM_MEM_ALIGN_BYTES 4096ull
#define VM_DEFAULT_CPUS    1u
#define VM_DEFAULT_MEM_BYTES (256ull << 20)

/* What the host allows; 0 in a field means "not known (yet)". */
struct host_limits {
	uint64_t mem_bytes;          /* MemTotal from /proc/meminfo */
	unsigned max_cpus;           /* KVM_CAP_MAX_VCPUS */
};

/* Defaults for every field (kernel_path NULL: the user must give one). */
void config_init(struct vm_config *cfg);

/*
 * The one place a config is checked: required options, vCPU count and
 * memory size against the fixed bounds above and against `limits` (fields
 * that are 0 are skipped), modes that are not implemented yet. Pure: no
 * I/O. Returns 0, or -EINVAL with one line naming the problem in err.
 */
int config_validate(const struct vm_config *cfg, const struct host_limits *limits,
		    char *err, size_t errlen);

/*
 * Check that the kernel and initrd exist, are regular files and can be
 * read. Returns 0 or -errno with one line naming the file in err.
 */
int config_check_files(const struct vm_config *cfg, char *err, size_t errlen);

/* MemTotal from the text of /proc/meminfo, in bytes. 0 or -EINVAL. */
int config_parse_meminfo(const char *text, uint64_t *mem_bytes);

/* Read /proc/meminfo into limits->mem_bytes (left 0 when unreadable). */
void config_read_host_mem(struct host_limits *limits);

/* "256M", "1.5G", "4096" style rendering of a byte count, for messages. */
void config_format_size(uint64_t bytes, char *buf, size_t len);

#endif
