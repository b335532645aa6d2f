/*
 * QEMU's "kvm" statistics provider, from the same source QEMU reads: KVM's
 * binary statistics files of the VM and of each vCPU (the backend's
 * kvm_stats hook). Shapes as QEMU 7.2 answers on Debian 12 with KVM:
 *   query-stats:  [{"provider":"kvm","qom-path":P (vcpu only),
 *                   "stats":[{"name":N,"value":V}]}]  V a number, a boolean
 *                 (unit boolean) or a list (histograms); an entry with no
 *                 statistic left after the name filter is left out;
 *   query-stats-schemas: [{"provider":"kvm","target":"vcpu"|"vm",
 *                 "stats":[{"name","type","unit"?,"exponent","base"?,
 *                 "bucket-size"?}]}], "base" only with a non-zero exponent.
 * A statistic of a type or unit QEMU 7.2 does not know is left out, as
 * QEMU leaves it out.
 */
#include <json-c/json.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>

#include "vmm/kvm_stats_all.h"
#include "vmm/qemu/qmp_commands.h"

struct kvm_stats_ctx {
	struct json_object *stats;     /* the entries being built */
	struct json_object *names;     /* wanted names; NULL: all */
	bool schema;
};

static const char *stat_type(uint32_t flags)
{
	static const char *const types[] = {
		[KVM_STATS_TYPE_CUMULATIVE] = "cumulative",
		[KVM_STATS_TYPE_INSTANT] = "instant",
		[KVM_STATS_TYPE_PEAK] = "peak",
		[KVM_STATS_TYPE_LINEAR_HIST] = "linear-histogram",
		[KVM_STATS_TYPE_LOG_HIST] = "log2-histogram",
	};
	uint32_t t = (flags & KVM_STATS_TYPE_MASK) >> KVM_STATS_TYPE_SHIFT;

	return t < sizeof(types) / sizeof(types[0]) ? types[t] : NULL;
}

/* "" for no unit, NULL for one QEMU does not know. */
static const char *stat_unit(uint32_t flags)
{
	static const char *const units[] = {
		[KVM_STATS_UNIT_NONE >> KVM_STATS_UNIT_SHIFT] = "",
		[KVM_STATS_UNIT_BYTES >> KVM_STATS_UNIT_SHIFT] = "bytes",
		[KVM_STATS_UNIT_SECONDS >> KVM_STATS_UNIT_SHIFT] = "seconds",
		[KVM_STATS_UNIT_CYCLES >> KVM_STATS_UNIT_SHIFT] = "cycles",
		[KVM_STATS_UNIT_BOOLEAN >> KVM_STATS_UNIT_SHIFT] = "boolean",
	};
	uint32_t u = (flags & KVM_STATS_UNIT_MASK) >> KVM_STATS_UNIT_SHIFT;

	return u < sizeof(units) / sizeof(units[0]) ? units[u] : NULL;
}

static bool wanted(struct json_object *names, const char *name)
{
	if (!names)
		return true;
	for (size_t i = 0; i < json_object_array_length(names); i++)
		if (!strcmp(json_object_get_string(json_object_array_get_idx(names, i)), name))
			return true;
	return false;
}

static struct json_object *stat_value(const struct kvm_stat *s)
{
	struct json_object *list;

	if ((s->flags & KVM_STATS_UNIT_MASK) == KVM_STATS_UNIT_BOOLEAN)
		return json_object_new_boolean(s->values[0] != 0);
	if (s->nr_values == 1)
		return json_object_new_uint64(s->values[0]);
	list = json_object_new_array();
	for (unsigned i = 0; i < s->nr_values; i++)
		json_object_array_add(list, json_object_new_uint64(s->values[i]));
	return list;
}

static void stat_schema(struct json_object *o, const struct kvm_stat *s)
{
	const char *unit = stat_unit(s->flags);

	json_object_object_add(o, "type", json_object_new_string(stat_type(s->flags)));
	if (*unit)
		json_object_object_add(o, "unit", json_object_new_string(unit));
	json_object_object_add(o, "exponent", json_object_new_int(s->exponent));
	if (s->exponent)
		json_object_object_add(o, "base", json_object_new_int(
			(s->flags & KVM_STATS_BASE_MASK) == KVM_STATS_BASE_POW2 ? 2 : 10));
	if ((s->flags & KVM_STATS_TYPE_MASK) == KVM_STATS_TYPE_LINEAR_HIST)
		json_object_object_add(o, "bucket-size", json_object_new_int64(s->bucket_size));
}

static void add_stat(void *arg, const struct kvm_stat *s)
{
	struct kvm_stats_ctx *x = arg;
	struct json_object *o;

	if (!stat_type(s->flags) || !stat_unit(s->flags) || !wanted(x->names, s->name))
		return;
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(s->name));
	if (x->schema)
		stat_schema(o, s);
	else
		json_object_object_add(o, "value", stat_value(s));
	json_object_array_add(x->stats, o);
}

/* The provider's entry for one file (vcpu -1: the VM's), appended to list
 * unless empty. extra: "qom-path" or "target", with its value. */
static void add_entry(struct qmp_conn *c, int vcpu, struct kvm_stats_ctx *x,
		      const char *extra, const char *value, struct json_object *list)
{
	struct json_object *e;

	x->stats = json_object_new_array();
	if (!c->ops->kvm_stats || c->ops->kvm_stats(c->opaque, vcpu, add_stat, x) ||
	    !json_object_array_length(x->stats)) {
		json_object_put(x->stats);
		return;
	}
	e = json_object_new_object();
	json_object_object_add(e, "provider", json_object_new_string("kvm"));
	json_object_object_add(e, "stats", x->stats);
	if (extra)
		json_object_object_add(e, extra, json_object_new_string(value));
	json_object_array_add(list, e);
}

static bool listed(struct json_object *paths, const char *path)
{
	return !paths || wanted(paths, path);
}

void qmp_kvm_stats_values(struct qmp_conn *c, bool vcpu_target, struct json_object *names,
			  struct json_object *vcpus, struct json_object *list)
{
	struct kvm_stats_ctx x = { .names = names };
	char path[64];

	if (!vcpu_target) {
		add_entry(c, -1, &x, NULL, NULL, list);
		return;
	}
	for (unsigned i = 0; i < c->machine->nr_cpus; i++) {
		snprintf(path, sizeof(path), QMP_CPU_QOM_PATH, i);
		if (listed(vcpus, path))
			add_entry(c, (int)i, &x, "qom-path", path, list);
	}
}

void qmp_kvm_stats_schemas(struct qmp_conn *c, struct json_object *list)
{
	struct kvm_stats_ctx x = { .schema = true };

	add_entry(c, 0, &x, "target", "vcpu", list);
	add_entry(c, -1, &x, "target", "vm", list);
}
