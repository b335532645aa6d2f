/* The fake VM and the message helpers of the QMP protocol tests. */
#include <errno.h>
#include <json-c/json.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/kvm_stats_all.h"
#include "vmm/qemu/tests/qmp_test_util.h"
#include "common/test_check.h"

static enum qmp_run_state fake_state(void *o) { return ((struct fake_vm *)o)->state; }

static int fake_stop(void *o)
{
	struct fake_vm *vm = o;

	vm->stops++;
	vm->state = QMP_STATE_PAUSED;
	return 0;
}

static int fake_cont(void *o)
{
	struct fake_vm *vm = o;

	vm->conts++;
	vm->state = QMP_STATE_RUNNING;
	return 0;
}

static int fake_powerdown(void *o) { ((struct fake_vm *)o)->powerdowns++; return 0; }
static int fake_reset(void *o) { ((struct fake_vm *)o)->resets++; return 0; }
static void fake_quit(void *o) { ((struct fake_vm *)o)->quits++; }

static int fake_tids(void *o, int *tids, unsigned n)
{
	if (((struct fake_vm *)o)->fail_tids)
		return -EAGAIN;
	for (unsigned i = 0; i < n; i++)
		tids[i] = 19154 + (int)i;
	return 0;
}

static int fake_kvm_stats(void *o, int vcpu,
			  void (*fn)(void *arg, const struct kvm_stat *s), void *arg)
{
	const uint64_t count = vcpu < 0 ? 46 : 100 + (uint64_t)vcpu, no = 0;
	const uint64_t hist[4] = { 1, 2, 3, 4 };
	const struct kvm_stat stats[] = {
		{ vcpu < 0 ? "pages_4k" : "exits", KVM_STATS_TYPE_CUMULATIVE, 0, 0, &count, 1 },
		{ "guest_mode", KVM_STATS_TYPE_INSTANT | KVM_STATS_UNIT_BOOLEAN, 0, 0, &no, 1 },
		{ "halt_wait_hist", KVM_STATS_TYPE_LOG_HIST | KVM_STATS_UNIT_SECONDS |
		  KVM_STATS_BASE_POW10, -9, 0, hist, 4 },
	};

	if (!((struct fake_vm *)o)->kvm_stats)
		return -ENOENT;
	for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++)
		fn(arg, &stats[i]);
	return 0;
}

const struct qmp_backend_ops fake_ops = {
	.state = fake_state, .stop = fake_stop, .cont = fake_cont,
	.powerdown = fake_powerdown, .reset = fake_reset, .quit = fake_quit,
	.vcpu_tids = fake_tids, .kvm_stats = fake_kvm_stats,
};

const struct qmp_machine machine = {
	.nr_cpus = 2,
	.mem_bytes = 256ull << 20,
	.name = "min",
	.nr_chardevs = 2,
	.chardevs = { { "charmonitor", "unix:/run/mon.sock,server=on" },
		      { "charserial0", "pty:/dev/pts/7" } },
	.nr_devices = 1,
	.devices = { { "serial0", "isa-serial" } },
};

struct json_object *msgs[MAX_MSGS];
unsigned nr_msgs;

void drop_msgs(void)
{
	for (unsigned i = 0; i < nr_msgs; i++)
		json_object_put(msgs[i]);
	nr_msgs = 0;
}

/* Take every queued message; each must be one JSON object + "\r\n". */
unsigned take(struct qmp_conn *c)
{
	size_t len;
	const char *out = qmp_conn_output(c, &len);
	char *copy = strndup(out ? out : "", len), *p = copy, *nl;

	drop_msgs();
	while ((nl = strstr(p, "\r\n"))) {
		*nl = '\0';
		msgs[nr_msgs] = json_tokener_parse(p);
		CHECK(msgs[nr_msgs] && json_object_is_type(msgs[nr_msgs], json_type_object));
		if (msgs[nr_msgs] && nr_msgs + 1 < MAX_MSGS)
			nr_msgs++;
		p = nl + 2;
	}
	CHECK(*p == '\0');
	free(copy);
	qmp_conn_consume(c, len);
	return nr_msgs;
}

void send_str(struct qmp_conn *c, const char *s)
{
	qmp_conn_feed(c, s, strlen(s));
}

struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (o)
		json_object_object_get_ex(o, key, &v);
	return v;
}

/* Message i is the reply {"return":..., "id":"<id>"}; returns the value. */
struct json_object *ret_of(unsigned i, const char *id)
{
	struct json_object *r;

	CHECK(i < nr_msgs);
	if (i >= nr_msgs)
		return NULL;
	r = member(msgs[i], "return");
	CHECK(r != NULL);
	if (!r)
		fprintf(stderr, "  got %s\n", json_object_to_json_string(msgs[i]));
	if (id)
		CHECK(member(msgs[i], "id") &&
		      !strcmp(json_object_get_string(member(msgs[i], "id")), id));
	return r;
}

const char *error_class(unsigned i)
{
	struct json_object *e = i < nr_msgs ? member(msgs[i], "error") : NULL;

	return e ? json_object_get_string(member(e, "class")) : "";
}

const char *event_name(unsigned i)
{
	struct json_object *e = i < nr_msgs ? member(msgs[i], "event") : NULL;

	return e ? json_object_get_string(e) : "";
}

/* Run one command; expect exactly one message, its return value. */
struct json_object *exec1(struct qmp_conn *c, const char *json, const char *id)
{
	send_str(c, json);
	CHECK(take(c) == 1);
	return ret_of(0, id);
}

void negotiate(struct qmp_conn *c)
{
	qmp_conn_greet(c);
	CHECK(take(c) == 1);
	exec1(c, "{\"execute\":\"qmp_capabilities\",\"id\":\"libvirt-1\"}\r\n", "libvirt-1");
}
