/*
 * The options that name host endpoints: -chardev, -mon, -qmp, -serial,
 * -device (only isa-serial is acted on) and -add-fd.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "common/log.h"
#include "vmm/qemu/qemu_cmdline_opt.h"

static const struct {
	const char *name;
	enum qemu_chr_kind kind;
} chr_kinds[] = {
	{ "socket", QEMU_CHR_SOCKET }, { "pty", QEMU_CHR_PTY },
	{ "file", QEMU_CHR_FILE }, { "null", QEMU_CHR_NULL },
	{ "stdio", QEMU_CHR_STDIO },
};

static int add_chardev(struct qemu_launch *l, const struct qemu_opts *o,
		       const char *arg, char *err, size_t errlen)
{
	const char *id = qemu_opts_get(o, "id");
	const char *backend = qemu_opts_get(o, "backend");
	struct qemu_chardev *c;
	uint64_t fd;
	int r;

	if (!id || !backend) {
		snprintf(err, errlen, "-chardev %s: needs a backend and id=", arg);
		return -EINVAL;
	}
	if (qemu_launch_chardev(l, id)) {
		snprintf(err, errlen, "-chardev: duplicate id '%s'", id);
		return -EINVAL;
	}
	if (l->nr_chardevs == QEMU_MAX_CHARDEVS) {
		snprintf(err, errlen, "-chardev %s: more than %u chardevs", id,
			 QEMU_MAX_CHARDEVS);
		return -E2BIG;
	}
	c = &l->chardevs[l->nr_chardevs++];
	c->fd = -1;
	c->kind = QEMU_CHR_OTHER;
	for (size_t i = 0; i < ARRAY_SIZE(chr_kinds); i++)
		if (!strcmp(backend, chr_kinds[i].name))
			c->kind = chr_kinds[i].kind;
	if (qemu_cmdline_set_str(&c->id, id, err, errlen) || qemu_cmdline_set_str(&c->backend, backend, err, errlen))
		return -ENOMEM;
	if (qemu_opts_get(o, "path") && qemu_cmdline_set_str(&c->path, qemu_opts_get(o, "path"), err,
						 errlen))
		return -ENOMEM;
	r = qemu_opts_get_uint(o, "fd", INT_MAX, &fd);
	if (r == -EINVAL) {
		snprintf(err, errlen, "-chardev %s: fd=%s is not an fd number", id,
			 qemu_opts_get(o, "fd"));
		return r;
	}
	if (!r)
		c->fd = (int)fd;
	if (qemu_opts_get_bool(o, "server", false, &c->server) ||
	    qemu_opts_get_bool(o, "append", false, &c->append)) {
		snprintf(err, errlen, "-chardev %s: server= and append= take on|off", id);
		return -EINVAL;
	}
	if (c->kind == QEMU_CHR_SOCKET && c->fd < 0 && !c->path) {
		snprintf(err, errlen, "-chardev %s: a socket needs fd= or path=", id);
		return -EINVAL;
	}
	if (c->kind == QEMU_CHR_FILE && !c->path) {
		snprintf(err, errlen, "-chardev %s: a file needs path=", id);
		return -EINVAL;
	}
	if (c->kind == QEMU_CHR_OTHER)
		log_warn("-chardev %s: backend '%s' is not supported; its output is "
			 "dropped", id, backend);
	return 0;
}

int qemu_opt_chardev(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	struct qemu_opts o;
	int r = qemu_cmdline_opts(&o, "chardev", arg, "backend", err, errlen);

	if (!r)
		r = add_chardev(l, &o, arg, err, errlen);
	qemu_opts_free(&o);
	return r;
}

/* A chardev made up for a shorthand (-qmp, -serial): id + kv string. */
static int add_implicit(struct qemu_launch *l, const char *kv, char *err,
			size_t errlen)
{
	struct qemu_opts o;
	int r = qemu_cmdline_opts(&o, "chardev", kv, "backend", err, errlen);

	if (!r)
		r = add_chardev(l, &o, kv, err, errlen);
	qemu_opts_free(&o);
	return r;
}

/* Append `s` to kv with ',' doubled (QEMU's escape), bounded by size. */
static void kv_escaped(char *kv, size_t size, const char *s)
{
	size_t n = strlen(kv);

	for (; *s && n + 2 < size; s++) {
		kv[n++] = *s;
		if (*s == ',')
			kv[n++] = ',';
	}
	kv[n] = '\0';
}

/* -qmp unix:PATH[,server=on,wait=off]: a monitor socket lagvisor binds. */
int qemu_opt_qmp(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	char kv[PATH_MAX + 64];
	int r;

	if (strncmp(arg, "unix:", 5)) {
		log_warn("-qmp %s: only unix:PATH is supported, ignored", arg);
		return 0;
	}
	const char *end = strchr(arg + 5, ',');
	char path[PATH_MAX];

	/* QEMU splits -qmp at the first ',' (server=on,wait=off follow). */
	snprintf(path, sizeof(path), "%.*s", end ? (int)(end - arg - 5) : PATH_MAX - 1,
		 arg + 5);
	snprintf(kv, sizeof(kv), "socket,id=compat_monitor%u,path=", l->nr_chardevs);
	kv_escaped(kv, sizeof(kv), path);
	r = add_implicit(l, kv, err, errlen);
	if (r)
		return r;
	l->chardevs[l->nr_chardevs - 1].server = true;
	return qemu_cmdline_set_str(&l->monitor, l->chardevs[l->nr_chardevs - 1].id, err, errlen);
}

int qemu_opt_mon(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	struct qemu_opts o;
	const char *chr, *mode;
	int r = qemu_cmdline_opts(&o, "mon", arg, "chardev", err, errlen);

	if (r)
		goto out;
	chr = qemu_opts_get(&o, "chardev");
	mode = qemu_opts_get(&o, "mode");
	if (!chr) {
		snprintf(err, errlen, "-mon %s: needs chardev=", arg);
		r = -EINVAL;
	} else if (mode && strcmp(mode, "control")) {
		log_warn("-mon %s: only mode=control (QMP) is supported, ignored", arg);
	} else if (l->monitor) {
		log_warn("-mon %s: only one QMP monitor is supported, ignored", arg);
	} else {
		r = qemu_cmdline_set_str(&l->monitor, chr, err, errlen);
	}
out:
	qemu_opts_free(&o);
	return r;
}

static int set_serial(struct qemu_launch *l, const char *id, char *err, size_t errlen)
{
	if (l->serial) {
		log_warn("serial port for chardev '%s': only one serial port is "
			 "supported, ignored", id);
		return 0;
	}
	return qemu_cmdline_set_str(&l->serial, id, err, errlen);
}

/* -serial chardev:ID | pty | stdio | file:PATH | null | none */
int qemu_opt_serial(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	char kv[PATH_MAX + 64];
	int r;

	if (!strncmp(arg, "chardev:", 8))
		return set_serial(l, arg + 8, err, errlen);
	if (!strcmp(arg, "none"))
		return 0;
	if (!strcmp(arg, "pty") || !strcmp(arg, "stdio") || !strcmp(arg, "null"))
		snprintf(kv, sizeof(kv), "%s,id=serial%u", arg, l->nr_chardevs);
	else if (!strncmp(arg, "file:", 5)) {
		snprintf(kv, sizeof(kv), "file,id=serial%u,path=", l->nr_chardevs);
		kv_escaped(kv, sizeof(kv), arg + 5);
	} else {
		log_warn("-serial %s: not supported, ignored", arg);
		return 0;
	}
	r = add_implicit(l, kv, err, errlen);
	if (!r)
		r = set_serial(l, l->chardevs[l->nr_chardevs - 1].id, err, errlen);
	return r;
}

int qemu_opt_device(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	struct qemu_opts o;
	const char *driver, *id;
	int r = qemu_cmdline_opts(&o, "device", arg, "driver", err, errlen);

	if (r)
		goto out;
	driver = qemu_opts_get(&o, "driver");
	id = qemu_opts_get(&o, "id");
	if (!driver) {
		snprintf(err, errlen, "-device %s: needs a driver", arg);
		r = -EINVAL;
		goto out;
	}
	if (!strcmp(driver, "isa-serial")) {
		if (qemu_opts_get(&o, "chardev"))
			r = set_serial(l, qemu_opts_get(&o, "chardev"), err, errlen);
	} else {
		log_warn("-device %s: lagvisor has no such device, ignored", driver);
		l->nr_ignored++;
	}
	if (!r && id) {
		struct qemu_device *d;

		if (l->nr_devices == QEMU_MAX_DEVICES) {
			log_warn("-device %s: more than %u devices with an id", id,
				 QEMU_MAX_DEVICES);
			goto out;
		}
		d = &l->devices[l->nr_devices++];
		if (qemu_cmdline_set_str(&d->id, id, err, errlen) || qemu_cmdline_set_str(&d->driver, driver, err, errlen))
			r = -ENOMEM;
	}
out:
	qemu_opts_free(&o);
	return r;
}

int qemu_opt_add_fd(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	struct qemu_opts o;
	uint64_t set, fd;
	int r = qemu_cmdline_opts(&o, "add-fd", arg, NULL, err, errlen);

	if (r)
		goto out;
	if (qemu_opts_get_uint(&o, "set", INT_MAX, &set) ||
	    qemu_opts_get_uint(&o, "fd", INT_MAX, &fd)) {
		snprintf(err, errlen, "-add-fd %s: needs set=N,fd=N", arg);
		r = -EINVAL;
	} else if (l->nr_fds == QEMU_MAX_FDS) {
		snprintf(err, errlen, "-add-fd %s: more than %u fds", arg, QEMU_MAX_FDS);
		r = -E2BIG;
	} else {
		l->fds[l->nr_fds++] = (struct qemu_fdset_fd){ (unsigned)set, (int)fd };
	}
out:
	qemu_opts_free(&o);
	return r;
}

const struct qemu_chardev *qemu_launch_chardev(const struct qemu_launch *l,
					       const char *id)
{
	for (unsigned i = 0; i < l->nr_chardevs; i++)
		if (!strcmp(l->chardevs[i].id, id))
			return &l->chardevs[i];
	return NULL;
}

int qemu_launch_fdset_fd(const struct qemu_launch *l, const char *path)
{
	static const char prefix[] = "/dev/fdset/";
	uint64_t set;

	if (strncmp(path, prefix, sizeof(prefix) - 1) ||
	    qemu_parse_uint(path + sizeof(prefix) - 1, INT_MAX, &set))
		return -EINVAL;
	for (unsigned i = 0; i < l->nr_fds; i++)
		if (l->fds[i].set == set)
			return l->fds[i].fd;
	return -ENOENT;
}

