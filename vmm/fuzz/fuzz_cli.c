/*
 * libFuzzer target: `lagvisor run`'s command line as vmm/main.c takes it:
 * cli_parse, then config_validate against the host's limits (once with
 * the memory only, once with KVM's vCPU limit as well, as main.c does
 * before and after opening /dev/kvm), then the scheduler's view of the
 * options (sched_host_cpus, the --sched-domain file name).
 *
 * Input: the arguments after "lagvisor", separated by NUL bytes.
 *
 * Beyond ASan/UBSan and leaks: every refusal is one non-empty line; a
 * config that passes validation is inside the bounds the VM code relies
 * on (1..254 vCPUs and no more than KVM allows, page-aligned memory of at
 * least 2 MiB and at most the host's, a kernel path, eevdf only with the
 * user irqchip, a command line).
 */
#include <errno.h>
#include <stdint.h>

#include "common/fuzz_argv.h"
#include "common/fuzz_target.h"
#include "vmm/cli.h"
#include "vmm/config.h"
#include "vmm/sched/sched_host.h"
#include "vmm/sched/sched_shm.h"

static void check_valid(const struct vm_config *c, const struct host_limits *lim)
{
	FZ_ASSERT(c->kernel_path && c->kernel_path[0]);
	FZ_ASSERT(c->cmdline);
	FZ_ASSERT(c->nr_cpus >= 1 && c->nr_cpus <= VM_MAX_CPUS);
	FZ_ASSERT(!lim->max_cpus || c->nr_cpus <= lim->max_cpus);
	FZ_ASSERT(c->mem_bytes >= VM_MIN_MEM_BYTES && c->mem_bytes % VM_MEM_ALIGN_BYTES == 0);
	FZ_ASSERT(c->mem_bytes <= lim->mem_bytes);
	FZ_ASSERT(!(c->sched == SCHED_MODE_EEVDF && c->irqchip == IRQCHIP_KERNEL));
	FZ_ASSERT(c->serial != SERIAL_FILE || (c->serial_path && c->serial_path[0]));
	FZ_ASSERT(!c->initrd_path || c->initrd_path[0]);
}

void fz_setup(void)
{
	unsetenv(CONFIG_NATIVE_ENV);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct host_limits lim = { .mem_bytes = 64ull << 30 };
	struct host_cpu_list cpus;
	struct vm_config cfg;
	struct fz_argv a;
	char err[512], path[4096];
	int r;

	fz_argv_make(&a, "lagvisor", data, size);
	err[0] = 0;
	r = cli_parse(a.argc, a.argv, &cfg, err, sizeof(err));
	FZ_ASSERT(r == -EINVAL || (r >= CLI_RUN && r <= CLI_VERSION));
	if (r < 0)
		FZ_ASSERT(fz_one_line(err, sizeof(err)));
	if (r != CLI_RUN)
		goto out;
	err[0] = 0;
	if (config_validate(&cfg, &lim, err, sizeof(err))) {
		FZ_ASSERT(fz_one_line(err, sizeof(err)));
		goto out;
	}
	check_valid(&cfg, &lim);
	lim.max_cpus = 288;                     /* KVM_CAP_MAX_VCPUS of a common host */
	err[0] = 0;
	if (config_validate(&cfg, &lim, err, sizeof(err))) {
		FZ_ASSERT(fz_one_line(err, sizeof(err)));
		goto out;
	}
	check_valid(&cfg, &lim);
	if (cfg.sched == SCHED_MODE_EEVDF) {
		err[0] = 0;
		r = sched_host_cpus(&cfg.sched_opts, &cpus, err, sizeof(err));
		if (r)
			FZ_ASSERT(fz_one_line(err, sizeof(err)));
		else
			FZ_ASSERT(host_cpu_list_count(&cpus) > 0);
		if (cfg.sched_opts.domain)
			FZ_ASSERT(sched_shm_path(NULL, cfg.sched_opts.domain, path, sizeof(path)) == 0);
	}
out:
	fz_argv_free(&a);
	return 0;
}
