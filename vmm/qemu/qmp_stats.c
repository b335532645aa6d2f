/*
 * The statistics queries of `virsh domstats` (every group, libvirt 9.0):
 * query-stats (vcpu halt polling for cpu.haltpoll, every vcpu and vm
 * statistic) and query-stats-schemas, answered from KVM's own statistics
 * as QEMU answers them (qmp_kvm_stats.c), and, as QEMU 7.2 answers for a VM
 * without block devices, query-blockstats (with and without query-nodes)
 * and query-dirty-rate (a measurement never started). Arguments are
 * checked as QEMU's schema checks them, so that a mistake is not answered
 * as a success.
 */
#include <json-c/json.h>
#include <string.h>

#include "common/compiler.h"
#include "vmm/qemu/qmp_commands.h"

/* QEMU 7.2's StatsTarget and StatsProvider enumerations. */
static const char *const stats_targets[] = { "vm", "vcpu" };
static const char *const stats_providers[] = { "kvm" };

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

/* Every member of args is one of the names in allowed. */
static int only_args(struct json_object *args, const char *const *allowed, size_t n,
		     struct qmp_error *err)
{
	if (!args)
		return 0;
	json_object_object_foreach(args, key, val) {
		(void)val;
		if (!in_list(key, allowed, n))
			return qmp_fail(err, "GenericError", "Parameter '%.100s' is unexpected",
					key);
	}
	return 0;
}

static int enum_arg(struct json_object *v, const char *name, const char *const *list,
		    size_t n, struct qmp_error *err)
{
	if (!json_object_is_type(v, json_type_string))
		return qmp_fail(err, "GenericError", "Invalid parameter type for '%s', "
				"expected: string", name);
	if (!in_list(json_object_get_string(v), list, n))
		return qmp_fail(err, "GenericError", "Parameter '%s' does not accept value "
				"'%.100s'", name, json_object_get_string(v));
	return 0;
}

static int list_arg(struct json_object *args, const char *name, struct json_object **out,
		    struct qmp_error *err)
{
	*out = NULL;
	if (!args || !json_object_object_get_ex(args, name, out))
		return 0;
	if (!json_object_is_type(*out, json_type_array))
		return qmp_fail(err, "GenericError", "Invalid parameter type for '%s', "
				"expected: array", name);
	return 0;
}

/* providers: [{"provider": "kvm", "names": [...]}, ...]; *names: the
 * first entry's names (NULL: all). */
static int check_providers(struct json_object *providers, struct json_object **names,
			   struct qmp_error *err)
{
	static const char *const keys[] = { "provider", "names" };

	for (size_t i = 0; providers && i < json_object_array_length(providers); i++) {
		struct json_object *p = json_object_array_get_idx(providers, i), *v, *list;

		if (!json_object_is_type(p, json_type_object))
			return qmp_fail(err, "GenericError", "Invalid parameter type for "
					"'providers[%zu]', expected: object", i);
		if (only_args(p, keys, ARRAY_SIZE(keys), err))
			return -1;
		if (!json_object_object_get_ex(p, "provider", &v))
			return qmp_fail(err, "GenericError", "Parameter 'provider' is missing");
		if (enum_arg(v, "provider", stats_providers, ARRAY_SIZE(stats_providers), err) ||
		    list_arg(p, "names", &list, err))
			return -1;
		if (i == 0)
			*names = list;
	}
	return 0;
}

static int cmd_query_stats(struct qmp_conn *c, struct json_object *args,
			   struct json_object **ret, struct qmp_error *err)
{
	static const char *const keys[] = { "target", "providers", "vcpus" };
	struct json_object *target, *providers, *vcpus, *names = NULL;

	if (only_args(args, keys, ARRAY_SIZE(keys), err))
		return -1;
	if (!args || !json_object_object_get_ex(args, "target", &target))
		return qmp_fail(err, "GenericError", "Parameter 'target' is missing");
	if (enum_arg(target, "target", stats_targets, ARRAY_SIZE(stats_targets), err) ||
	    list_arg(args, "providers", &providers, err) ||
	    check_providers(providers, &names, err) || list_arg(args, "vcpus", &vcpus, err))
		return -1;
	*ret = json_object_new_array();
	/* An empty provider list asks for no provider. */
	if (!providers || json_object_array_length(providers))
		qmp_kvm_stats_values(c, !strcmp(json_object_get_string(target), "vcpu"), names,
				     vcpus, *ret);
	return 0;
}

/* args has at most the member `name`: *v is it, or NULL. */
static int opt_arg(struct json_object *args, const char *name, struct json_object **v,
		   struct qmp_error *err)
{
	*v = NULL;
	if (only_args(args, &name, 1, err))
		return -1;
	if (args)
		json_object_object_get_ex(args, name, v);
	return 0;
}

static int cmd_query_stats_schemas(struct qmp_conn *c, struct json_object *args,
				   struct json_object **ret, struct qmp_error *err)
{
	struct json_object *p;

	if (opt_arg(args, "provider", &p, err) ||
	    (p && enum_arg(p, "provider", stats_providers, ARRAY_SIZE(stats_providers), err)))
		return -1;
	*ret = json_object_new_array();
	qmp_kvm_stats_schemas(c, *ret);
	return 0;
}

/* No block devices: nothing to count, by device or by node. */
static int cmd_query_blockstats(struct qmp_conn *c, struct json_object *args,
				struct json_object **ret, struct qmp_error *err)
{
	struct json_object *v;

	(void)c;
	if (opt_arg(args, "query-nodes", &v, err))
		return -1;
	if (v && !json_object_is_type(v, json_type_boolean))
		return qmp_fail(err, "GenericError", "Invalid parameter type for "
				"'query-nodes', expected: boolean");
	*ret = json_object_new_array();
	return 0;
}

/* No dirty-page rate was ever measured (calc-dirty-rate is not
 * supported): QEMU's answer before its first measurement. */
static int cmd_query_dirty_rate(struct qmp_conn *c, struct json_object *args,
				struct json_object **ret, struct qmp_error *err)
{
	(void)c;
	if (only_args(args, NULL, 0, err))
		return -1;
	*ret = json_object_new_object();
	json_object_object_add(*ret, "status", json_object_new_string("unstarted"));
	json_object_object_add(*ret, "sample-pages", json_object_new_int(0));
	json_object_object_add(*ret, "mode", json_object_new_string("page-sampling"));
	json_object_object_add(*ret, "start-time", json_object_new_int(0));
	json_object_object_add(*ret, "calc-time", json_object_new_int(0));
	return 0;
}

static const struct qmp_command stats_table[] = {
	{ "query-stats", cmd_query_stats },
	{ "query-stats-schemas", cmd_query_stats_schemas },
	{ "query-blockstats", cmd_query_blockstats },
	{ "query-dirty-rate", cmd_query_dirty_rate },
};

const struct qmp_command *qmp_stats_commands(size_t *n)
{
	*n = ARRAY_SIZE(stats_table);
	return stats_table;
}
