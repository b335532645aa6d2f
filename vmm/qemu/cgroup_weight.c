#include "vmm/qemu/cgroup_weight.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vmm/qemu/qemu_opts.h"

#define CGROUP_WEIGHT_MAX (1u << 20)     /* lagvisor's --weight bound */

int cgroup_weight_parse(const char *text, bool v2, uint32_t *weight)
{
	char buf[32];
	uint64_t v;

	snprintf(buf, sizeof(buf), "%s", text);
	buf[strcspn(buf, "\n")] = '\0';
	if (qemu_parse_uint(buf, UINT32_MAX, &v))
		return -EINVAL;
	if (v2) {
		if (v < 1 || v > 10000)
			return -EINVAL;
		v = v * 1024 / 100;
	} else if (v < 2) {
		return -EINVAL;
	}
	*weight = (uint32_t)(v < 1 ? 1 : v > CGROUP_WEIGHT_MAX ? CGROUP_WEIGHT_MAX : v);
	return 0;
}

/* plen less a trailing component `tail` ("/name") of path, if it has it. */
static size_t drop_tail(const char *path, size_t plen, const char *tail)
{
	size_t tlen = strlen(tail);

	return plen >= tlen && !memcmp(path + plen - tlen, tail, tlen) ? plen - tlen : plen;
}

/*
 * dir/<domain cgroup>/file, 0 when that file exists. The process is in
 * the domain cgroup's "emulator" child; under systemd that is inside
 * libvirt's nested "libvirt" group of the machine scope
 * (machine.slice/machine-qemu...scope/libvirt/emulator), and libvirt puts
 * the shares on the scope itself (the nested group is for quotas).
 */
static int cg_file(char *out, size_t len, const char *dir, const char *path,
		   const char *file)
{
	size_t plen = strlen(path);

	while (plen && path[plen - 1] == '/')
		plen--;
	plen = drop_tail(path, drop_tail(path, plen, "/emulator"), "/libvirt");
	if (snprintf(out, len, "%s%.*s/%s", dir, (int)plen, path, file) >= (int)len)
		return -ENAMETOOLONG;
	return access(out, F_OK) ? -ENOENT : 0;
}

/* v1: the cpu controller is mounted as "cpu,cpuacct" or "cpu". */
static int file_v1(const char *root, const char *ctrls, const char *path,
		   struct cgroup_weight_file *out)
{
	const char *const dirs[] = { ctrls, "cpu" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s/%s", root, dirs[i]);
		if (!cg_file(out->path, sizeof(out->path), dir, path, "cpu.shares")) {
			out->v2 = false;
			return 0;
		}
	}
	return -ENOENT;
}

static bool has_cpu_controller(const char *list, size_t len)
{
	while (len) {
		const char *comma = memchr(list, ',', len);
		size_t n = comma ? (size_t)(comma - list) : len;

		if (n == 3 && !memcmp(list, "cpu", 3))
			return true;
		if (!comma)
			break;
		len -= n + 1;
		list = comma + 1;
	}
	return false;
}

int cgroup_weight_find(const char *proc_cgroup, const char *root,
		       struct cgroup_weight_file *out)
{
	/* Lines are "ID:controllers:path"; v2 is "0::path". v1's cpu first. */
	for (int pass = 0; pass < 2; pass++) {
		for (const char *line = proc_cgroup; *line; ) {
			const char *end = strchr(line, '\n');
			size_t len = end ? (size_t)(end - line) : strlen(line);
			const char *c1 = memchr(line, ':', len);
			const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;

			if (c2) {
				char ctrls[128], path[PATH_MAX];
				size_t clen = (size_t)(c2 - c1 - 1);

				snprintf(ctrls, sizeof(ctrls), "%.*s", (int)clen, c1 + 1);
				snprintf(path, sizeof(path), "%.*s",
					 (int)(len - (size_t)(c2 + 1 - line)), c2 + 1);
				if (pass == 0 && has_cpu_controller(c1 + 1, clen) &&
				    !file_v1(root, ctrls, path, out))
					return 0;
				if (pass == 1 && clen == 0 &&
				    !cg_file(out->path, sizeof(out->path), root, path, "cpu.weight")) {
					out->v2 = true;
					return 0;
				}
			}
			line += len + (end ? 1 : 0);
		}
	}
	return -ENOENT;
}

int cgroup_cpu_weight(const char *proc_cgroup, const char *root, uint32_t *weight)
{
	struct cgroup_weight_file file;
	char buf[32];
	FILE *f;
	size_t n;
	int r = cgroup_weight_find(proc_cgroup, root, &file);

	if (r)
		return r;
	f = fopen(file.path, "re");
	if (!f)
		return -ENOENT;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return cgroup_weight_parse(buf, file.v2, weight);
}
