/*
 * chaos: port I/O and MMIO. Ports known to have a device (and any other),
 * the IOAPIC and xAPIC pages, and the rest of the hole between RAM and
 * 4 GiB, with every access size. Left alone: the ports that end or reset
 * the guest, and KVM's own pages.
 */
#include "chaos.h"

#define MMIO_HOLE_END   0x100000000ull
/* KVM's own pages for real mode on VMX (vmm/x86/vm_init.c): not the VMM's to defend */
#define KVM_PAGES_PA    0xfffbc000ull
#define KVM_PAGES_END   0xfffc0000ull

static bool port_ends_guest(uint16_t port)
{
	return port == GUEST_EXIT_PORT || port == 0x64 || port == 0xcf9;
}

static const uint16_t ports[] = {
	0x20, 0x21, 0xa0, 0xa1, 0x40, 0x41, 0x42, 0x43, 0x60, 0x61, 0x70, 0x71, 0x80,
	0x92, 0x3f8, 0x2f8, 0x3e8, 0x2e8, 0xcf8, 0xcfc, 0x4d0, 0x510, 0xe0, 0x2000,
	0x3c0, 0x1ce, 0xb000, 0x5658, 0xcd8,
};

void chaos_op_pio(struct chaos_cpu *c)
{
	uint16_t port = rnd_below(c, 2) ? (uint16_t)rnd(c)
		: (uint16_t)(ports[rnd_below(c, sizeof(ports) / sizeof(ports[0]))] + rnd_below(c, 8));
	uint32_t v = (uint32_t)rnd_value(c);
	unsigned kind = rnd_below(c, 8);
	uint64_t n = 1 + rnd_below(c, 16);
	void *buf = chaos_scratch[smp_id()];

	if (kind >= 4 && port_ends_guest(port))
		return;
	switch (kind) {
	case 0: inb(port); break;
	case 1: inw(port); break;
	case 2: inl(port); break;
	case 3:
		asm volatile("cld; rep insb" : "+D"(buf), "+c"(n) : "d"(port) : "memory");
		break;
	case 4: outb(port, (uint8_t)v); break;
	case 5: outw(port, (uint16_t)v); break;
	case 6: outl(port, v); break;
	default:
		asm volatile("cld; rep outsb" : "+S"(buf), "+c"(n) : "d"(port) : "memory");
		break;
	}
	c->ops[OP_PIO]++;
}

static void mmio_access(uint64_t pa, unsigned size, uint64_t v, bool write)
{
	switch (size | (write ? 0x10 : 0)) {
	case 0x01: (void)*(volatile uint8_t *)pa; break;
	case 0x02: (void)*(volatile uint16_t *)pa; break;
	case 0x04: (void)*(volatile uint32_t *)pa; break;
	case 0x08: (void)*(volatile uint64_t *)pa; break;
	case 0x11: *(volatile uint8_t *)pa = (uint8_t)v; break;
	case 0x12: *(volatile uint16_t *)pa = (uint16_t)v; break;
	case 0x14: *(volatile uint32_t *)pa = (uint32_t)v; break;
	default: *(volatile uint64_t *)pa = v; break;
	}
}

void chaos_ioapic_mask_all(void)
{
	for (unsigned pin = 0; pin < 24; pin++) {
		mmio_write32(IOAPIC_PA, 0x10 + 2 * pin);
		mmio_write32(IOAPIC_PA + 0x10, 1u << 16);
	}
}

/* The IOAPIC under a lock: its select/window pair is shared, and another
 * vCPU's select between ours would let an unsanitised value into a pin. */
static void op_ioapic(struct chaos_cpu *c)
{
	unsigned reg = rnd_below(c, 0x40);
	uint32_t v = (uint32_t)rnd_value(c);

	if (smp_id() == chaos_victim)
		return;         /* an INIT while holding the lock would keep it */
	while (__atomic_exchange_n(&chaos_ioapic_lock, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
	if (rnd_below(c, 4) == 0) {
		/* anything else in the page: EOI register, unaligned, odd sizes */
		unsigned off = 0x20 + rnd_below(c, 0xfe0 - 8);

		mmio_access(IOAPIC_PA + off, 1u << rnd_below(c, 4), v, rnd_below(c, 2));
	} else {
		mmio_write32(IOAPIC_PA, reg);
		if (rnd_below(c, 3) == 0)
			(void)mmio_read32(IOAPIC_PA + 0x10);
		else
			mmio_write32(IOAPIC_PA + 0x10,
				     reg >= 0x10 && !(reg & 1) ? chaos_safe_entry(v) : v);
	}
	__atomic_store_n(&chaos_ioapic_lock, 0, __ATOMIC_RELEASE);
}

/* The xAPIC page: 4-byte aligned accesses go through chaos_apic_write's
 * rules; odd ones only where no register could take them as a value. */
static void op_lapic_page(struct chaos_cpu *c)
{
	unsigned off = rnd_below(c, 4096 - 8), size = 1u << rnd_below(c, 4);
	bool write = rnd_below(c, 2);
	uint64_t v = rnd_value(c);
	bool risky = (off < 0x400 && ((off & 0x3f0) == APIC_ID || (off & 0x3f0) == APIC_SVR ||
				      (off >= APIC_ICR && off < 0x380)));

	if (write && size == 4 && !(off & 0xf) && off < 0x400)
		chaos_apic_write(c, off, (uint32_t)v);
	else if (!write || !risky)
		mmio_access(lapic_base_pa() + off, size, v, write);
}

void chaos_op_mmio(struct chaos_cpu *c)
{
	uint64_t pa;

	switch (rnd_below(c, 4)) {
	case 0:
		op_ioapic(c);
		break;
	case 1:
		op_lapic_page(c);
		break;
	default:
		pa = chaos_ram_top + rnd(c) % (MMIO_HOLE_END - 8 - chaos_ram_top);
		if ((pa & ~0xfffull) == IOAPIC_PA || (pa & ~0xfffull) == lapic_base_pa() ||
		    (pa >= KVM_PAGES_PA && pa < KVM_PAGES_END))
			return;
		mmio_access(pa, 1u << rnd_below(c, 4), rnd_value(c), rnd_below(c, 2));
		break;
	}
	c->ops[OP_MMIO]++;
}
