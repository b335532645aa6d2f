#include "vmm/qemu/chardev.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "common/log.h"

/*
 * The slave stays open in lagvisor for the pty's whole life: with no slave
 * open, the master reports a hang-up to epoll forever and reads fail with
 * EIO, and the raw mode set on the slave would be lost at the last close.
 * Holding it costs nothing: lagvisor never reads it, so whoever opens the
 * path (libvirtd for `virsh console`) gets the output, including what was
 * queued before it came (up to the tty buffer; beyond that, output is
 * dropped rather than stalling the guest).
 */
int chardev_open_pty(int *master, int *slave, char *path, size_t len)
{
	struct termios t;
	int m, s, e;

	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (m < 0)
		return -errno;
	if (grantpt(m) || unlockpt(m) || ptsname_r(m, path, len))
		goto fail;
	s = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (s < 0)
		goto fail;
	if (tcgetattr(s, &t) == 0) {
		cfmakeraw(&t);
		if (tcsetattr(s, TCSANOW, &t))
			log_warn("pty %s: cannot set raw mode: %s", path, strerror(errno));
	}
	*master = m;
	*slave = s;
	return 0;
fail:
	e = errno;
	close(m);
	return -e;
}

int chardev_open(struct chardev_host *h, const struct qemu_launch *l,
		 const struct qemu_chardev *c, char *err, size_t errlen)
{
	int r, fd;

	memset(h, 0, sizeof(*h));
	h->out_fd = h->in_fd = h->pty_master = h->pty_slave = -1;
	switch (c->kind) {
	case QEMU_CHR_PTY: {
		char path[PATH_MAX];

		r = chardev_open_pty(&h->pty_master, &h->pty_slave, path, sizeof(path));
		if (r) {
			snprintf(err, errlen, "chardev %s: cannot open a pty: %s", c->id,
				 strerror(-r));
			return r;
		}
		h->out_fd = h->in_fd = h->pty_master;
		snprintf(h->filename, sizeof(h->filename), "pty:%s", path);
		/* libvirt and users look for this line, as QEMU prints it. */
		fprintf(stderr, "char device redirected to %s (label %s)\n", path, c->id);
		return 0;
	}
	case QEMU_CHR_FILE:
		fd = qemu_launch_fdset_fd(l, c->path);
		if (fd == -ENOENT) {
			snprintf(err, errlen, "chardev %s: %s: no -add-fd for that set", c->id,
				 c->path);
			return -EINVAL;
		}
		if (fd >= 0) {
			/* An inherited fd (libvirt's pipe to virtlogd): ours now. */
			if (fcntl(fd, F_SETFD, FD_CLOEXEC)) {
				r = -errno;
				snprintf(err, errlen, "chardev %s: fd %d from -add-fd: %s", c->id,
					 fd, strerror(errno));
				return r;
			}
			h->out_fd = fd;
		} else {
			h->out_fd = open(c->path, O_WRONLY | O_CREAT | O_CLOEXEC |
					 (c->append ? O_APPEND : O_TRUNC), 0644);
			if (h->out_fd < 0) {
				r = -errno;
				snprintf(err, errlen, "chardev %s: %s: %s", c->id, c->path,
					 strerror(errno));
				return r;
			}
		}
		snprintf(h->filename, sizeof(h->filename), "file");
		return 0;
	case QEMU_CHR_STDIO:
		h->out_fd = STDOUT_FILENO;
		h->in_fd = STDIN_FILENO;
		snprintf(h->filename, sizeof(h->filename), "stdio");
		return 0;
	case QEMU_CHR_NULL:
	case QEMU_CHR_OTHER:
		snprintf(h->filename, sizeof(h->filename), "%s", c->backend);
		return 0;
	case QEMU_CHR_SOCKET:
		snprintf(err, errlen, "chardev %s: a socket as the serial port is not "
			 "supported", c->id);
		return -ENOTSUP;
	}
	return -EINVAL;
}

void chardev_close(struct chardev_host *h)
{
	if (h->pty_slave >= 0)
		close(h->pty_slave);
	if (h->pty_master >= 0)
		close(h->pty_master);
	else if (h->out_fd > STDERR_FILENO)
		close(h->out_fd);
	h->out_fd = h->in_fd = h->pty_master = h->pty_slave = -1;
}
