/* Scheduler options: each parser on good and bad input, and the options
 * through cli_parse (exclusions, error lines naming the option). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>

#include "vmm/cli.h"
#include "vmm/sched/sched_opts.h"
#include "common/test_check.h"

static char err[256];
static struct vm_config cfg;

static int parse(const char *first, ...)
{
	char *argv[64] = { "lagvisor", "run", "--kernel", "k" };
	int argc = 4;
	va_list ap;

	err[0] = '\0';
	va_start(ap, first);
	for (const char *a = first; a && argc < 63; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	return cli_parse(argc, argv, &cfg, err, sizeof(err));
}

static void test_cpulist(void)
{
	struct host_cpu_list l;
	static const char *const bad[] = {
		"", ",", "0,", ",0", "1-", "-1", "3-1", "a", "0 1", "1024", "0-1024",
		"0x1", "1,,2", "99999999999999999999",
	};

	CHECK(sched_opts_parse_cpulist("0-3,8,10-11", &l) == 0);
	CHECK(host_cpu_list_count(&l) == 7);
	CHECK(host_cpu_list_test(&l, 0) && host_cpu_list_test(&l, 3));
	CHECK(!host_cpu_list_test(&l, 4) && host_cpu_list_test(&l, 8));
	CHECK(host_cpu_list_test(&l, 11) && !host_cpu_list_test(&l, 12));
	CHECK(sched_opts_parse_cpulist("1023", &l) == 0 && host_cpu_list_test(&l, 1023));
	CHECK(sched_opts_parse_cpulist("5-5", &l) == 0 && host_cpu_list_count(&l) == 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sched_opts_parse_cpulist(bad[i], &l) != -EINVAL) {
			fprintf(stderr, "cpulist '%s' accepted\n", bad[i]);
			check_failures++;
		}
}

static void test_duration(void)
{
	static const struct { const char *s; uint64_t ns; } good[] = {
		{ "1", 1 }, { "100ns", 100 }, { "750us", 750000 }, { "3ms", 3000000 },
		{ "2s", 2000000000 }, { "18446744073s", 18446744073000000000ull },
	};
	static const char *const bad[] = {
		"", "0", "0ms", "ms", "-1ms", "1.5ms", "3 ms", "3m", "3MS", "1h",
		"18446744074s", "99999999999999999999",
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = 0;
		CHECK(sched_opts_parse_duration(good[i].s, &v) == 0);
		CHECK(v == good[i].ns);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sched_opts_parse_duration(bad[i], &v) != -EINVAL) {
			fprintf(stderr, "duration '%s' accepted\n", bad[i]);
			check_failures++;
		}
}

static void test_features(void)
{
	CHECK(sched_opts_check_features("NO_PLACE_LAG", err, sizeof(err)) == 0);
	CHECK(sched_opts_check_features("NO_TTWU_PENDING,RUN_TO_PARITY,DELAY_DEQUEUE",
					err, sizeof(err)) == 0);
	CHECK(sched_opts_check_features("PLACE_LAG,NO_SUCH", err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "'NO_SUCH'");
	CHECK(sched_opts_check_features("place_lag", err, sizeof(err)) == -EINVAL);
}

static void test_cli(void)
{
	struct sched_options *o = &cfg.sched_opts;

	CHECK(parse(NULL) == CLI_RUN);
	CHECK(!o->host_cpus_set && !o->weight && !o->nice_set && !o->slice_ns &&
	      !o->idle && !o->features && !o->domain && !o->trace_path);
	CHECK(cfg.sched == SCHED_MODE_EEVDF);

	CHECK(parse("--sched", "eevdf", "--host-cpus", "0-1", "--weight", "2048",
		    "--slice=750us", "--sched-feature", "NO_PLACE_LAG,NO_RUN_TO_PARITY",
		    "--sched-domain", "lab-1", "--trace", "/tmp/t.json", NULL) == CLI_RUN);
	CHECK(cfg.sched == SCHED_MODE_EEVDF && cfg.irqchip == IRQCHIP_USER);
	CHECK(o->host_cpus_set && host_cpu_list_count(&o->host_cpus) == 2);
	CHECK(o->weight == 2048 && o->slice_ns == 750000);
	CHECK(o->features && !strcmp(o->features, "NO_PLACE_LAG,NO_RUN_TO_PARITY"));
	CHECK(o->domain && !strcmp(o->domain, "lab-1"));
	CHECK(o->trace_path && !strcmp(o->trace_path, "/tmp/t.json"));

	CHECK(parse("--nice", "-5", NULL) == CLI_RUN && o->nice_set && o->nice == -5);
	CHECK(parse("--nice", "19", NULL) == CLI_RUN && o->nice == 19);
	CHECK(parse("--nice=+3", NULL) == CLI_RUN && o->nice == 3);
	CHECK(parse("--idle", NULL) == CLI_RUN && o->idle);
	CHECK(parse("--latency", "low", NULL) == CLI_RUN && o->latency_low && !o->slice_ns);
	CHECK(parse("--latency=normal", NULL) == CLI_RUN && !o->latency_low);
	CHECK(parse("--latency", "low", "--idle", NULL) == -EINVAL);
	CHECK_MSG(err, "--latency low");

	/* each bad value: -EINVAL and a line naming the option */
	static const struct { const char *opt, *val, *want; } bad[] = {
		{ "--host-cpus", "3-1", "--host-cpus '3-1'" },
		{ "--weight", "0", "--weight '0'" },
		{ "--weight", "1048577", "--weight '1048577'" },
		{ "--weight", "-1", "--weight '-1'" },
		{ "--nice", "20", "--nice '20'" },
		{ "--nice", "-21", "--nice '-21'" },
		{ "--nice", "1.5", "--nice '1.5'" },
		{ "--slice", "3", NULL },      /* 3 ns parses: checked below */
		{ "--slice", "3m", "--slice '3m'" },
		{ "--sched-feature", "NO_BOGUS", "'NO_BOGUS'" },
		{ "--sched-domain", "../x", "--sched-domain '../x'" },
		{ "--sched-domain", ".hidden", "--sched-domain" },
		{ "--trace", "", "--trace" },
		{ "--latency", "high", "--latency 'high'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!bad[i].want)
			continue;
		if (parse(bad[i].opt, bad[i].val, NULL) != -EINVAL) {
			fprintf(stderr, "%s '%s' accepted\n", bad[i].opt, bad[i].val);
			check_failures++;
			continue;
		}
		CHECK_MSG(err, bad[i].want);
	}
	CHECK(parse("--slice", "3", NULL) == CLI_RUN && o->slice_ns == 3);
	CHECK(parse("--weight", "100", "--nice", "1", NULL) == -EINVAL);
	CHECK_MSG(err, "exclusive");
	CHECK(parse("--nice", "1", "--weight", "100", NULL) == -EINVAL);
	CHECK(parse("--idle", "--weight", "100", NULL) == -EINVAL);
	CHECK_MSG(err, "--idle");
	CHECK(parse("--idle=1", NULL) == -EINVAL);
	CHECK_MSG(err, "takes no value");
	CHECK(parse("--weight", NULL) == -EINVAL);
	CHECK_MSG(err, "needs a value");
	CHECK(parse("--sched", "cfs", NULL) == -EINVAL);
}

int main(void)
{
	test_cpulist();
	test_duration();
	test_features();
	test_cli();
	return check_report("test_sched_opts");
}
