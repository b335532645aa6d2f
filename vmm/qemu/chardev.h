/*
 * Host ends of the guest's serial port for the QEMU front: a pty (what
 * libvirt's <serial type='pty'> asks for; `virsh console` opens the slave
 * path reported by query-chardev) or an inherited fd (-add-fd, the pipe to
 * virtlogd for <log file=...>). The result is an output fd and an input fd
 * (-1: none) for the VM's console.
 */
#ifndef LAGVISOR_VMM_QEMU_CHARDEV_H
#define LAGVISOR_VMM_QEMU_CHARDEV_H

#include <limits.h>
#include <stddef.h>

#include "vmm/qemu/qemu_cmdline.h"

struct chardev_host {
	int out_fd;                 /* -1: output dropped */
	int in_fd;                  /* -1: no input */
	int pty_master;             /* -1 unless a pty */
	int pty_slave;              /* held open, see chardev_open_pty */
	char filename[PATH_MAX + 8];/* query-chardev "filename" */
};

/*
 * Open the host end of chardev `c` of launch `l`. 0, or -errno with one
 * line in err. The pty is raw and non-blocking; output to it is dropped
 * while nobody reads it (see chardev.c).
 */
int chardev_open(struct chardev_host *h, const struct qemu_launch *l,
		 const struct qemu_chardev *c, char *err, size_t errlen);

/* Open a raw pty: master fd into *master, slave path into path. */
int chardev_open_pty(int *master, int *slave, char *path, size_t len);

void chardev_close(struct chardev_host *h);

#endif
