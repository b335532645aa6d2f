/*
 * The QMP protocol module against libvirt 9.0's observed sequences
 * (vmm/qemu/README.md §3-§5) and against bad input: every reply
 * is checked as parsed JSON, and the connection must keep answering after
 * each bad request.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/qemu/qmp.h"
#include "vmm/qemu/tests/qmp_test_util.h"
#include "common/test_check.h"

static int64_t fixed_now(void) { return 1700000000123456; }

/* s in one piece, or one byte at a time. */
static void send_maybe_bytewise(struct qmp_conn *c, const char *s, int bytewise)
{
	if (!bytewise)
		send_str(c, s);
	else
		for (const char *p = s; *p; p++)
			qmp_conn_feed(c, p, 1);
}

static void test_start_sequence(void)
{
	struct fake_vm vm = { .state = QMP_STATE_PAUSED };
	struct qmp_conn c;
	struct json_object *r, *q;

	CHECK(qmp_conn_init(&c, &fake_ops, &vm, &machine) == 0);
	c.now_us = fixed_now;
	qmp_conn_greet(&c);
	CHECK(take(&c) == 1);
	q = member(member(member(msgs[0], "QMP"), "version"), "qemu");
	CHECK(q && json_object_get_int(member(q, "major")) == 7);
	/* Events before negotiation are dropped, commands refused. */
	qmp_conn_event(&c, "RESUME", NULL);
	send_str(&c, "{\"execute\":\"query-status\",\"id\":1}\r\n");
	CHECK(take(&c) == 1 && !strcmp(error_class(0), "CommandNotFound"));
	exec1(&c, "{\"execute\":\"qmp_capabilities\",\"id\":\"libvirt-1\"}\r\n", "libvirt-1");
	r = exec1(&c, "{\"execute\":\"query-migrate-capabilities\",\"id\":\"libvirt-2\"}\r\n",
		  "libvirt-2");
	CHECK(json_object_is_type(r, json_type_array));
	exec1(&c, "{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":"
	      "[{\"capability\":\"events\",\"state\":true}]},\"id\":\"libvirt-3\"}\r\n",
	      "libvirt-3");
	r = exec1(&c, "{\"execute\":\"query-chardev\",\"id\":\"libvirt-4\"}\r\n", "libvirt-4");
	CHECK(json_object_array_length(r) == 2);
	q = json_object_array_get_idx(r, 1);
	CHECK(!strcmp(json_object_get_string(member(q, "filename")), "pty:/dev/pts/7"));
	CHECK(!strcmp(json_object_get_string(member(q, "label")), "charserial0"));
	r = exec1(&c, "{\"execute\":\"query-hotpluggable-cpus\",\"id\":\"libvirt-5\"}\r\n",
		  "libvirt-5");
	CHECK(json_object_array_length(r) == 2);
	q = json_object_array_get_idx(r, 0);
	CHECK(json_object_get_int(member(member(q, "props"), "socket-id")) == 1);
	CHECK(json_object_get_int(member(q, "vcpus-count")) == 1);
	r = exec1(&c, "{\"execute\":\"query-cpus-fast\",\"id\":\"libvirt-6\"}\r\n", "libvirt-6");
	CHECK(json_object_array_length(r) == 2);
	q = json_object_array_get_idx(r, 1);
	CHECK(json_object_get_int(member(q, "thread-id")) == 19155);
	CHECK(json_object_get_int(member(q, "cpu-index")) == 1);
	CHECK(!strcmp(json_object_get_string(member(q, "qom-path")),
		      "/machine/unattached/device[1]"));
	r = exec1(&c, "{\"execute\":\"qom-list\",\"arguments\":{\"path\":"
		  "\"/machine/unattached/device[0]\"},\"id\":\"libvirt-7\"}\r\n", "libvirt-7");
	CHECK(json_object_array_length(r) == 0);
	r = exec1(&c, "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"/machine/unattached/"
		  "device[0]\",\"property\":\"unavailable-features\"},\"id\":\"libvirt-8\"}\r\n",
		  "libvirt-8");
	CHECK(json_object_array_length(r) == 0);
	exec1(&c, "{\"execute\":\"query-iothreads\",\"id\":\"libvirt-9\"}\r\n", "libvirt-9");
	exec1(&c, "{\"execute\":\"query-named-block-nodes\",\"arguments\":{\"flat\":true},"
	      "\"id\":\"libvirt-10\"}\r\n", "libvirt-10");
	r = exec1(&c, "{\"execute\":\"qom-list\",\"arguments\":{\"path\":\"/machine/peripheral\"},"
		  "\"id\":\"libvirt-11\"}\r\n", "libvirt-11");
	CHECK(json_object_array_length(r) == 2);
	q = json_object_array_get_idx(r, 1);
	CHECK(!strcmp(json_object_get_string(member(q, "name")), "serial0"));
	CHECK(!strcmp(json_object_get_string(member(q, "type")), "child<isa-serial>"));
	exec1(&c, "{\"execute\":\"query-block\",\"id\":\"libvirt-12\"}\r\n", "libvirt-12");
	/* cont: the RESUME event first, then the reply. */
	send_str(&c, "{\"execute\":\"cont\",\"id\":\"libvirt-13\"}\r\n");
	CHECK(take(&c) == 2);
	CHECK(!strcmp(event_name(0), "RESUME"));
	CHECK(json_object_get_int64(member(member(msgs[0], "timestamp"), "microseconds")) ==
	      123456);
	ret_of(1, "libvirt-13");
	CHECK(vm.conts == 1 && vm.state == QMP_STATE_RUNNING);
	qmp_conn_destroy(&c);
	drop_msgs();
}

static void test_runtime(void)
{
	struct fake_vm vm = { .state = QMP_STATE_RUNNING };
	struct qmp_conn c;
	struct json_object *r;

	CHECK(qmp_conn_init(&c, &fake_ops, &vm, &machine) == 0);
	negotiate(&c);
	send_str(&c, "{\"execute\":\"stop\",\"id\":\"a\"}\r\n");
	CHECK(take(&c) == 2 && !strcmp(event_name(0), "STOP"));
	ret_of(1, "a");
	/* Already paused: no second STOP. */
	exec1(&c, "{\"execute\":\"stop\",\"id\":\"b\"}\r\n", "b");
	r = exec1(&c, "{\"execute\":\"query-status\",\"id\":\"c\"}", "c");
	CHECK(!strcmp(json_object_get_string(member(r, "status")), "paused"));
	CHECK(!json_object_get_boolean(member(r, "running")));
	send_str(&c, "{\"execute\":\"cont\",\"id\":\"d\"}");
	CHECK(take(&c) == 2 && !strcmp(event_name(0), "RESUME"));
	send_str(&c, "{\"execute\":\"system_powerdown\",\"id\":\"e\"}");
	CHECK(take(&c) == 2 && !strcmp(event_name(0), "POWERDOWN") && vm.powerdowns == 1);
	send_str(&c, "{\"execute\":\"system_reset\",\"id\":\"f\"}");
	CHECK(take(&c) == 2 && !strcmp(event_name(0), "RESET") && vm.resets == 1);
	CHECK(!strcmp(json_object_get_string(member(member(msgs[0], "data"), "reason")),
		      "host-qmp-system-reset"));
	/* A guest shutdown reported by the owner, then cont is refused. */
	qmp_conn_event(&c, "SHUTDOWN", NULL);
	CHECK(take(&c) == 1 && !strcmp(event_name(0), "SHUTDOWN"));
	vm.state = QMP_STATE_SHUTDOWN;
	send_str(&c, "{\"execute\":\"cont\",\"id\":\"g\"}");
	CHECK(take(&c) == 1 && !strcmp(error_class(0), "GenericError"));
	vm.fail_tids = 1;
	send_str(&c, "{\"execute\":\"query-cpus-fast\",\"id\":\"h\"}");
	CHECK(take(&c) == 1 && !strcmp(error_class(0), "GenericError"));
	r = exec1(&c, "{\"execute\":\"query-balloon\"}", NULL);
	CHECK(json_object_get_int64(member(r, "actual")) == 256ll << 20);
	/* quit: SHUTDOWN, the reply, and only then the backend's quit. */
	send_str(&c, "{\"execute\":\"quit\",\"id\":\"q\"}");
	CHECK(take(&c) == 2 && !strcmp(event_name(0), "SHUTDOWN"));
	ret_of(1, "q");
	CHECK(vm.quits == 1);
	qmp_conn_destroy(&c);
	drop_msgs();
}

/* vmm/qemu/README.md §5: all must succeed or libvirt kills the VM. */
static void test_reconnect_sequence(void)
{
	static const char *const cmds[] = {
		"qmp_capabilities", "query-migrate-capabilities", "query-status",
		"query-hotpluggable-cpus", "query-cpus-fast", "query-iothreads",
		"query-block", "query-chardev", "query-jobs", "query-version",
		"query-commands", "query-kvm", "query-name", "query-uuid",
	};
	struct fake_vm vm = { .state = QMP_STATE_RUNNING };
	struct qmp_conn c;
	char req[256];

	CHECK(qmp_conn_init(&c, &fake_ops, &vm, &machine) == 0);
	qmp_conn_greet(&c);
	take(&c);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		snprintf(req, sizeof(req), "{\"execute\":\"%s\",\"id\":\"libvirt-%zu\"}\r\n",
			 cmds[i], i + 1);
		snprintf(req + 200, 56, "libvirt-%zu", i + 1);
		exec1(&c, req, req + 200);
	}
	exec1(&c, "{\"execute\":\"qom-list\",\"arguments\":{\"path\":\"/machine/peripheral\"},"
	      "\"id\":\"x\"}", "x");
	qmp_conn_destroy(&c);
	drop_msgs();
}

/* Bad input: one error reply each; the next request still works. */
static void test_bad_input(void)
{
	static const struct {
		const char *in, *cls;
	} bad[] = {
		{ "{\"execute\":}\r\n", "GenericError" },
		{ "[1,2]\r\n", "GenericError" },
		{ "\"just a string\"\r\n", "GenericError" },
		{ "null\r\n", "GenericError" },
		{ "}\r\n", "GenericError" },
		{ "{\"id\":1}\r\n", "GenericError" },
		{ "{\"execute\":42}\r\n", "GenericError" },
		{ "{\"execute\":\"stop\",\"arguments\":[]}\r\n", "GenericError" },
		{ "{\"execute\":\"stop\",\"bogus\":1}\r\n", "GenericError" },
		{ "{\"exec-oob\":\"stop\"}\r\n", "GenericError" },
		{ "{\"execute\":\"no-such-command\",\"id\":7}\r\n", "CommandNotFound" },
		{ "{\"execute\":\"qmp_capabilities\"}\r\n", "CommandNotFound" },
		{ "{\"execute\":\"qom-list\"}\r\n", "GenericError" },
		{ "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"/\",\"property\":\"x\"}}\r\n",
		  "GenericError" },
		{ "\x01\x02\xff\xfe garbage\r\n", "GenericError" },
		{ "{\"a\":\"\\u12\"}\r\n", "GenericError" },
	};
	struct fake_vm vm = { .state = QMP_STATE_RUNNING };
	struct qmp_conn c;
	char nul[] = "{\"execute\":\0\"stop\"}\r\n";

	CHECK(qmp_conn_init(&c, &fake_ops, &vm, &machine) == 0);
	negotiate(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		send_str(&c, bad[i].in);
		CHECK(take(&c) == 1);
		if (strcmp(error_class(0), bad[i].cls))
			fprintf(stderr, "bad input %zu: got %s\n", i,
				nr_msgs ? json_object_to_json_string(msgs[0]) : "nothing");
		CHECK(!strcmp(error_class(0), bad[i].cls));
		exec1(&c, "{\"execute\":\"query-status\",\"id\":\"ok\"}\r\n", "ok");
	}
	/* A NUL byte inside a request. */
	qmp_conn_feed(&c, nul, sizeof(nul) - 1);
	CHECK(take(&c) <= 1 && vm.stops == 0);
	exec1(&c, "{\"execute\":\"query-status\",\"id\":\"ok\"}\r\n", "ok");
	/* An unknown command's id is echoed. */
	send_str(&c, "{\"execute\":\"no-such-command\",\"id\":{\"n\":[1]}}");
	CHECK(take(&c) == 1 && !strcmp(error_class(0), "CommandNotFound"));
	CHECK(json_object_get_int(json_object_array_get_idx(
		member(member(msgs[0], "id"), "n"), 0)) == 1);
	qmp_conn_destroy(&c);
	drop_msgs();
}

/* Each input, in one buffer and then one byte at a time, gives two
 * messages, which check() checks. */
static void each_way(struct qmp_conn *c, const char *const *inputs, size_t n, void (*check)(void))
{
	for (size_t i = 0; i < n; i++)
		for (int bytewise = 0; bytewise < 2; bytewise++) {
			send_maybe_bytewise(c, inputs[i], bytewise);
			CHECK(take(c) == 2);
			check();
		}
}

static void check_null_then_ok(void)
{
	CHECK(!strcmp(error_class(0), "GenericError"));
	CHECK(nr_msgs && !strcmp(json_object_get_string(member(member(msgs[0], "error"), "desc")),
				 "QMP input must be a JSON object"));
	ret_of(1, "ok");
}

/* A bare value before a request (json-c parses null to no object with
 * status success, its parse end past the newline): one error, and the
 * request after it is still answered, however the bytes arrive. */
static void test_null_request(void)
{
	static const char *const inputs[] = {
		"null\n{\"execute\":\"query-status\",\"id\":\"ok\"}\n",
		"null\r\n{\"execute\":\"query-status\",\"id\":\"ok\"}\r\n",
		" null {\"execute\":\"query-status\",\"id\":\"ok\"}\n",
		/* a bare number: json-c's reply to "1-x" depended on whether
		 * the read ended after the 1 (fuzz_qmp); now one error, either way */
		"1-x\n{\"execute\":\"query-status\",\"id\":\"ok\"}\n",
		"1 {\"execute\":\"query-status\",\"id\":\"ok\"}\n",
	};
	struct fake_vm vm = { .state = QMP_STATE_RUNNING };
	struct qmp_conn c;

	CHECK(qmp_conn_init(&c, &fake_ops, &vm, &machine) == 0);
	negotiate(&c);
	each_way(&c, inputs, sizeof(inputs) / sizeof(inputs[0]), check_null_then_ok);
	/* Separate writes: the reply to the second is not withheld. */
	send_str(&c, "null\n");
	CHECK(take(&c) == 1 && !strcmp(error_class(0), "GenericError"));
	exec1(&c, "{\"execute\":\"query-status\",\"id\":\"ok\"}\n", "ok");
	qmp_conn_destroy(&c);
	drop_msgs();
}

static void check_ok_then_error(void)
{
	ret_of(0, "ok");
	CHECK(!strcmp(error_class(1), "GenericError"));
}

/* A request, then bad input in the same piece: json-c took what follows
 * a request as whitespace and comments, so "/x" there dropped the request
 * without a reply (found by vmm/qemu/fuzz/fuzz_qmp). The request is
 * answered, then the bad line is, however the bytes arrive. */
static void test_garbage_after_request(void)
{
	static const char *const inputs[] = {
		"{\"execute\":\"query-status\",\"id\":\"ok\"}\r\n/balloon0\n",
		"{\"execute\":\"query-status\",\"id\":\"ok\"} /x\n",
		"{\"execute\":\"query-status\",\"id\":\"ok\"}/* comment */\n",
		"{\"execute\":\"query-status\",\"id\":\"ok\"}\n// comment\n",
	};
	struct fake_vm vm = { .state = QMP_STATE_RUNNING };
	struct qmp_conn c;

	CHECK(qmp_conn_init(&c, &fake_ops, &vm, &machine) == 0);
	negotiate(&c);
	each_way(&c, inputs, sizeof(inputs) / sizeof(inputs[0]), check_ok_then_error);
	exec1(&c, "{\"execute\":\"query-status\",\"id\":\"s\"}\n", "s");
	qmp_conn_destroy(&c);
	drop_msgs();
}

static void test_framing(void)
{
	struct fake_vm vm = { .state = QMP_STATE_RUNNING };
	struct qmp_conn c;
	const char *req = "{\"execute\":\"query-status\",\"id\":\"s\"}\r\n";
	size_t big = QMP_MAX_REQUEST + 4096, sent = 0;
	char *huge = malloc(big);

	CHECK(qmp_conn_init(&c, &fake_ops, &vm, &machine) == 0);
	negotiate(&c);
	/* One byte at a time. */
	for (const char *p = req; *p; p++) {
		size_t len;

		qmp_conn_feed(&c, p, 1);
		qmp_conn_output(&c, &len);
		CHECK((len != 0) == (p >= strchr(req, '}')));
	}
	CHECK(take(&c) == 1);
	ret_of(0, "s");
	/* Three in one buffer, no separators between two of them. */
	send_str(&c, "{\"execute\":\"query-block\",\"id\":\"1\"}{\"execute\":\"query-jobs\","
		 "\"id\":\"2\"}\n{\"execute\":\"query-iothreads\",\"id\":\"3\"}\n");
	CHECK(take(&c) == 3);
	ret_of(0, "1");
	ret_of(1, "2");
	ret_of(2, "3");
	/* Oversized: a string that never ends within the limit, in chunks. */
	memcpy(huge, "{\"execute\":\"", 12);
	memset(huge + 12, 'a', big - 12);
	huge[big - 1] = '\n';
	while (sent < big) {
		size_t n = big - sent < 65536 ? big - sent : 65536;

		qmp_conn_feed(&c, huge + sent, n);
		sent += n;
	}
	CHECK(take(&c) == 1 && !strcmp(error_class(0), "GenericError"));
	CHECK(nr_msgs && strstr(json_object_get_string(member(member(msgs[0], "error"), "desc")),
		     "too large"));
	exec1(&c, req, "s");
	free(huge);
	qmp_conn_destroy(&c);
	drop_msgs();
}

/* A client that never reads: output stops at the limit, broken is set. */
static void test_output_limit(void)
{
	struct fake_vm vm = { .state = QMP_STATE_RUNNING };
	struct qmp_conn c;
	const char *req = "{\"execute\":\"query-hotpluggable-cpus\"}";

	CHECK(qmp_conn_init(&c, &fake_ops, &vm, &machine) == 0);
	negotiate(&c);
	for (int i = 0; i < 100000 && !qmp_conn_broken(&c); i++)
		send_str(&c, req);
	CHECK(qmp_conn_broken(&c));
	CHECK(c.out_len <= QMP_MAX_OUTPUT);
	qmp_conn_destroy(&c);
}

static void check_error_then_ok(void)
{
	CHECK(!strcmp(error_class(0), "GenericError"));
	ret_of(1, "ok");
}

/* A number or literal split between reads: json-c checks a number against
 * the bytes of one call, so "2-" in one piece was an error and "2" then "-"
 * made {"id":2} (fuzz_qmp). Now the same reply however the bytes arrive. */
static void test_split_tokens(void)
{
	static const char *const bad[] = {
		"{\"execute\":\"query-status\",\"id\":2-}\n{\"execute\":\"query-status\",\"id\":\"ok\"}\n",
		"{\"execute\":\"query-status\",\"id\":tru}\n{\"execute\":\"query-status\",\"id\":\"ok\"}\n",
		"{\"execute\":\"query-status\",\"id\":1.5e+}\n{\"execute\":\"query-status\",\"id\":\"ok\"}\n",
	};
	struct fake_vm vm = { .state = QMP_STATE_RUNNING };
	struct qmp_conn c;

	CHECK(qmp_conn_init(&c, &fake_ops, &vm, &machine) == 0);
	negotiate(&c);
	each_way(&c, bad, sizeof(bad) / sizeof(bad[0]), check_error_then_ok);
	/* good numbers and strings with escapes, a byte at a time */
	for (int bytewise = 0; bytewise < 2; bytewise++) {
		send_maybe_bytewise(&c, "{\"execute\":\"query-status\",\"id\":-12.5e3}\n", bytewise);
		CHECK(take(&c) == 1 && json_object_get_double(member(msgs[0], "id")) == -12500.0);
		send_maybe_bytewise(&c, "{\"execute\":\"query-status\",\"id\":\"a\\\"1-}\"}\n",
				    bytewise);
		CHECK(take(&c) == 1 && !strcmp(json_object_get_string(member(msgs[0], "id")),
					       "a\"1-}"));
	}
	qmp_conn_destroy(&c);
	drop_msgs();
}

int main(void)
{
	test_start_sequence();
	test_runtime();
	test_reconnect_sequence();
	test_bad_input();
	test_null_request();
	test_garbage_after_request();
	test_split_tokens();
	test_framing();
	test_output_limit();
	return check_report("test_qmp");
}
