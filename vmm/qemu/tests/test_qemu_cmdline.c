/* The QEMU command-line parser against what libvirt 9.0 generates. */
#include <errno.h>
#include <string.h>

#include "vmm/qemu/qemu_cmdline.h"
#include "vmm/qemu/qemu_opts.h"
#include "common/test_check.h"
#include "vmm/qemu/tests/libvirt_argv.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* libvirt's command line for dom-min.xml (vmm/qemu/README.md §1). */
static void test_libvirt_json_form(void)
{
	char *const argv[] = {
		"lagvisor-qemu", LIBVIRT_MIN_ARGV,
	};
	struct qemu_launch l;
	const struct qemu_chardev *c;
	char err[256] = "";

	CHECK(!qemu_cmdline_is_probe(ARGC(argv), argv));
	CHECK(qemu_cmdline_parse(ARGC(argv), argv, NULL, &l, err, sizeof(err)) == 0);
	CHECK(!l.probe);
	CHECK(l.start_paused && l.no_shutdown && !l.daemonize);
	/* No -lagvisor: lagvisor's scheduler and irqchip, as `lagvisor run`. */
	CHECK(l.cfg.sched == SCHED_MODE_EEVDF && l.cfg.irqchip == IRQCHIP_USER);
	CHECK(l.cfg.nr_cpus == 2);
	CHECK(l.cfg.mem_bytes == 256ull << 20);
	CHECK(l.name && !strcmp(l.name, "min"));
	CHECK(l.uuid && !strcmp(l.uuid, "c7a5fdbd-edaf-9455-926a-d65c16db1809"));
	CHECK(l.cfg.kernel_path && !strcmp(l.cfg.kernel_path, "/var/lib/lagvisor/hello.elf"));
	CHECK(!l.cfg.initrd_path);
	CHECK(!strcmp(l.cfg.cmdline, "cpus=2 console=ttyS0"));
	CHECK(l.monitor && !strcmp(l.monitor, "charmonitor"));
	c = qemu_launch_chardev(&l, "charmonitor");
	CHECK(c && c->kind == QEMU_CHR_SOCKET && c->fd == 31 && c->server);
	CHECK(l.serial && !strcmp(l.serial, "charserial0"));
	c = qemu_launch_chardev(&l, "charserial0");
	CHECK(c && c->kind == QEMU_CHR_PTY && c->fd == -1);
	CHECK(l.nr_devices == 1 && !strcmp(l.devices[0].id, "serial0") &&
	      !strcmp(l.devices[0].driver, "isa-serial"));
	CHECK(l.nr_unknown == 0);
	CHECK(l.nr_ignored >= 10);
	qemu_launch_free(&l);
}

/* The key=value fallbacks, file serial through -add-fd, lagvisor knobs. */
static void test_libvirt_kv_form(void)
{
	char *const argv[] = {
		"lagvisor-qemu", "-name", "min", "-object",
		"secret,id=masterKey0,format=raw,file=/x/master-key.aes",
		"-m", "size=1G", "-smp", "cpus=3", "-kernel", "/k", "-initrd", "/i",
		"-chardev", "socket,id=charmonitor,fd=31,server=on,wait=off",
		"-mon", "chardev=charmonitor,id=monitor,mode=control",
		"-add-fd", "set=0,fd=32,opaque=serial0-source",
		"-chardev", "file,id=charserial0,path=/dev/fdset/0,append=on",
		"-device", "isa-serial,chardev=charserial0,id=serial0",
		"-lagvisor", "irqchip=user,strict-io=on,host-cpus=0-1,,3,slice=3ms,weight=2048,"
			     "sched-domain=shared1,latency=low",
		"--frobnicate", "7", "-another-unknown", "x", "-nodefaults", "disk.img",
	};
	struct qemu_launch l;
	const struct qemu_chardev *c;
	char err[256] = "";

	CHECK(qemu_cmdline_parse(ARGC(argv), argv, "verbose=2,irqchip=kernel", &l, err,
				 sizeof(err)) == 0);
	CHECK(!l.start_paused && !l.no_shutdown);
	CHECK(l.cfg.nr_cpus == 3 && l.cfg.mem_bytes == 1ull << 30);
	CHECK(!strcmp(l.name, "min"));
	CHECK(!strcmp(l.cfg.initrd_path, "/i") && !strcmp(l.cfg.cmdline, ""));
	c = qemu_launch_chardev(&l, "charserial0");
	CHECK(c && c->kind == QEMU_CHR_FILE && c->append && !strcmp(c->path, "/dev/fdset/0"));
	CHECK(qemu_launch_fdset_fd(&l, c->path) == 32);
	CHECK(qemu_launch_fdset_fd(&l, "/dev/fdset/1") == -ENOENT);
	CHECK(qemu_launch_fdset_fd(&l, "/tmp/log") == -EINVAL);
	CHECK(qemu_launch_fdset_fd(&l, "/dev/fdset/x") == -EINVAL);
	CHECK(!strcmp(l.serial, "charserial0"));
	CHECK(l.cfg.irqchip == IRQCHIP_USER);      /* the option beats the env */
	CHECK(l.cfg.strict_io && l.cfg.verbose == 2);
	CHECK(l.cfg.sched_opts.host_cpus_set &&
	      host_cpu_list_count(&l.cfg.sched_opts.host_cpus) == 3 &&
	      host_cpu_list_test(&l.cfg.sched_opts.host_cpus, 3));
	CHECK(l.cfg.sched_opts.slice_ns == 3000000 && l.cfg.sched_opts.weight == 2048);
	CHECK(l.cfg.sched_opts.latency_low);
	CHECK(l.cfg.sched_opts.domain && !strcmp(l.cfg.sched_opts.domain, "shared1"));
	CHECK(l.nr_unknown == 3);                  /* 2 options + 1 bare word */
	qemu_launch_free(&l);
}

static void test_probe(void)
{
	char *const probe[] = {
		"qemu", "-S", "-no-user-config", "-nodefaults", "-nographic",
		"-machine", "none,accel=kvm:tcg",
		"-qmp", "unix:/var/lib/libvirt/qemu/qmp-X/qmp.monitor,server=on,wait=off",
		"-pidfile", "/var/lib/libvirt/qemu/qmp-X/qmp.pid", "-daemonize",
	};
	char *const m[] = { "qemu", "-M", "type=none" };
	char *const pc[] = { "qemu", "-machine", "pc", "-machine" };
	struct qemu_launch l;
	char err[256] = "";

	CHECK(qemu_cmdline_is_probe(ARGC(probe), probe));
	CHECK(qemu_cmdline_is_probe(ARGC(m), m));
	CHECK(!qemu_cmdline_is_probe(ARGC(pc), pc));
	CHECK(qemu_cmdline_parse(ARGC(probe), probe, NULL, &l, err, sizeof(err)) == 0);
	CHECK(l.probe && l.daemonize && l.start_paused);
	CHECK(l.pidfile && !strcmp(l.pidfile, "/var/lib/libvirt/qemu/qmp-X/qmp.pid"));
	CHECK(l.monitor && qemu_launch_chardev(&l, l.monitor));
	CHECK(!strcmp(qemu_launch_chardev(&l, l.monitor)->path,
		      "/var/lib/libvirt/qemu/qmp-X/qmp.monitor"));
	qemu_launch_free(&l);
}

/* Each bad value of an option lagvisor acts on fails with a message. */
static void test_errors(void)
{
	static const struct {
		const char *a, *b, *want;
	} bad[] = {
		{ "-m", "0", "-m 0" },
		{ "-m", "12Q", "not a memory size" },
		{ "-smp", "two", "-smp two" },
		{ "-smp", "2,sockets=0", "topology" },
		{ "-chardev", "pty", "needs a backend and id=" },
		{ "-chardev", "socket,id=m", "needs fd= or path=" },
		{ "-chardev", "socket,id=m,fd=x", "not an fd number" },
		{ "-chardev", "file,id=f", "needs path=" },
		{ "-mon", "chardev=nope,mode=control", "no chardev with id 'nope'" },
		{ "-device", "isa-serial,chardev=nope", "no chardev with id 'nope'" },
		{ "-device", "{\"driver\":", "-device" },
		{ "-add-fd", "set=0", "needs set=N,fd=N" },
		{ "-lagvisor", "sched=cfs", "unknown setting" },
		{ "-lagvisor", "slice=fast", "-lagvisor slice" },
		{ "-lagvisor", "idle=maybe", "takes on|off" },
		{ "-lagvisor", "idle=on,weight=5", "-lagvisor weight" },
		{ "-kernel", NULL, "missing value" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "qemu", (char *)bad[i].a, (char *)bad[i].b, NULL };
		struct qemu_launch l;
		char err[256] = "";

		CHECK(qemu_cmdline_parse(bad[i].b ? 3 : 2, argv, NULL, &l, err,
					 sizeof(err)) < 0);
		CHECK_MSG(err, bad[i].want);
		qemu_launch_free(&l);
	}
	/* A duplicate chardev id, a monitor that is not a listening socket. */
	{
		char *const dup[] = { "q", "-chardev", "pty,id=a", "-chardev", "null,id=a" };
		char *const mon[] = { "q", "-chardev", "pty,id=a", "-mon", "a" };
		struct qemu_launch l;
		char err[256] = "";

		CHECK(qemu_cmdline_parse(ARGC(dup), dup, NULL, &l, err, sizeof(err)) < 0);
		CHECK_MSG(err, "duplicate id 'a'");
		qemu_launch_free(&l);
		CHECK(qemu_cmdline_parse(ARGC(mon), mon, NULL, &l, err, sizeof(err)) < 0);
		CHECK_MSG(err, "listening socket");
		qemu_launch_free(&l);
		CHECK(qemu_cmdline_parse(1, mon, "bogus=1", &l, err, sizeof(err)) < 0);
		CHECK_MSG(err, "bogus");
		qemu_launch_free(&l);
	}
	/* A value with a newline is quoted in one line (found by
	 * vmm/qemu/fuzz/fuzz_qemu_cmdline). */
	{
		char *const nl[] = { "q", "-chardev", "file,id=c\nlagvisor: error: fake" };
		struct qemu_launch l;
		char err[256] = "";

		CHECK(qemu_cmdline_parse(ARGC(nl), nl, NULL, &l, err, sizeof(err)) < 0);
		CHECK(err[0] && !strchr(err, '\n'));
		CHECK_MSG(err, "?lagvisor: error: fake");
		qemu_launch_free(&l);
	}
}

/* Limits that config_validate or the front checks, named as the user typed
 * them: -smp beyond what the MP table can hold, -m not in whole pages. */
static void test_limits(void)
{
	static const struct {
		const char *opt, *val, *want;    /* want NULL: valid */
	} cases[] = {
		{ "-smp", "254", NULL },
		{ "-smp", "255", "-smp 255: lagvisor supports at most 254 vCPUs" },
		{ "-smp", "sockets=255", "-smp sockets=255: lagvisor supports at most 254 vCPUs" },
		{ "-smp", "cpus=4,sockets=255", NULL },   /* starts 4 */
		{ "-m", "4097K", "-m 4097K: not a multiple of 4K" },
		{ "-m", "size=4097k", "-m 4097k: not a multiple of 4K" },
		{ "-m", "4194305B", "-m 4194305B: not a multiple of 4K" },
		{ "-m", "1", "-m 1: too small (at least 2M)" },
		{ "-m", "2", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[] = { "qemu", "-kernel", "/k", (char *)cases[i].opt,
				 (char *)cases[i].val };
		struct qemu_launch l;
		char err[256] = "";
		int r = qemu_cmdline_parse(ARGC(argv), argv, NULL, &l, err, sizeof(err));

		if (!r)
			r = config_validate(&l.cfg, NULL, err, sizeof(err));
		if (cases[i].want) {
			CHECK(r == -EINVAL);
			if (strcmp(err, cases[i].want))
				fprintf(stderr, "%s %s: '%s', want '%s'\n", cases[i].opt,
					cases[i].val, err, cases[i].want);
			CHECK(!strcmp(err, cases[i].want));
		} else {
			CHECK(r == 0);
		}
		qemu_launch_free(&l);
	}
}

static void test_opts(void)
{
	struct qemu_opts o;
	char err[128] = "";
	uint64_t v;
	bool b;

	CHECK(qemu_opts_parse(&o, "file,id=x,,y,path=/a,,b,,,append", "backend", err,
			      sizeof(err)) == 0);
	CHECK(o.nr == 4);
	CHECK(!strcmp(qemu_opts_get(&o, "backend"), "file"));
	CHECK(!strcmp(qemu_opts_get(&o, "id"), "x,y"));
	CHECK(!strcmp(qemu_opts_get(&o, "path"), "/a,b,"));
	CHECK(!qemu_opts_get_bool(&o, "append", false, &b) && b);
	CHECK(qemu_opts_get_bool(&o, "id", false, &b) == -EINVAL);
	CHECK(qemu_opts_get_uint(&o, "missing", 10, &v) == -ENOENT);
	qemu_opts_free(&o);

	CHECK(qemu_opts_parse(&o, "{\"driver\":\"d\",\"index\":3,\"on\":true,\"o\":{\"a\":1}}",
			      "driver", err, sizeof(err)) == 0);
	CHECK(!strcmp(qemu_opts_get(&o, "driver"), "d"));
	CHECK(!qemu_opts_get_uint(&o, "index", 10, &v) && v == 3);
	CHECK(qemu_opts_get_uint(&o, "index", 2, &v) == -EINVAL);
	CHECK(!strcmp(qemu_opts_get(&o, "on"), "on"));
	CHECK(!strcmp(qemu_opts_get(&o, "o"), "{\"a\":1}"));
	qemu_opts_free(&o);

	CHECK(qemu_opts_parse(&o, "a=1,=2", NULL, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "empty parameter name");
	qemu_opts_free(&o);
	CHECK(qemu_opts_parse(&o, "a=1,a=2", NULL, err, sizeof(err)) == 0);
	CHECK(!strcmp(qemu_opts_get(&o, "a"), "2"));   /* the last one wins */
	qemu_opts_free(&o);

	CHECK(qemu_parse_uint("18446744073709551615", UINT64_MAX, &v) == 0 &&
	      v == UINT64_MAX);
	CHECK(qemu_parse_uint("18446744073709551616", UINT64_MAX, &v) == -EINVAL);
	CHECK(qemu_parse_mem("2G", &v) == 0 && v == 2ull << 30);
	CHECK(qemu_parse_mem("512", &v) == 0 && v == 512ull << 20);
	CHECK(qemu_parse_mem("4096B", &v) == 0 && v == 4096);
	CHECK(qemu_parse_mem("1MB", &v) == -EINVAL);
	CHECK(qemu_parse_mem("", &v) == -EINVAL);
}

int main(void)
{
	test_libvirt_json_form();
	test_libvirt_kv_form();
	test_probe();
	test_errors();
	test_limits();
	test_opts();
	return check_report("test_qemu_cmdline");
}
