/*
 * Every command libvirt 9.0 sends to a running domain (start, runtime,
 * reconnect after a libvirtd restart: vmm/qemu/README.md §3-§5),
 * answered from the VM's state. Queries about things lagvisor does not
 * have (block devices, iothreads, jobs) answer with empty lists, which is
 * the truth for such a VM.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "vmm/qemu/qmp_commands.h"

#define QMP_CPU_TYPE "qemu64-x86_64-cpu"

static int backend_fail(struct qmp_error *err, const char *what, int r)
{
	return qmp_fail(err, "GenericError", "%s: %s", what, strerror(-r));
}

static int cmd_empty(struct qmp_conn *c, struct json_object *args,
		     struct json_object **ret, struct qmp_error *err)
{
	(void)c; (void)args; (void)ret; (void)err;
	return 0;
}

static int cmd_empty_list(struct qmp_conn *c, struct json_object *args,
			  struct json_object **ret, struct qmp_error *err)
{
	(void)c; (void)args; (void)err;
	*ret = json_object_new_array();
	return 0;
}

static int cmd_capabilities(struct qmp_conn *c, struct json_object *args,
			    struct json_object **ret, struct qmp_error *err)
{
	struct json_object *enable;

	(void)ret;
	if (args && json_object_object_get_ex(args, "enable", &enable) &&
	    json_object_array_length(enable) > 0)
		return qmp_fail(err, "GenericError", "Capability '%s' not available",
				json_object_get_string(json_object_array_get_idx(enable, 0)));
	c->negotiated = true;
	return 0;
}

static int cmd_query_version(struct qmp_conn *c, struct json_object *args,
			     struct json_object **ret, struct qmp_error *err)
{
	struct json_object *qemu = json_object_new_object();

	(void)c; (void)args; (void)err;
	*ret = json_object_new_object();
	json_object_object_add(qemu, "micro", json_object_new_int(QMP_QEMU_MICRO));
	json_object_object_add(qemu, "minor", json_object_new_int(QMP_QEMU_MINOR));
	json_object_object_add(qemu, "major", json_object_new_int(QMP_QEMU_MAJOR));
	json_object_object_add(*ret, "qemu", qemu);
	json_object_object_add(*ret, "package",
			       json_object_new_string("lagvisor-" LAGVISOR_VERSION));
	return 0;
}

static int cmd_query_status(struct qmp_conn *c, struct json_object *args,
			    struct json_object **ret, struct qmp_error *err)
{
	enum qmp_run_state s = c->ops->state(c->opaque);

	(void)args; (void)err;
	*ret = json_object_new_object();
	json_object_object_add(*ret, "status",
			       json_object_new_string(qmp_run_state_name(s)));
	json_object_object_add(*ret, "singlestep", json_object_new_boolean(false));
	json_object_object_add(*ret, "running",
			       json_object_new_boolean(s == QMP_STATE_RUNNING));
	return 0;
}

static int cmd_query_kvm(struct qmp_conn *c, struct json_object *args,
			 struct json_object **ret, struct qmp_error *err)
{
	(void)c; (void)args; (void)err;
	*ret = json_object_new_object();
	json_object_object_add(*ret, "enabled", json_object_new_boolean(true));
	json_object_object_add(*ret, "present", json_object_new_boolean(true));
	return 0;
}

static int cmd_query_name(struct qmp_conn *c, struct json_object *args,
			  struct json_object **ret, struct qmp_error *err)
{
	(void)args; (void)err;
	*ret = json_object_new_object();
	if (c->machine->name)
		json_object_object_add(*ret, "name",
				       json_object_new_string(c->machine->name));
	return 0;
}

static int cmd_query_uuid(struct qmp_conn *c, struct json_object *args,
			  struct json_object **ret, struct qmp_error *err)
{
	(void)args; (void)err;
	*ret = json_object_new_object();
	json_object_object_add(*ret, "UUID", json_object_new_string(
		c->machine->uuid ? c->machine->uuid : "00000000-0000-0000-0000-000000000000"));
	return 0;
}

static int cmd_query_chardev(struct qmp_conn *c, struct json_object *args,
			     struct json_object **ret, struct qmp_error *err)
{
	const struct qmp_machine *m = c->machine;

	(void)args; (void)err;
	*ret = json_object_new_array();
	for (unsigned i = 0; i < m->nr_chardevs; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "frontend-open", json_object_new_boolean(true));
		json_object_object_add(o, "filename",
				       json_object_new_string(m->chardevs[i].filename));
		json_object_object_add(o, "label", json_object_new_string(m->chardevs[i].label));
		json_object_array_add(*ret, o);
	}
	return 0;
}

/* Each vCPU is its own socket, as with libvirt's -smp N,sockets=N. */
static struct json_object *cpu_props(unsigned i)
{
	struct json_object *p = json_object_new_object();

	json_object_object_add(p, "core-id", json_object_new_int(0));
	json_object_object_add(p, "thread-id", json_object_new_int(0));
	json_object_object_add(p, "socket-id", json_object_new_int((int)i));
	return p;
}

static struct json_object *cpu_qom_path(unsigned i)
{
	char path[64];

	snprintf(path, sizeof(path), QMP_CPU_QOM_PATH, i);
	return json_object_new_string(path);
}

static int cmd_query_hotpluggable_cpus(struct qmp_conn *c, struct json_object *args,
				       struct json_object **ret, struct qmp_error *err)
{
	const struct qmp_machine *m = c->machine;

	(void)args; (void)err;
	*ret = json_object_new_array();
	/* QEMU lists them highest first; a slot for hotplug (-smp maxcpus)
	 * has no qom-path: its device_add then fails naming CPU hotplug. */
	for (unsigned i = m->nr_max_cpus > m->nr_cpus ? m->nr_max_cpus : m->nr_cpus; i-- > 0;) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "props", cpu_props(i));
		json_object_object_add(o, "vcpus-count", json_object_new_int(1));
		if (i < m->nr_cpus)
			json_object_object_add(o, "qom-path", cpu_qom_path(i));
		json_object_object_add(o, "type", json_object_new_string(QMP_CPU_TYPE));
		json_object_array_add(*ret, o);
	}
	return 0;
}

static int cmd_query_cpus_fast(struct qmp_conn *c, struct json_object *args,
			       struct json_object **ret, struct qmp_error *err)
{
	unsigned n = c->machine->nr_cpus;
	int *tids = calloc(n ? n : 1, sizeof(*tids));
	int r;

	(void)args;
	if (!tids)
		return backend_fail(err, "vCPU thread IDs", -ENOMEM);
	r = c->ops->vcpu_tids(c->opaque, tids, n);
	if (r) {
		free(tids);
		return backend_fail(err, "vCPU thread IDs", r);
	}
	*ret = json_object_new_array();
	for (unsigned i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "thread-id", json_object_new_int(tids[i]));
		json_object_object_add(o, "props", cpu_props(i));
		json_object_object_add(o, "qom-path", cpu_qom_path(i));
		json_object_object_add(o, "cpu-index", json_object_new_int((int)i));
		json_object_object_add(o, "target", json_object_new_string("x86_64"));
		json_object_array_add(*ret, o);
	}
	free(tids);
	return 0;
}

static const char *string_arg(struct json_object *args, const char *key)
{
	struct json_object *v;

	if (!args || !json_object_object_get_ex(args, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static struct json_object *qom_prop(const char *name, const char *type)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "type", json_object_new_string(type));
	return o;
}

/*
 * /machine/peripheral lists the -device ids (libvirt checks its aliases
 * against them); any other path has no properties worth reporting.
 */
static int cmd_qom_list(struct qmp_conn *c, struct json_object *args,
			struct json_object **ret, struct qmp_error *err)
{
	const struct qmp_machine *m = c->machine;
	const char *path = string_arg(args, "path");

	if (!path)
		return qmp_fail(err, "GenericError", "Parameter 'path' is missing");
	*ret = json_object_new_array();
	if (strcmp(path, "/machine/peripheral"))
		return 0;
	json_object_array_add(*ret, qom_prop("type", "string"));
	for (unsigned i = 0; i < m->nr_devices; i++) {
		char type[128];

		snprintf(type, sizeof(type), "child<%s>", m->devices[i].driver);
		json_object_array_add(*ret, qom_prop(m->devices[i].id, type));
	}
	return 0;
}

/* Only the CPU feature lists libvirt asks for at start: none missing. */
static int cmd_qom_get(struct qmp_conn *c, struct json_object *args,
		       struct json_object **ret, struct qmp_error *err)
{
	const char *prop = string_arg(args, "property");

	(void)c;
	if (!string_arg(args, "path") || !prop)
		return qmp_fail(err, "GenericError", "Parameters 'path' and 'property' "
				"are required");
	if (strcmp(prop, "unavailable-features") && strcmp(prop, "filtered-features"))
		return qmp_fail(err, "GenericError", "Property '%.100s' not found", prop);
	*ret = json_object_new_array();
	return 0;
}

static int cmd_query_balloon(struct qmp_conn *c, struct json_object *args,
			     struct json_object **ret, struct qmp_error *err)
{
	(void)args; (void)err;
	*ret = json_object_new_object();
	json_object_object_add(*ret, "actual",
			       json_object_new_int64((int64_t)c->machine->mem_bytes));
	return 0;
}

static int cmd_stop(struct qmp_conn *c, struct json_object *args,
		    struct json_object **ret, struct qmp_error *err)
{
	bool was_running = c->ops->state(c->opaque) == QMP_STATE_RUNNING;
	int r = c->ops->stop(c->opaque);

	(void)args; (void)ret;
	if (r)
		return backend_fail(err, "stop", r);
	if (was_running)
		qmp_conn_event(c, "STOP", NULL);
	return 0;
}

static int cmd_cont(struct qmp_conn *c, struct json_object *args,
		    struct json_object **ret, struct qmp_error *err)
{
	enum qmp_run_state s = c->ops->state(c->opaque);
	int r;

	(void)args; (void)ret;
	if (s == QMP_STATE_RUNNING)
		return 0;
	if (s == QMP_STATE_SHUTDOWN || s == QMP_STATE_INTERNAL_ERROR)
		return qmp_fail(err, "GenericError", "Resetting the Virtual Machine is "
				"required");
	r = c->ops->cont(c->opaque);
	if (r)
		return backend_fail(err, "cont", r);
	qmp_conn_event(c, "RESUME", NULL);
	return 0;
}

static int cmd_system_powerdown(struct qmp_conn *c, struct json_object *args,
				struct json_object **ret, struct qmp_error *err)
{
	int r = c->ops->powerdown(c->opaque);

	(void)args; (void)ret;
	if (r)
		return backend_fail(err, "system_powerdown", r);
	qmp_conn_event(c, "POWERDOWN", NULL);
	return 0;
}

static struct json_object *shutdown_data(const char *reason)
{
	struct json_object *d = json_object_new_object();

	json_object_object_add(d, "guest", json_object_new_boolean(false));
	json_object_object_add(d, "reason", json_object_new_string(reason));
	return d;
}

static int cmd_system_reset(struct qmp_conn *c, struct json_object *args,
			    struct json_object **ret, struct qmp_error *err)
{
	int r = c->ops->reset(c->opaque);

	(void)args; (void)ret;
	if (r)
		return backend_fail(err, "system_reset", r);
	qmp_conn_event(c, "RESET", shutdown_data("host-qmp-system-reset"));
	return 0;
}

/* qmp.c calls ops->quit after this reply is queued. */
static int cmd_quit(struct qmp_conn *c, struct json_object *args,
		    struct json_object **ret, struct qmp_error *err)
{
	(void)args; (void)ret; (void)err;
	qmp_conn_event(c, "SHUTDOWN", shutdown_data("host-qmp-quit"));
	return 0;
}

static int cmd_query_commands(struct qmp_conn *c, struct json_object *args,
			      struct json_object **ret, struct qmp_error *err);

static const struct qmp_command qmp_command_table[] = {
	{ "qmp_capabilities", cmd_capabilities },
	{ "query-version", cmd_query_version },
	{ "query-commands", cmd_query_commands },
	{ "query-status", cmd_query_status },
	{ "query-kvm", cmd_query_kvm },
	{ "query-name", cmd_query_name },
	{ "query-uuid", cmd_query_uuid },
	{ "query-chardev", cmd_query_chardev },
	{ "query-hotpluggable-cpus", cmd_query_hotpluggable_cpus },
	{ "query-cpus-fast", cmd_query_cpus_fast },
	{ "qom-list", cmd_qom_list },
	{ "qom-get", cmd_qom_get },
	{ "query-migrate-capabilities", cmd_empty_list },
	{ "migrate-set-capabilities", cmd_empty },
	{ "query-iothreads", cmd_empty_list },
	{ "query-named-block-nodes", cmd_empty_list },
	{ "query-block", cmd_empty_list },
	{ "query-jobs", cmd_empty_list },
	{ "balloon", cmd_empty },
	{ "query-balloon", cmd_query_balloon },
	{ "stop", cmd_stop },
	{ "cont", cmd_cont },
	{ "system_powerdown", cmd_system_powerdown },
	{ "system_reset", cmd_system_reset },
	{ "quit", cmd_quit },
};

static void add_names(struct json_object *list, const struct qmp_command *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "name", json_object_new_string(t[i].name));
		json_object_array_add(list, o);
	}
}

static int cmd_query_commands(struct qmp_conn *c, struct json_object *args,
			      struct json_object **ret, struct qmp_error *err)
{
	const struct qmp_command *stats;
	size_t n;

	(void)c; (void)args; (void)err;
	*ret = json_object_new_array();
	add_names(*ret, qmp_command_table, ARRAY_SIZE(qmp_command_table));
	stats = qmp_stats_commands(&n);
	add_names(*ret, stats, n);
	return 0;
}

const struct qmp_command *qmp_command_find(const char *name)
{
	const struct qmp_command *stats;
	size_t n;

	for (size_t i = 0; i < ARRAY_SIZE(qmp_command_table); i++)
		if (!strcmp(qmp_command_table[i].name, name))
			return &qmp_command_table[i];
	stats = qmp_stats_commands(&n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(stats[i].name, name))
			return &stats[i];
	return NULL;
}

const struct qmp_command *qmp_commands(size_t *n)
{
	*n = ARRAY_SIZE(qmp_command_table);
	return qmp_command_table;
}
