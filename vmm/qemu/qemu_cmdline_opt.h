/*
 * Internal to the QEMU command-line parser: helpers shared by its files
 * and the handlers of the chardev/monitor/serial/device options
 * (qemu_cmdline_chr.c).
 */
#ifndef LAGVISOR_VMM_QEMU_CMDLINE_OPT_H
#define LAGVISOR_VMM_QEMU_CMDLINE_OPT_H

#include <stddef.h>

#include "vmm/qemu/qemu_cmdline.h"
#include "vmm/qemu/qemu_opts.h"

/* Replace *slot with a copy of s (QEMU: the last occurrence wins). */
int qemu_cmdline_set_str(char **slot, const char *s, char *err, size_t errlen);

/* Parse `arg` as options; on failure prefix the message with -opt. */
int qemu_cmdline_opts(struct qemu_opts *o, const char *opt, const char *arg,
		      const char *implied, char *err, size_t errlen);

/* Option handlers: 0 or -errno with one line in err. */
int qemu_opt_chardev(struct qemu_launch *l, const char *arg, char *err, size_t errlen);
int qemu_opt_mon(struct qemu_launch *l, const char *arg, char *err, size_t errlen);
int qemu_opt_qmp(struct qemu_launch *l, const char *arg, char *err, size_t errlen);
int qemu_opt_serial(struct qemu_launch *l, const char *arg, char *err, size_t errlen);
int qemu_opt_device(struct qemu_launch *l, const char *arg, char *err, size_t errlen);
int qemu_opt_add_fd(struct qemu_launch *l, const char *arg, char *err, size_t errlen);

#endif
