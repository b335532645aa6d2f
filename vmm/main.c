/*
 * lagvisor's entry point: parse, build the VM (vm_build), sandbox, run
 * it, and turn the outcome into the exit status. Only this file exits.
 *
 * Exit status: 2 for bad input (options, files, sizes, a file that is not
 * a kernel: what vm_build calls bad input), 1 for runtime failures (no
 * KVM, a KVM call failing, a guest crash), otherwise what the VM ended
 * with (vm_run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "vmm/cli.h"
#include "vmm/config.h"
#include "vmm/sched/stat.h"
#include "vmm/seccomp.h"
#include "vmm/vm.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE   2

/* A shared domain of another user's needs some capabilities kept. */
static uint64_t domain_keep_caps(struct vm *vm)
{
	struct stat st;

	if (!vm->sched_on || vm->sched.shm.fd < 0 || fstat(vm->sched.shm.fd, &st))
		return 0;
	return seccomp_caps_for_domain(st.st_uid, false);
}

static int run(const struct vm_config *cfg)
{
	char err[512] = "";
	bool bad_input;
	struct vm vm;
	int r, code;

	if (vm_build(&vm, cfg, &bad_input, err, sizeof(err))) {
		log_error("%s", err);
		return bad_input ? EXIT_USAGE : EXIT_RUNTIME;
	}
	r = seccomp_configure(!cfg->no_seccomp, domain_keep_caps(&vm));
	if (r) {
		log_error("seccomp: %s", strerror(-r));
		vm_destroy(&vm);
		return EXIT_RUNTIME;
	}
	vm.seccomp_main = SECCOMP_ROLE_MAIN;
	log_info("booting %s (%s) on %u vCPU(s)", cfg->kernel_path,
		 vm.boot.format ? vm.boot.format : "kernel", cfg->nr_cpus);
	code = vm_run(&vm);
	vm_destroy(&vm);
	return code;
}

int main(int argc, char **argv)
{
	struct vm_config cfg;
	char err[256] = "";
	int r;

	if (argc >= 2 && !strcmp(argv[1], "stat"))
		return stat_main(argc - 2, argv + 2);
	r = cli_parse(argc, argv, &cfg, err, sizeof(err));
	switch (r) {
	case CLI_HELP:
		cli_usage(stdout);
		return 0;
	case CLI_HELP_RUN:
		cli_usage_run(stdout);
		return 0;
	case CLI_VERSION:
		printf("lagvisor %s\n", LAGVISOR_VERSION);
		return 0;
	case CLI_RUN:
		break;
	default:
		log_error("%s", err);
		return EXIT_USAGE;
	}
	if (cfg.verbose)
		log_set_level(cfg.verbose > 1 ? LOG_DEBUG : LOG_INFO);
	return run(&cfg);
}
