/*
 * --cpus at its limit: the largest count the CLI accepts must build the MP
 * table (whose IOAPIC takes the APIC ID after the last CPU's), and one more
 * must stop at validation with one line, not later while loading the
 * kernel. The help states the same limit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/cli.h"
#include "vmm/guest_mem.h"
#include "vmm/x86/boot.h"
#include "common/test_check.h"

static int validate_cpus(unsigned n, char *err, size_t errlen)
{
	char cpus[16];
	char *argv[] = { "lagvisor", "run", "--kernel", "k", "--cpus", cpus, NULL };
	struct vm_config cfg;

	snprintf(cpus, sizeof(cpus), "%u", n);
	err[0] = '\0';
	if (cli_parse(6, argv, &cfg, err, errlen) != CLI_RUN)
		return -EINVAL;
	return config_validate(&cfg, NULL, err, errlen);
}

static void test_largest_builds(void)
{
	struct guest_mem mem = { .nr = 1 };
	char err[256], why[128] = "";

	CHECK(validate_cpus(VM_MAX_CPUS, err, sizeof(err)) == 0);
	/* Below 1 MiB lie the EBDA, the BIOS area and the BDA it writes. */
	mem.slots[0] = (struct guest_mem_slot){ .gpa = 0, .size = 1 << 20 };
	CHECK(guest_mem_map(&mem) == 0);
	CHECK(x86_mptable_write(&mem, VM_MAX_CPUS, why, sizeof(why)) == 0);
	if (why[0])
		fprintf(stderr, "MP table for %u CPUs: %s\n", VM_MAX_CPUS, why);
	CHECK(x86_mptable_write(&mem, VM_MAX_CPUS + 1, why, sizeof(why)) == -EINVAL);
	guest_mem_unmap(&mem);
}

static void test_one_more_rejected(void)
{
	char err[256], want[96];

	CHECK(validate_cpus(VM_MAX_CPUS + 1, err, sizeof(err)) == -EINVAL);
	snprintf(want, sizeof(want), "--cpus %u: lagvisor supports at most %u vCPUs",
		 VM_MAX_CPUS + 1, VM_MAX_CPUS);
	CHECK(!strcmp(err, want));
	if (strcmp(err, want))
		fprintf(stderr, "got '%s', want '%s'\n", err, want);
}

static void test_help_states_limit(void)
{
	char *text = NULL, want[32];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f != NULL);
	if (!f)
		return;
	cli_usage_run(f);
	fclose(f);
	snprintf(want, sizeof(want), "1 to %u", VM_MAX_CPUS);
	CHECK_MSG(text, want);
	free(text);
}

int main(void)
{
	test_largest_builds();
	test_one_more_rejected();
	test_help_states_limit();
	return check_report("test_cpu_limit");
}
