/*
 * What the QMP protocol tests share: a fake VM behind the backend hooks
 * (it counts what was asked of it), libvirt's dom-min machine, and the
 * connection's output parsed into JSON messages.
 */
#ifndef LAGVISOR_VMM_QEMU_TESTS_QMP_TEST_UTIL_H
#define LAGVISOR_VMM_QEMU_TESTS_QMP_TEST_UTIL_H

#include "vmm/qemu/qmp.h"

struct fake_vm {
	enum qmp_run_state state;
	int stops, conts, powerdowns, resets, quits;
	int fail_tids;
	bool kvm_stats;            /* has KVM statistics (fake_kvm_stats) */
};

/* With kvm_stats set, each of the VM and its vCPUs has three: a counter
 * "exits" (vCPU: 100 + index; VM: "pages_4k", 46), a boolean "guest_mode",
 * and "halt_wait_hist", a log2 histogram of 4 buckets in ns. */
extern const struct qmp_backend_ops fake_ops;
extern const struct qmp_machine machine;

#define MAX_MSGS 64
extern struct json_object *msgs[MAX_MSGS];
extern unsigned nr_msgs;

void drop_msgs(void);
/* Take every queued message; each must be one JSON object + "\r\n". */
unsigned take(struct qmp_conn *c);
void send_str(struct qmp_conn *c, const char *s);
struct json_object *member(struct json_object *o, const char *key);
/* Message i is the reply {"return":..., "id":"<id>"}; returns the value. */
struct json_object *ret_of(unsigned i, const char *id);
const char *error_class(unsigned i);
const char *event_name(unsigned i);
/* Run one command; expect exactly one message, its return value. */
struct json_object *exec1(struct qmp_conn *c, const char *json, const char *id);
void negotiate(struct qmp_conn *c);

#endif
