/*
 * The statistics queries of virsh domstats (qmp_stats.c, qmp_kvm_stats.c)
 * and the errors for what lagvisor does not support (qmp_unsupported.c).
 */
#include <json-c/json.h>
#include <string.h>

#include "vmm/qemu/qmp.h"
#include "vmm/qemu/tests/qmp_test_util.h"
#include "common/test_check.h"

/*
 * virsh domstats with no options (libvirt 9.0): each request as libvirt
 * sends it, answered with QEMU 7.2's shapes for a VM without KVM
 * statistics (the stand-in); bad arguments fail as QEMU's schema makes
 * them fail, and a command lagvisor lacks names the missing feature.
 */
static void test_domstats_empty(void)
{
	static const char *const empty[] = {
		"{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"vcpu\",\"providers\":"
		"[{\"provider\":\"kvm\",\"names\":[\"halt_poll_success_ns\",\"halt_poll_fail_ns\"]}]}}",
		"{\"execute\":\"query-stats-schemas\"}",
		"{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"vcpu\"}}",
		"{\"execute\":\"query-blockstats\"}",
		"{\"execute\":\"query-blockstats\",\"arguments\":{\"query-nodes\":true}}",
		"{\"execute\":\"query-named-block-nodes\",\"arguments\":{\"flat\":true}}",
		"{\"execute\":\"query-iothreads\"}",
		"{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"vm\"}}",
	};
	static const char *const bad[] = {
		"{\"execute\":\"query-stats\"}",
		"{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"cryptodev\"}}",
		"{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"vm\",\"providers\":"
		"[{\"provider\":\"foo\"}]}}",
		"{\"execute\":\"query-blockstats\",\"arguments\":{\"query-nodes\":1}}",
		"{\"execute\":\"query-dirty-rate\",\"arguments\":{\"x\":1}}",
	};
	struct fake_vm vm = { .state = QMP_STATE_RUNNING };
	struct json_object *r;
	struct qmp_conn c;

	CHECK(qmp_conn_init(&c, &fake_ops, &vm, &machine) == 0);
	negotiate(&c);
	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		r = exec1(&c, empty[i], NULL);
		CHECK(json_object_is_type(r, json_type_array) && json_object_array_length(r) == 0);
	}
	r = exec1(&c, "{\"execute\":\"query-dirty-rate\",\"id\":\"d\"}", "d");
	CHECK(!strcmp(json_object_get_string(member(r, "status")), "unstarted"));
	CHECK(!strcmp(json_object_get_string(member(r, "mode")), "page-sampling"));
	CHECK(member(r, "sample-pages") && member(r, "start-time") && member(r, "calc-time"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		send_str(&c, bad[i]);
		CHECK(take(&c) == 1 && !strcmp(error_class(0), "GenericError"));
	}
	send_str(&c, "{\"execute\":\"device_add\",\"arguments\":{\"driver\":\"qemu64-x86_64-cpu\"}}");
	CHECK(take(&c) == 1 && !strcmp(error_class(0), "GenericError"));
	CHECK(strstr(json_object_get_string(member(member(msgs[0], "error"), "desc")),
		     "no device hotplug") != NULL);
	send_str(&c, "{\"execute\":\"no-such-command\"}");
	CHECK(take(&c) == 1 && !strcmp(error_class(0), "CommandNotFound"));
	exec1(&c, "{\"execute\":\"query-status\",\"id\":\"s\"}", "s");
	qmp_conn_destroy(&c);
	/* -smp N,maxcpus=N+1: the spare slot is listed, unplugged (no qom-path). */
	struct qmp_machine spare = machine;

	spare.nr_max_cpus = machine.nr_cpus + 1;
	CHECK(qmp_conn_init(&c, &fake_ops, &vm, &spare) == 0);
	negotiate(&c);
	r = exec1(&c, "{\"execute\":\"query-hotpluggable-cpus\"}", NULL);
	CHECK(json_object_array_length(r) == machine.nr_cpus + 1);
	CHECK(!member(json_object_array_get_idx(r, 0), "qom-path"));
	CHECK(member(json_object_array_get_idx(r, 1), "qom-path") != NULL);
	qmp_conn_destroy(&c);
	drop_msgs();
}

static struct json_object *stat_named(struct json_object *entry, const char *name)
{
	struct json_object *stats = member(entry, "stats");

	for (size_t i = 0; stats && i < json_object_array_length(stats); i++) {
		struct json_object *s = json_object_array_get_idx(stats, i);

		if (!strcmp(json_object_get_string(member(s, "name")), name))
			return s;
	}
	return NULL;
}

/* With KVM statistics: QEMU 7.2's shapes for the kvm provider. */
static void test_kvm_stats(void)
{
	struct fake_vm vm = { .state = QMP_STATE_RUNNING, .kvm_stats = true };
	struct json_object *r, *e, *s;
	struct qmp_conn c;

	CHECK(qmp_conn_init(&c, &fake_ops, &vm, &machine) == 0);
	negotiate(&c);
	r = exec1(&c, "{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"vcpu\"}}", NULL);
	CHECK(json_object_array_length(r) == machine.nr_cpus);
	e = json_object_array_get_idx(r, 1);
	CHECK(!strcmp(json_object_get_string(member(e, "provider")), "kvm"));
	CHECK(!strcmp(json_object_get_string(member(e, "qom-path")), "/machine/unattached/device[1]"));
	CHECK(json_object_get_uint64(member(stat_named(e, "exits"), "value")) == 101);
	CHECK(json_object_is_type(member(stat_named(e, "guest_mode"), "value"), json_type_boolean));
	CHECK(json_object_array_length(member(stat_named(e, "halt_wait_hist"), "value")) == 4);
	/* libvirt's cpu.haltpoll: two names, neither present here. */
	r = exec1(&c, "{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"vcpu\",\"providers\":"
		  "[{\"provider\":\"kvm\",\"names\":[\"halt_poll_success_ns\"]}]}}", NULL);
	CHECK(json_object_array_length(r) == 0);
	r = exec1(&c, "{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"vcpu\",\"vcpus\":"
		  "[\"/machine/unattached/device[0]\"],\"providers\":[{\"provider\":\"kvm\","
		  "\"names\":[\"exits\",\"nosuch\"]}]}}", NULL);
	CHECK(json_object_array_length(r) == 1);
	CHECK(json_object_array_length(member(json_object_array_get_idx(r, 0), "stats")) == 1);
	r = exec1(&c, "{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"vm\"}}", NULL);
	CHECK(json_object_array_length(r) == 1);
	e = json_object_array_get_idx(r, 0);
	CHECK(!member(e, "qom-path") && stat_named(e, "pages_4k"));
	r = exec1(&c, "{\"execute\":\"query-stats-schemas\"}", NULL);
	CHECK(json_object_array_length(r) == 2);
	e = json_object_array_get_idx(r, 0);
	CHECK(!strcmp(json_object_get_string(member(e, "target")), "vcpu"));
	s = stat_named(e, "exits");
	CHECK(!strcmp(json_object_get_string(member(s, "type")), "cumulative"));
	CHECK(!member(s, "unit") && !member(s, "base") && member(s, "exponent"));
	s = stat_named(e, "guest_mode");
	CHECK(!strcmp(json_object_get_string(member(s, "unit")), "boolean"));
	s = stat_named(e, "halt_wait_hist");
	CHECK(!strcmp(json_object_get_string(member(s, "type")), "log2-histogram"));
	CHECK(json_object_get_int(member(s, "base")) == 10);
	CHECK(json_object_get_int(member(s, "exponent")) == -9);
	CHECK(!strcmp(json_object_get_string(member(json_object_array_get_idx(r, 1), "target")),
		      "vm"));
	qmp_conn_destroy(&c);
	drop_msgs();
}

int main(void)
{
	test_domstats_empty();
	test_kvm_stats();
	return check_report("test_qmp_stats");
}
