/*
 * libFuzzer target: the QEMU command line lagvisor-qemu takes from
 * libvirt (vmm/qemu/main.c): qemu_cmdline_is_probe, qemu_cmdline_parse
 * with LAGVISOR_QEMU_OPTS, then what the front does with a launch: its
 * chardevs looked up by id, /dev/fdset paths resolved, the VM config
 * validated (front_machines.c), qemu_launch_free.
 *
 * Input: LAGVISOR_QEMU_OPTS up to the first NUL (absent when the input
 * starts with 0xff), then the arguments after "lagvisor-qemu", separated
 * by NUL bytes.
 *
 * Beyond ASan/UBSan and leaks (every copy the launch holds is freed):
 * every refusal is one non-empty line; a launch's monitor and serial name
 * chardev lookups work; a valid config has 1..254 vCPUs and aligned memory.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/fuzz_argv.h"
#include "common/fuzz_target.h"
#include "vmm/config.h"
#include "vmm/qemu/qemu_cmdline.h"

void fz_setup(void)
{
	unsetenv(CONFIG_NATIVE_ENV);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct host_limits lim = { .mem_bytes = 64ull << 30, .max_cpus = 288 };
	const uint8_t *z = size ? memchr(data, 0, size) : NULL;
	char *env = NULL, err[512];
	struct qemu_launch l;
	struct fz_argv a;
	size_t env_len;
	int r;

	if (size && data[0] == 0xff) {
		data++;
		size--;
	} else {
		env_len = z ? (size_t)(z - data) : size;
		env = strndup((const char *)data, env_len);
		data += env_len + (z ? 1 : 0);
		size -= env_len + (z ? 1 : 0);
	}
	fz_argv_make(&a, "lagvisor-qemu", data, size);
	if (qemu_cmdline_is_probe(a.argc, a.argv))
		goto out;
	err[0] = 0;
	r = qemu_cmdline_parse(a.argc, a.argv, env, &l, err, sizeof(err));
	if (r) {
		FZ_ASSERT(r < 0);
		FZ_ASSERT(fz_one_line(err, sizeof(err)));
		qemu_launch_free(&l);
		goto out;
	}
	FZ_ASSERT(l.nr_chardevs <= QEMU_MAX_CHARDEVS && l.nr_fds <= QEMU_MAX_FDS &&
		  l.nr_devices <= QEMU_MAX_DEVICES);
	if (l.monitor)
		(void)qemu_launch_chardev(&l, l.monitor);
	if (l.serial)
		(void)qemu_launch_chardev(&l, l.serial);
	for (unsigned i = 0; i < l.nr_chardevs; i++) {
		const struct qemu_chardev *c = &l.chardevs[i];

		FZ_ASSERT(c->id && qemu_launch_chardev(&l, c->id));
		if (c->path) {
			r = qemu_launch_fdset_fd(&l, c->path);
			FZ_ASSERT(r >= 0 || r == -ENOENT || r == -EINVAL);
		}
	}
	if (!l.probe && !l.standin) {
		err[0] = 0;
		if (config_validate(&l.cfg, &lim, err, sizeof(err)))
			FZ_ASSERT(fz_one_line(err, sizeof(err)));
		else
			FZ_ASSERT(l.cfg.nr_cpus >= 1 && l.cfg.nr_cpus <= VM_MAX_CPUS &&
				  l.cfg.mem_bytes % VM_MEM_ALIGN_BYTES == 0 && l.cfg.cmdline);
	}
	qemu_launch_free(&l);
out:
	fz_argv_free(&a);
	free(env);
	return 0;
}
