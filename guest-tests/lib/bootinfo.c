/* PVH start info and command line (see bootinfo.h). */
#include "bootinfo.h"

#include "string.h"

#define HVM_START_MAGIC 0x336ec578
#define CMDLINE_MAX     1024
#define MAX_ARGS        32

/* struct hvm_start_info, version 0 fields then the version 1 memory map. */
struct hvm_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	uint64_t memmap_paddr;
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct hvm_memmap_table_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
	uint32_t reserved;
};

extern uint32_t pvh_start_info_pa;   /* lib/entry.S: EBX at entry */

static struct boot_info info;
static char cmdline[CMDLINE_MAX];
static char argbuf[CMDLINE_MAX];
static char *args[MAX_ARGS + 1];
static int nr_args;

/* Only addresses inside the identity map (first 4 GiB) can be read. */
static bool readable(uint64_t pa, uint64_t len)
{
	return pa && pa < (1ull << 32) && len < (1ull << 32) - pa;
}

static void split_args(void)
{
	char *p = argbuf;

	memcpy(argbuf, cmdline, sizeof(argbuf));
	args[nr_args++] = "guest";
	while (*p && nr_args < MAX_ARGS) {
		while (*p == ' ' || *p == '\t')
			*p++ = '\0';
		if (!*p)
			break;
		args[nr_args++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	args[nr_args] = 0;
}

void bootinfo_init(void)
{
	const struct hvm_start_info *si;

	info.start_info_pa = pvh_start_info_pa;
	info.cmdline = cmdline;
	si = (const struct hvm_start_info *)(uint64_t)pvh_start_info_pa;
	if (readable(pvh_start_info_pa, sizeof(*si)) && si->magic == HVM_START_MAGIC) {
		info.valid = true;
		info.version = si->version;
		if (readable(si->cmdline_paddr, 1)) {
			const char *c = (const char *)si->cmdline_paddr;
			unsigned i;

			for (i = 0; i < CMDLINE_MAX - 1 && c[i]; i++)
				cmdline[i] = c[i];
			cmdline[i] = '\0';
		}
		if (si->version >= 1 && readable(si->memmap_paddr, 1)) {
			const struct hvm_memmap_table_entry *e =
				(const struct hvm_memmap_table_entry *)si->memmap_paddr;

			for (unsigned i = 0; i < si->memmap_entries && i < BOOT_MEMMAP_MAX; i++) {
				info.memmap[i].addr = e[i].addr;
				info.memmap[i].size = e[i].size;
				info.memmap[i].type = e[i].type;
				info.nr_memmap++;
			}
		}
	}
	split_args();
}

const struct boot_info *bootinfo(void)
{
	return &info;
}

int bootinfo_args(char ***argv)
{
	*argv = args;
	return nr_args;
}

bool cmdline_has(const char *word)
{
	for (int i = 1; i < nr_args; i++)
		if (!strcmp(args[i], word))
			return true;
	return false;
}

bool cmdline_uint(const char *key, unsigned *val)
{
	size_t klen = strlen(key);

	for (int i = 1; i < nr_args; i++) {
		const char *a = args[i];
		unsigned v = 0, base = 10, d;

		if (strncmp(a, key, klen) || a[klen] != '=' || !a[klen + 1])
			continue;
		a += klen + 1;
		if (a[0] == '0' && a[1] == 'x' && a[2]) {
			base = 16;
			a += 2;
		}
		for (; *a; a++) {
			if (*a >= '0' && *a <= '9')
				d = (unsigned)(*a - '0');
			else if (base == 16 && *a >= 'a' && *a <= 'f')
				d = (unsigned)(*a - 'a' + 10);
			else
				return false;
			v = v * base + d;
		}
		*val = v;
		return true;
	}
	return false;
}
