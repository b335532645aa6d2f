/*
 * The Intel MultiProcessor table (MP spec 1.4): how many CPUs, their APIC
 * IDs, which one is the BSP, where the IOAPIC is. lagvisor builds one for
 * SMP guests, as SeaBIOS does under QEMU.
 */
#ifndef GUEST_MPTABLE_H
#define GUEST_MPTABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"

struct mp_info {
	bool found;
	uint32_t floating_pa;     /* "_MP_" structure */
	uint32_t config_pa;       /* "PCMP" table */
	uint32_t lapic_pa;
	unsigned nr_cpus;         /* enabled processor entries */
	uint32_t apic_ids[MAX_CPUS];
	unsigned bsp;             /* index into apic_ids */
	unsigned nr_ioapics;
	uint32_t ioapic_pa;       /* first IOAPIC */
	const char *error;        /* why not found / invalid, for messages */
};

/* Search the places the MP spec names; fill `mp`. Boot CPU, early. */
void mptable_parse(struct mp_info *mp);

#endif
