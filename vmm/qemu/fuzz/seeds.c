/*
 * Seed inputs for vmm/qemu/fuzz, written at build time:
 *     fuzz_qemu_seeds qmp|qemu_cmdline DIR
 * qmp: a control word, then what libvirt 9.0 sends (the sequences
 * vmm/qemu/tests/test_qmp.c replays, vmm/qemu/README.md §3-§5) and the bad
 * requests that test checks. qemu_cmdline: LAGVISOR_QEMU_OPTS, then the
 * command lines test_qemu_cmdline.c parses, arguments separated by NULs.
 */
#include <string.h>

#include "common/fuzz_seeds.h"
#include "vmm/qemu/tests/libvirt_argv.h"

static struct fz_out o;

static void emit(const char *name)
{
	fz_emit(name, &o);
}

static void qmp_seed(const char *name, uint32_t ctl, const char *const *lines)
{
	o.len = 0;
	fz_put(&o, 4, ctl);
	for (unsigned i = 0; lines[i]; i++)
		fz_put_bytes(&o, lines[i], strlen(lines[i]));
	emit(name);
}

#define QMP(name, ctl, ...) qmp_seed(name, ctl, (const char *const[]){ __VA_ARGS__, NULL })

static void seeds_qmp(void)
{
	QMP("qmp-libvirt-start", 0x12345678,
	    "{\"execute\":\"qmp_capabilities\",\"id\":\"libvirt-1\"}\r\n",
	    "{\"execute\":\"query-migrate-capabilities\",\"id\":\"libvirt-2\"}\r\n",
	    "{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":"
	    "[{\"capability\":\"events\",\"state\":true}]},\"id\":\"libvirt-3\"}\r\n",
	    "{\"execute\":\"query-chardev\",\"id\":\"libvirt-4\"}\r\n",
	    "{\"execute\":\"query-hotpluggable-cpus\",\"id\":\"libvirt-5\"}\r\n",
	    "{\"execute\":\"query-cpus-fast\",\"id\":\"libvirt-6\"}\r\n",
	    "{\"execute\":\"query-iothreads\",\"id\":\"libvirt-9\"}\r\n",
	    "{\"execute\":\"query-named-block-nodes\",\"arguments\":{\"flat\":true},\"id\":\"libvirt-10\"}\r\n",
	    "{\"execute\":\"qom-list\",\"arguments\":{\"path\":\"/machine/peripheral\"},\"id\":\"libvirt-11\"}\r\n",
	    "{\"execute\":\"query-block\",\"id\":\"libvirt-12\"}\r\n",
	    "{\"execute\":\"cont\",\"id\":\"libvirt-13\"}\r\n");
	QMP("qmp-lifecycle", 0x9e3779b9,
	    "{\"execute\":\"qmp_capabilities\"}\n",
	    "{\"execute\":\"stop\",\"id\":\"a\"}\n{\"execute\":\"stop\",\"id\":\"b\"}\n",
	    "{\"execute\":\"query-status\",\"id\":\"c\"}\n{\"execute\":\"cont\",\"id\":\"d\"}\n",
	    "{\"execute\":\"system_powerdown\",\"id\":\"e\"}\n",
	    "{\"execute\":\"system_reset\",\"id\":\"f\"}\n",
	    "{\"execute\":\"query-balloon\"}\n{\"execute\":\"balloon\",\"arguments\":{\"value\":1}}\n",
	    "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"/machine/peripheral/balloon0\","
	    "\"property\":\"guest-stats\"},\"id\":7}\n",
	    "{\"execute\":\"query-version\"}{\"execute\":\"query-kvm\"}{\"execute\":\"query-name\"}"
	    "{\"execute\":\"query-uuid\"}{\"execute\":\"query-jobs\"}\n",
	    "{\"execute\":\"quit\",\"id\":\"q\"}\n");
	QMP("qmp-bad-requests", 0xdeadbeef,
	    "{\"execute\":\"qmp_capabilities\"}\n",
	    "{\"execute\":}\r\n{\"id\":1}\r\n{\"execute\":42}\r\n",
	    "{\"execute\":\"stop\",\"arguments\":[]}\r\n{\"execute\":\"stop\",\"bogus\":1}\r\n",
	    "{\"exec-oob\":\"stop\"}\r\n{\"execute\":\"no-such-command\",\"id\":7}\r\n",
	    "{\"execute\":\"qmp_capabilities\"}\r\n{\"execute\":\"qom-list\"}\r\n",
	    "{\"a\":\"\\u12\"}\r\n", "null\n", "[1,2]\n\"str\"\n",
	    "{\"execute\":\"human-monitor-command\",\"id\":{\"n\":[1]}}\n",
	    "{\"execute\":\"query-status\",\"id\":\"ok\"}\n");
	QMP("qmp-commands", 0x1,
	    "{\"execute\":\"qmp_capabilities\"}\n{\"execute\":\"query-commands\",\"id\":1}\n");
}

static void argv_seed(const char *name, const char *env, const char *const *args)
{
	o.len = 0;
	if (env) {
		fz_put_bytes(&o, env, strlen(env));
		fz_put(&o, 1, 0);
	} else {
		fz_put(&o, 1, 0xff);
	}
	fz_put_argv(&o, args);
	emit(name);
}

#define ARGS(name, env, ...) argv_seed(name, env, (const char *const[]){ __VA_ARGS__, NULL })

static void seeds_qemu_cmdline(void)
{
	ARGS("libvirt-json", NULL, LIBVIRT_MIN_ARGV);
	ARGS("libvirt-kv", "verbose=2,irqchip=kernel",
	     "-name", "min", "-object", "secret,id=masterKey0,format=raw,file=/x/master-key.aes",
	     "-m", "size=1G", "-smp", "cpus=3", "-kernel", "/k", "-initrd", "/i",
	     "-chardev", "socket,id=charmonitor,fd=31,server=on,wait=off",
	     "-mon", "chardev=charmonitor,id=monitor,mode=control",
	     "-add-fd", "set=0,fd=32,opaque=serial0-source",
	     "-chardev", "file,id=charserial0,path=/dev/fdset/0,append=on",
	     "-device", "isa-serial,chardev=charserial0,id=serial0",
	     "-lagvisor", "irqchip=user,strict-io=on,host-cpus=0-1,,3,slice=3ms,weight=2048,"
			  "sched-domain=shared1",
	     "--frobnicate", "7", "-another-unknown", "x", "-nodefaults", "disk.img");
	ARGS("probe", NULL, "-S", "-no-user-config", "-nodefaults", "-nographic",
	     "-machine", "none,accel=kvm:tcg",
	     "-qmp", "unix:/var/lib/libvirt/qemu/qmp-X/qmp.monitor,server=on,wait=off",
	     "-pidfile", "/var/lib/libvirt/qemu/qmp-X/qmp.pid", "-daemonize");
	ARGS("standin-errors", "machine=standin,native=off,nice=-3,idle=on",
	     "-m", "4097K", "-smp", "255", "-kernel", "/k", "-serial", "chardev:s0",
	     "-chardev", "stdio,id=s0", "-lagvisor", "sched=host,trace=/tmp/t,,x", "-no-reboot");
}

static const struct fz_seed_gen gens[] = {
	{ "qmp", seeds_qmp },
	{ "qemu_cmdline", seeds_qemu_cmdline },
};

int main(int argc, char **argv)
{
	return fz_seeds_main(argc, argv, gens, sizeof(gens) / sizeof(gens[0]));
}
