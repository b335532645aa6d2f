/*
 * Intel MultiProcessor Specification 1.4 tables: how a guest without ACPI
 * finds its CPUs, its IOAPIC and the ISA interrupt wiring.
 *
 * The floating pointer (16 bytes) sits at the start of the EBDA, one of
 * the places the spec (and Linux's smp_scan_config) searches; it points at
 * the configuration table in the BIOS area at 0xf0000, which has room for
 * any CPU count the 8-bit APIC IDs allow (196 + 20 * nr_cpus bytes).
 *
 * Wiring, as QEMU (SeaBIOS) and kvmtool describe their PCs: ISA IRQ n goes
 * to IOAPIC pin n except IRQ 0 (the PIT), which goes to pin 2; IRQ 2 is the
 * 8259 cascade and has no entry, since pin 2 is taken. The 8259's output
 * reaches the BSP's LINT0 as ExtINT (virtual wire mode), NMI reaches LINT1
 * of every CPU. The in-kernel irqchip routing (vm_init.c) and the
 * userspace IOAPIC must route the PIT the same way.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vmm/x86/arch.h"
#include "vmm/x86/boot.h"
#include "vmm/x86/bytes.h"

#define MP_HEADER_BYTES     44
#define MP_CPU_BYTES        20
#define MP_ENTRY_BYTES      8      /* bus, IOAPIC, interrupt entries */
#define MP_NR_IOINT         15     /* ISA IRQs 0..15 without the cascade */
#define MP_NR_LINT          2

enum { MP_CPU = 0, MP_BUS = 1, MP_IOAPIC = 2, MP_IOINT = 3, MP_LINT = 4 };
enum { MP_INT_INT = 0, MP_INT_NMI = 1, MP_INT_EXTINT = 3 };

#define MP_SPEC_REV         4      /* 1.4 */
#define MP_APIC_VERSION     0x14   /* integrated local APIC, as KVM reports */
#define MP_IOAPIC_VERSION   0x11   /* KVM's and QEMU's IOAPIC */
#define MP_CPU_EN           0x01
#define MP_CPU_BP           0x02
#define MP_CPU_SIGNATURE    0x600  /* family 6, model 0, stepping 0 */
#define MP_CPU_FEATURES     0x201  /* CPUID.1:EDX FPU | APIC */
#define MP_ISA_BUS          0
#define MP_ALL_APICS        0xff

size_t x86_mptable_size(unsigned nr_cpus)
{
	return MP_HEADER_BYTES + (size_t)nr_cpus * MP_CPU_BYTES +
	       (2 + MP_NR_IOINT + MP_NR_LINT) * MP_ENTRY_BYTES;
}

/* Two's complement of the byte sum, so that the whole range sums to 0. */
static uint8_t mp_checksum(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += p[i];
	return (uint8_t)-sum;
}

static uint8_t *mp_int_entry(uint8_t *p, uint8_t type, uint8_t irqtype,
			     uint8_t srcirq, uint8_t dst_id, uint8_t dst_pin)
{
	p[0] = type;
	p[1] = irqtype;
	put_le16(p + 2, 0);        /* polarity and trigger conform to the bus */
	p[4] = MP_ISA_BUS;
	p[5] = srcirq;
	p[6] = dst_id;
	p[7] = dst_pin;
	return p + MP_ENTRY_BYTES;
}

int x86_mptable_build(unsigned nr_cpus, uint32_t config_gpa, uint8_t fp[16],
		      uint8_t *cfg, size_t cfg_len)
{
	size_t size = x86_mptable_size(nr_cpus);
	uint8_t ioapic_id = (uint8_t)nr_cpus;
	uint8_t *p;

	/* APIC IDs are 8 bits and 0xff means "all": the IOAPIC takes nr_cpus. */
	if (nr_cpus == 0 || nr_cpus >= MP_ALL_APICS)
		return -EINVAL;
	if (cfg_len < size)
		return -ENOSPC;

	memset(fp, 0, 16);
	memcpy(fp, "_MP_", 4);
	put_le32(fp + 4, config_gpa);
	fp[8] = 1;                 /* length in 16-byte units */
	fp[9] = MP_SPEC_REV;
	/* fp[11] = 0: a configuration table is present; fp[12] = 0: no IMCR,
	 * virtual wire mode. */
	fp[10] = mp_checksum(fp, 16);

	memset(cfg, 0, size);
	memcpy(cfg, "PCMP", 4);
	put_le16(cfg + 4, (uint16_t)size);
	cfg[6] = MP_SPEC_REV;
	memcpy(cfg + 8, "LAGVISOR", 8);
	memcpy(cfg + 16, "LAGVISOR    ", 12);
	put_le16(cfg + 34, (uint16_t)(nr_cpus + 2 + MP_NR_IOINT + MP_NR_LINT));
	put_le32(cfg + 36, (uint32_t)X86_LAPIC_GPA);

	p = cfg + MP_HEADER_BYTES;
	for (unsigned i = 0; i < nr_cpus; i++, p += MP_CPU_BYTES) {
		p[0] = MP_CPU;
		p[1] = (uint8_t)i;
		p[2] = MP_APIC_VERSION;
		p[3] = MP_CPU_EN | (i == 0 ? MP_CPU_BP : 0);
		put_le32(p + 4, MP_CPU_SIGNATURE);
		put_le32(p + 8, MP_CPU_FEATURES);
	}

	p[0] = MP_BUS;
	p[1] = MP_ISA_BUS;
	memcpy(p + 2, "ISA   ", 6);
	p += MP_ENTRY_BYTES;

	p[0] = MP_IOAPIC;
	p[1] = ioapic_id;
	p[2] = MP_IOAPIC_VERSION;
	p[3] = 1;                  /* enabled */
	put_le32(p + 4, (uint32_t)X86_IOAPIC_GPA);
	p += MP_ENTRY_BYTES;

	for (unsigned irq = 0; irq < 16; irq++) {
		if (irq == 2)
			continue;
		p = mp_int_entry(p, MP_IOINT, MP_INT_INT, (uint8_t)irq, ioapic_id,
				 (uint8_t)(irq == 0 ? 2 : irq));
	}
	p = mp_int_entry(p, MP_LINT, MP_INT_EXTINT, 0, 0, 0);
	p = mp_int_entry(p, MP_LINT, MP_INT_NMI, 0, MP_ALL_APICS, 1);

	cfg[7] = mp_checksum(cfg, size);
	return 0;
}

int x86_mptable_write(const struct guest_mem *mem, unsigned nr_cpus,
		      char *why, size_t whylen)
{
	size_t size = x86_mptable_size(nr_cpus);
	uint8_t *fp = guest_mem_ptr(mem, X86_EBDA_GPA, 16);
	uint8_t *cfg = guest_mem_ptr(mem, X86_MPTABLE_GPA, size);
	uint8_t *bda = guest_mem_ptr(mem, X86_BDA_EBDA_SEG_GPA, 2);
	int ret;

	if (!fp || !cfg || !bda || size > X86_MPTABLE_MAX) {
		snprintf(why, whylen, "MP table for %u CPUs does not fit in guest memory",
			 nr_cpus);
		return -ENOSPC;
	}
	ret = x86_mptable_build(nr_cpus, (uint32_t)X86_MPTABLE_GPA, fp, cfg, size);
	if (ret) {
		snprintf(why, whylen, "MP table: %u CPUs leave no APIC ID for the IOAPIC",
			 nr_cpus);
		return ret;
	}
	/* Some guests find the EBDA through the BIOS data area's segment word. */
	put_le16(bda, (uint16_t)(X86_EBDA_GPA >> 4));
	return 0;
}
