/*
 * Seed inputs for vmm/fuzz, written at build time:
 *     fuzz_vmm_seeds cli|sched_shm DIR
 * cli: `lagvisor run` command lines like vmm/tests/test_cli.c's and the
 * scripts', arguments separated by NUL bytes. sched_shm: see
 * fuzz_sched_shm.c (patches to a domain file the real opener created).
 */
#include <string.h>

#include "common/fuzz_seeds.h"
#include "vmm/fuzz/sched_shm_ops.h"

static struct fz_out o;

static void emit(const char *name)
{
	fz_emit(name, &o);
}

/* A NULL-terminated argument list as one seed. */
static void argv_seed(const char *name, const char *const *args)
{
	o.len = 0;
	fz_put_argv(&o, args);
	emit(name);
}

#define SEED(name, ...) argv_seed(name, (const char *const[]){ __VA_ARGS__, NULL })

static void seeds_cli(void)
{
	SEED("run-eevdf-all", "run", "--kernel", "/boot/vmlinuz", "--initrd", "/boot/initrd",
	     "--cmdline", "console=ttyS0 quiet", "--cpus", "4", "--memory", "512M",
	     "--sched", "eevdf", "--host-cpus", "0-1,3", "--slice", "100us", "--weight", "2048",
	     "--sched-feature", "NO_PLACE_LAG,RUN_TO_PARITY", "--sched-domain", "bench.1",
	     "--trace", "/tmp/t.trace", "--halt-poll", "50us", "-v", "-v");
	SEED("run-host-kernel", "run", "--kernel", "k", "--sched", "host", "--irqchip", "kernel",
	     "--serial", "file:/tmp/serial.log", "--strict-io", "--no-x2apic", "--memory", "2G");
	SEED("run-user-nice", "run", "--kernel=guest.elf", "--irqchip=user", "--nice", "-5",
	     "--cpus=254", "--memory=4097K", "--serial", "none", "--native", "off",
	     "--qemu-testdev");
	SEED("run-idle-errors", "run", "--kernel", "k", "--idle", "--weight", "3", "--cpus", "255",
	     "--memory", "1T", "--slice", "0", "--", "extra");
	SEED("help", "help", "run");
	SEED("version", "--version");
}

/* ---- sched_shm ---- */

static void patch(uint32_t off, const void *p, unsigned n)
{
	fz_put(&o, 1, SHM_OP_PATCH);
	fz_put(&o, 4, off);
	fz_put(&o, 1, n);
	fz_put_bytes(&o, p, n);
}

static void patch_u64(uint32_t off, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	patch(off, b, 8);
}

/* A seed: flags, then what the caller adds, written by the next begin or end. */
static const char *pending;

static void begin(const char *name, unsigned flags)
{
	if (pending)
		emit(pending);
	pending = name;
	o.len = 0;
	fz_put(&o, 1, flags);
}

static void seeds_sched_shm(void)
{
	begin("shm-intact", 0);                         /* the file as made: joins */
	begin("shm-observe", SHM_FLAG_OBSERVE);         /* lagvisor stat */
	begin("shm-shape", 0);                          /* nr_pcpus, max_entities */
	patch_u64(SHM_HDR_NR_PCPUS, 0x0000004000000003ull);
	begin("shm-dom-off", 0);
	patch_u64(SHM_HDR_DOM_OFF, 0x40);
	begin("shm-dom-shape", 0);                      /* the scheduler block's own */
	fz_put(&o, 1, SHM_OP_PATCH_DOM);
	fz_put(&o, 4, 16);
	fz_put(&o, 1, 8);
	fz_put(&o, 8, 0x0000000100000009ull);           /* nr_pcpus 9, max_entities 1 */
	begin("shm-truncated", SHM_FLAG_RESIZE);
	fz_put(&o, 4, 4096);
	begin("shm-mode", SHM_FLAG_MODE);
	begin("shm-dead-member", 0);
	fz_put(&o, 1, SHM_OP_MEMBER);
	fz_put(&o, 1, 3);
	fz_put(&o, 4, 0x7ffffff0);
	fz_put(&o, 8, 12345);
	begin(NULL, 0);
}

static const struct fz_seed_gen gens[] = {
	{ "cli", seeds_cli },
	{ "sched_shm", seeds_sched_shm },
};

int main(int argc, char **argv)
{
	return fz_seeds_main(argc, argv, gens, sizeof(gens) / sizeof(gens[0]));
}
