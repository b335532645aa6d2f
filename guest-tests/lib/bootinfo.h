/*
 * What the VMM handed the guest at boot: the PVH start info (command line,
 * memory map), copied out of low memory at startup, and the command line
 * split into argv for main(). Options are plain words or key=value.
 */
#ifndef GUEST_BOOTINFO_H
#define GUEST_BOOTINFO_H

#include <stdbool.h>
#include <stdint.h>

#define BOOT_MEMMAP_MAX 32
#define BOOT_MEMMAP_RAM 1   /* E820 type */

struct boot_memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
};

struct boot_info {
	bool valid;              /* start info present with the right magic */
	uint32_t start_info_pa;
	uint32_t version;
	const char *cmdline;     /* "" when none */
	unsigned nr_memmap;
	struct boot_memmap_entry memmap[BOOT_MEMMAP_MAX];
};

/* Boot CPU, before anything writes low memory. */
void bootinfo_init(void);
const struct boot_info *bootinfo(void);

/* argv[0] is "guest"; argv[argc] is NULL. */
int bootinfo_args(char ***argv);
/* The command line contains the word `word` exactly. */
bool cmdline_has(const char *word);
/* key=<unsigned> (decimal, or hex after 0x) on the command line: true
 * and *val set if present. */
bool cmdline_uint(const char *key, unsigned *val);

#endif
