#include "vmm/qemu/cgroup_weight.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vmm/qemu/qemu_opts.h"

#define CGROUP_WEIGHT_MAX (1u << 20)     /* lagvisor's --weight bound */

static int read_uint(const char *path, uint64_t *v)
{
	char buf[32];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -ENOENT;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return qemu_parse_uint(buf, UINT32_MAX, v);
}

/* dir/<path>[/..]/file where a trailing "/emulator" is dropped. */
static int cg_file(char *out, size_t len, const char *dir, const char *path,
		   const char *file)
{
	size_t plen = strlen(path);
	static const char emu[] = "/emulator";

	while (plen && path[plen - 1] == '/')
		plen--;
	if (plen >= sizeof(emu) - 1 &&
	    !memcmp(path + plen - (sizeof(emu) - 1), emu, sizeof(emu) - 1))
		plen -= sizeof(emu) - 1;
	return snprintf(out, len, "%s%.*s/%s", dir, (int)plen, path, file) >= (int)len ?
		-ENAMETOOLONG : 0;
}

static int weight_v2(const char *root, const char *path, uint32_t *weight)
{
	char file[PATH_MAX];
	uint64_t w;
	int r = cg_file(file, sizeof(file), root, path, "cpu.weight");

	if (!r)
		r = read_uint(file, &w);
	if (r)
		return r;
	if (w < 1 || w > 10000)
		return -EINVAL;
	w = w * 1024 / 100;
	*weight = (uint32_t)(w < 1 ? 1 : w > CGROUP_WEIGHT_MAX ? CGROUP_WEIGHT_MAX : w);
	return 0;
}

/* v1: the cpu controller is mounted as "cpu,cpuacct" or "cpu". */
static int weight_v1(const char *root, const char *ctrls, const char *path,
		     uint32_t *weight)
{
	const char *const dirs[] = { ctrls, "cpu" };
	uint64_t s;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char dir[PATH_MAX], file[PATH_MAX];
		int r;

		snprintf(dir, sizeof(dir), "%s/%s", root, dirs[i]);
		if (cg_file(file, sizeof(file), dir, path, "cpu.shares"))
			continue;
		r = read_uint(file, &s);
		if (r == -ENOENT)
			continue;
		if (r || s < 2)
			return -EINVAL;
		*weight = (uint32_t)(s > CGROUP_WEIGHT_MAX ? CGROUP_WEIGHT_MAX : s);
		return 0;
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

int cgroup_cpu_weight(const char *proc_cgroup, const char *root, uint32_t *weight)
{
	const char *line = proc_cgroup;
	int r = -ENOENT;

	/* Lines are "ID:controllers:path"; v2 is "0::path". v1's cpu first. */
	for (int pass = 0; pass < 2 && r == -ENOENT; pass++) {
		for (line = proc_cgroup; *line; ) {
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
				if (pass == 0 && has_cpu_controller(c1 + 1, clen))
					r = weight_v1(root, ctrls, path, weight);
				else if (pass == 1 && clen == 0)
					r = weight_v2(root, path, weight);
				if (r != -ENOENT)
					return r;
			}
			line += len + (end ? 1 : 0);
		}
	}
	return r;
}
