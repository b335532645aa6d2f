/* CLI parsing and config validation: every option, every error. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>

#include "vmm/cli.h"
#include "common/test_check.h"

static char err[256];
static struct vm_config cfg;

/* Parse a NULL-terminated list of arguments after "lagvisor". */
static int parse(const char *first, ...)
{
	char *argv[64] = { "lagvisor" };
	int argc = 1;
	va_list ap;

	err[0] = '\0';
	va_start(ap, first);
	for (const char *a = first; a && argc < 63; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	return cli_parse(argc, argv, &cfg, err, sizeof(err));
}

static void test_size(void)
{
	static const struct { const char *s; uint64_t v; } good[] = {
		{ "1", 1 }, { "4096", 4096 }, { "1K", 1024 }, { "1k", 1024 },
		{ "256M", 256ull << 20 }, { "256m", 256ull << 20 },
		{ "2G", 2ull << 30 }, { "2g", 2ull << 30 },
		{ "18446744073709551615", UINT64_MAX },
		{ "17179869183G", 17179869183ull << 30 },
	};
	static const char *const bad[] = {
		"", "0", "0M", "M", "-1", "+1", " 1", "1 ", "1.5G", "1T", "1KB",
		"1MM", "0x10", "abc", "12a", "18446744073709551616",
		"99999999999999999999", "17179869184G", "18014398509481984K",
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = 0;
		CHECK(cli_parse_size(good[i].s, &v) == 0);
		CHECK(v == good[i].v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (cli_parse_size(bad[i], &v) != -EINVAL) {
			fprintf(stderr, "size '%s' accepted\n", bad[i]);
			check_failures++;
		}
	}
	CHECK(cli_parse_size(NULL, &v) == -EINVAL);
}

static void test_uint(void)
{
	unsigned v;

	CHECK(cli_parse_uint("0", 0, 10, &v) == 0 && v == 0);
	CHECK(cli_parse_uint("10", 0, 10, &v) == 0 && v == 10);
	CHECK(cli_parse_uint("4294967295", 0, 4294967295u, &v) == 0 && v == 4294967295u);
	CHECK(cli_parse_uint("11", 0, 10, &v) == -ERANGE);
	CHECK(cli_parse_uint("0", 1, 10, &v) == -ERANGE);
	CHECK(cli_parse_uint("4294967296", 0, 4294967295u, &v) == -ERANGE);
	CHECK(cli_parse_uint("99999999999999999999999", 0, 4294967295u, &v) == -ERANGE);
	CHECK(cli_parse_uint("", 0, 10, &v) == -EINVAL);
	CHECK(cli_parse_uint("-1", 0, 10, &v) == -EINVAL);
	CHECK(cli_parse_uint("1x", 0, 10, &v) == -EINVAL);
	CHECK(cli_parse_uint(" 1", 0, 10, &v) == -EINVAL);
	CHECK(cli_parse_uint("0x1", 0, 10, &v) == -EINVAL);
}

static void test_commands(void)
{
	CHECK(parse(NULL) == -EINVAL);
	CHECK_MSG(err, "no command");
	CHECK(parse("--help", NULL) == CLI_HELP);
	CHECK(parse("-h", NULL) == CLI_HELP);
	CHECK(parse("help", NULL) == CLI_HELP);
	CHECK(parse("help", "run", NULL) == CLI_HELP_RUN);
	CHECK(parse("run", "--help", NULL) == CLI_HELP_RUN);
	CHECK(parse("run", "-h", NULL) == CLI_HELP_RUN);
	CHECK(parse("--version", NULL) == CLI_VERSION);
	CHECK(parse("-V", NULL) == CLI_VERSION);
	CHECK(parse("help", "walk", NULL) == -EINVAL);
	CHECK_MSG(err, "unknown topic 'walk'");
	CHECK(parse("help", "run", "x", NULL) == -EINVAL);
	CHECK_MSG(err, "unexpected argument 'x'");
	CHECK(parse("--version", "x", NULL) == -EINVAL);
	CHECK_MSG(err, "unexpected argument 'x'");
	CHECK(parse("fly", NULL) == -EINVAL);
	CHECK_MSG(err, "unknown command 'fly'");
	CHECK(parse("--frobnicate", NULL) == -EINVAL);
	CHECK_MSG(err, "unknown command '--frobnicate'");
}

static void test_run_defaults(void)
{
	CHECK(parse("run", "--kernel", "k", NULL) == CLI_RUN);
	CHECK(!strcmp(cfg.kernel_path, "k"));
	CHECK(cfg.initrd_path == NULL);
	CHECK(cfg.cmdline && !strcmp(cfg.cmdline, ""));
	CHECK(cfg.nr_cpus == 1);
	CHECK(cfg.mem_bytes == 256ull << 20);
	CHECK(cfg.sched == SCHED_MODE_EEVDF);
	CHECK(cfg.irqchip == IRQCHIP_USER);
	CHECK(cfg.serial == SERIAL_STDIO);
	CHECK(!cfg.strict_io);
	CHECK(!cfg.no_x2apic);
	CHECK(cfg.verbose == 0);
	CHECK(config_validate(&cfg, NULL, err, sizeof(err)) == 0);
}

static void test_run_options(void)
{
	CHECK(parse("run", "--kernel=/k", "--initrd", "/i", "--cmdline",
		    "console=ttyS0 quiet", "--cpus", "4", "--memory=1G",
		    "--sched", "host", "--serial", "file:/tmp/x.log",
		    "--strict-io", "--no-x2apic", "-v", "--verbose", NULL) == CLI_RUN);
	CHECK(!strcmp(cfg.kernel_path, "/k"));
	CHECK(!strcmp(cfg.initrd_path, "/i"));
	CHECK(!strcmp(cfg.cmdline, "console=ttyS0 quiet"));
	CHECK(cfg.nr_cpus == 4);
	CHECK(cfg.mem_bytes == 1ull << 30);
	CHECK(cfg.sched == SCHED_MODE_HOST);
	CHECK(cfg.serial == SERIAL_FILE && !strcmp(cfg.serial_path, "/tmp/x.log"));
	CHECK(cfg.strict_io);
	CHECK(cfg.no_x2apic);
	CHECK(cfg.verbose == 2);

	CHECK(parse("run", "--kernel", "k", "-vv", "--serial", "none",
		    "--cmdline=", "--cpus=2", "--cpus", "3", NULL) == CLI_RUN);
	CHECK(cfg.verbose == 2);
	CHECK(cfg.serial == SERIAL_NONE);
	CHECK(!strcmp(cfg.cmdline, ""));
	CHECK(cfg.nr_cpus == 3); /* last one wins */

	CHECK(parse("run", "--serial=stdio", "--kernel", "k", NULL) == CLI_RUN);
	CHECK(cfg.serial == SERIAL_STDIO);
	/* A value may itself start with dashes. */
	CHECK(parse("run", "--kernel", "k", "--cmdline", "--foo", NULL) == CLI_RUN);
	CHECK(!strcmp(cfg.cmdline, "--foo"));
}

static void test_run_errors(void)
{
	static const struct { const char *a, *b, *msg; } cases[] = {
		{ "--cpus", "x", "--cpus 'x': not a number" },
		{ "--cpus", "-1", "--cpus '-1'" },
		{ "--cpus", "99999999999", "--cpus '99999999999'" },
		{ "--cpus", "", "--cpus ''" },
		{ "--memory", "12X", "--memory '12X': not a size" },
		{ "--memory", "0", "--memory '0'" },
		{ "--memory", "99999999999999999999", "--memory '9999" },
		{ "--memory", "", "--memory ''" },
		{ "--sched", "fifo", "--sched 'fifo': unknown scheduler" },
		{ "--serial", "tcp:1", "--serial 'tcp:1'" },
		{ "--serial", "file:", "--serial file: needs a path" },
		{ "--serial", "", "--serial ''" },
		{ "--bogus", "1", "unknown option '--bogus'" },
		{ "--bogus=1", NULL, "unknown option '--bogus'" },
		{ "-x", NULL, "unknown option '-x'" },
		{ "-vq", NULL, "unknown option '-q'" },
		{ "--strict-io=yes", NULL, "--strict-io takes no value" },
		{ "--no-x2apic=1", NULL, "--no-x2apic takes no value" },
		{ "--verbose=1", NULL, "--verbose takes no value" },
		{ "stray", NULL, "unexpected argument 'stray'" },
		{ "-", NULL, "unexpected argument '-'" },
		{ "--", NULL, "unexpected argument '--'" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(parse("run", "--kernel", "k", cases[i].a, cases[i].b, NULL) == -EINVAL);
		CHECK_MSG(err, cases[i].msg);
	}
	/* An argument with a newline or other control characters is quoted
	 * in one line (found by vmm/fuzz/fuzz_cli). */
	CHECK(parse("run", "--kernel", "k", "--cpus", "4\nlagvisor: error: fake", NULL) == -EINVAL);
	CHECK_MSG(err, "--cpus '4?lagvisor: error: fake'");
	CHECK(!strchr(err, '\n'));
	CHECK(parse("--\377\n\t\r", NULL) == -EINVAL);
	CHECK_MSG(err, "unknown command '--\377?");
	CHECK(!strchr(err, '\n') && !strchr(err, '\t') && !strchr(err, '\r'));
	static const char *const need_value[] = {
		"--kernel", "--initrd", "--cmdline", "--cpus", "--memory",
		"--sched", "--serial",
	};
	for (size_t i = 0; i < sizeof(need_value) / sizeof(need_value[0]); i++) {
		char want[64];

		CHECK(parse("run", need_value[i], NULL) == -EINVAL);
		snprintf(want, sizeof(want), "%s needs a value", need_value[i]);
		CHECK_MSG(err, want);
	}
}

static void test_validate(void)
{
	struct host_limits lim = { .mem_bytes = 8ull << 30, .max_cpus = 16 };

	CHECK(parse("run", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "missing --kernel");

	CHECK(parse("run", "--kernel", "", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "missing --kernel");

	CHECK(parse("run", "--kernel", "k", "--initrd=", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "--initrd: empty path");

	CHECK(parse("run", "--kernel", "k", "--sched", "eevdf", NULL) == CLI_RUN);
	CHECK(cfg.irqchip == IRQCHIP_USER);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == 0);
	CHECK(parse("run", "--kernel", "k", "--sched", "eevdf", "--irqchip", "kernel",
		    NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "--sched eevdf needs --irqchip user");
	/* --irqchip kernel alone means the host scheduler, in either order */
	CHECK(parse("run", "--kernel", "k", "--irqchip", "kernel", NULL) == CLI_RUN);
	CHECK(cfg.sched == SCHED_MODE_HOST && cfg.irqchip == IRQCHIP_KERNEL);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == 0);
	CHECK(parse("run", "--kernel", "k", "--irqchip", "user", "--sched", "host",
		    NULL) == CLI_RUN);
	CHECK(cfg.sched == SCHED_MODE_HOST && cfg.irqchip == IRQCHIP_USER);
	CHECK(parse("run", "--kernel", "k", "--sched", "host", NULL) == CLI_RUN);
	CHECK(cfg.irqchip == IRQCHIP_KERNEL);
	CHECK(parse("run", "--kernel", "k", "--weight", "2048", "--sched", "host",
		    NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "--weight: only with --sched eevdf");
	CHECK(parse("run", "--kernel", "k", "--sched", "eevdf", "--weight", "2048",
		    NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == 0);

	CHECK(parse("run", "--kernel", "k", "--cpus", "0", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "--cpus 0: a VM needs at least one vCPU");

	CHECK(parse("run", "--kernel", "k", "--cpus", "16", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == 0);
	CHECK(parse("run", "--kernel", "k", "--cpus", "17", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "--cpus 17: this host's KVM allows at most 16 vCPUs");
	/* Unknown KVM limit: only the fixed bound applies. */
	CHECK(config_validate(&cfg, NULL, err, sizeof(err)) == 0);
	CHECK(parse("run", "--kernel", "k", "--cpus", "254", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, NULL, err, sizeof(err)) == 0);
	CHECK(parse("run", "--kernel", "k", "--cpus", "255", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, NULL, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "--cpus 255: lagvisor supports at most 254 vCPUs");

	CHECK(parse("run", "--kernel", "k", "--memory", "1M", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "--memory 1M: too small (at least 2M)");
	CHECK(parse("run", "--kernel", "k", "--memory", "2M", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == 0);
	CHECK(parse("run", "--kernel", "k", "--memory", "3000001", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "--memory 3000001: not a multiple of 4K");
	/* Quoted as typed, not as the byte count it stands for. */
	CHECK(parse("run", "--kernel", "k", "--memory", "4097K", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK(!strcmp(err, "--memory 4097K: not a multiple of 4K"));
	CHECK(parse("run", "--kernel", "k", "--memory=4097k", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK(!strcmp(err, "--memory 4097k: not a multiple of 4K"));
	CHECK(parse("run", "--kernel", "k", "--memory", "1536K", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK(!strcmp(err, "--memory 1536K: too small (at least 2M)"));
	CHECK(parse("run", "--kernel", "k", "--memory", "8G", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == 0);
	CHECK(parse("run", "--kernel", "k", "--memory", "9G", NULL) == CLI_RUN);
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "--memory 9G: more than this host's memory (8G)");
	lim.mem_bytes = 0;
	CHECK(config_validate(&cfg, &lim, err, sizeof(err)) == 0);
}

static void test_format_size(void)
{
	static const struct { uint64_t v; const char *s; } cases[] = {
		{ 0, "0" }, { 1000, "1000" }, { 1024, "1K" }, { 1536, "1.5K" },
		{ 2ull << 20, "2M" }, { 3ull << 30, "3G" }, { 3000001, "2.8M" }, { 1025, "1.0K" },
		{ 33580515328ull, "31.2G" }, { UINT64_MAX, "17179869183.9G" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		config_format_size(cases[i].v, buf, sizeof(buf));
		if (strcmp(buf, cases[i].s)) {
			fprintf(stderr, "format %llu: '%s', want '%s'\n",
				(unsigned long long)cases[i].v, buf, cases[i].s);
			check_failures++;
		}
	}
}

static void test_meminfo(void)
{
	uint64_t v = 0;

	CHECK(config_parse_meminfo("MemTotal:       32794468 kB\nMemFree: 1 kB\n", &v) == 0);
	CHECK(v == 32794468ull * 1024);
	CHECK(config_parse_meminfo("Foo: 1 kB\nMemTotal: 2048 kB\n", &v) == 0);
	CHECK(v == 2048ull * 1024);
	CHECK(config_parse_meminfo("MemFree: 1 kB\n", &v) == -EINVAL);
	CHECK(config_parse_meminfo("MemTotal: x kB\n", &v) == -EINVAL);
	CHECK(config_parse_meminfo("MemTotal: 12 MB\n", &v) == -EINVAL);
	CHECK(config_parse_meminfo("", &v) == -EINVAL);
}

int main(void)
{
	test_size();
	test_uint();
	test_commands();
	test_run_defaults();
	test_run_options();
	test_run_errors();
	test_validate();
	test_format_size();
	test_meminfo();
	return check_report("test_cli");
}
