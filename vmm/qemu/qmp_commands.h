/*
 * The QMP command table (qmp.c dispatches, qmp_commands.c implements).
 * Internal to vmm/qemu.
 */
#ifndef LAGVISOR_VMM_QEMU_QMP_COMMANDS_H
#define LAGVISOR_VMM_QEMU_QMP_COMMANDS_H

#include <stddef.h>

#include "vmm/qemu/qmp.h"

struct qmp_error {
	const char *cls;               /* "GenericError", "CommandNotFound", ... */
	char desc[256];
};

struct qmp_command {
	const char *name;
	/*
	 * args: the request's "arguments" (an object, or NULL). On success
	 * return 0 and set *ret (NULL means {}); on failure return -1 with
	 * err filled.
	 */
	int (*fn)(struct qmp_conn *c, struct json_object *args, struct json_object **ret,
		  struct qmp_error *err);
};

const struct qmp_command *qmp_command_find(const char *name);

/* The whole table, for query-commands. */
const struct qmp_command *qmp_commands(size_t *n);

/* The statistics queries of virsh domstats (qmp_stats.c). */
const struct qmp_command *qmp_stats_commands(size_t *n);

/* A vCPU's QOM path, as query-cpus-fast and query-stats name it. */
#define QMP_CPU_QOM_PATH "/machine/unattached/device[%u]"

/*
 * The "kvm" provider (qmp_kvm_stats.c), appended to list: query-stats'
 * entries for the VM or each vCPU whose path is in vcpus (NULL: every
 * one), with the statistics named in names (NULL: all); and
 * query-stats-schemas' entries for both targets.
 */
void qmp_kvm_stats_values(struct qmp_conn *c, bool vcpu_target, struct json_object *names,
			  struct json_object *vcpus, struct json_object *list);
void qmp_kvm_stats_schemas(struct qmp_conn *c, struct json_object *list);

/* For a QEMU command lagvisor lacks, the missing feature in a few words;
 * NULL for a name QEMU does not have either (qmp_unsupported.c). */
const char *qmp_unsupported_why(const char *name);

/* Fill err with class and a printf-style description; returns -1. */
int qmp_fail(struct qmp_error *err, const char *cls, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
