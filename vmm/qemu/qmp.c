#include "vmm/qemu/qmp.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "vmm/qemu/qmp_commands.h"

static int64_t qmp_wall_us(void)
{
	return (int64_t)(clock_read_ns(CLOCK_REALTIME) / 1000);
}

int qmp_conn_init(struct qmp_conn *c, const struct qmp_backend_ops *ops, void *opaque,
		  const struct qmp_machine *machine)
{
	memset(c, 0, sizeof(*c));
	c->ops = ops;
	c->opaque = opaque;
	c->machine = machine;
	c->now_us = qmp_wall_us;
	c->tok = json_tokener_new();
	if (!c->tok)
		return -ENOMEM;
	/* Strict JSON, the request ending at its last '}' as in QEMU's
	 * parser: by default json-c reads on through what follows it as
	 * whitespace and comments, and a '/' there (bad input after a good
	 * request read in the same piece) made it drop the good request,
	 * which then got no reply. */
	json_tokener_set_flags(c->tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
	return 0;
}

void qmp_conn_destroy(struct qmp_conn *c)
{
	if (c->tok)
		json_tokener_free(c->tok);
	free(c->out);
	free(c->carry);
	memset(c, 0, sizeof(*c));
}

const char *qmp_run_state_name(enum qmp_run_state s)
{
	static const char *const names[] = {
		[QMP_STATE_PRELAUNCH] = "prelaunch",
		[QMP_STATE_RUNNING] = "running",
		[QMP_STATE_PAUSED] = "paused",
		[QMP_STATE_SHUTDOWN] = "shutdown",
		[QMP_STATE_INTERNAL_ERROR] = "internal-error",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "debug";
}

/* Append one message and QMP's "\r\n" separator; takes `msg`. */
static void qmp_send(struct qmp_conn *c, struct json_object *msg)
{
	const char *s;
	size_t len, need;

	if (!msg) {
		c->broken = true;
		return;
	}
	s = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	len = s ? strlen(s) : 0;
	need = c->out_len + len + 2;
	if (!s || need > QMP_MAX_OUTPUT) {
		c->broken = true;
		json_object_put(msg);
		return;
	}
	if (need > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		char *p;

		while (cap < need)
			cap *= 2;
		p = realloc(c->out, cap);
		if (!p) {
			c->broken = true;
			json_object_put(msg);
			return;
		}
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, s, len);
	memcpy(c->out + c->out_len + len, "\r\n", 2);
	c->out_len = need;
	json_object_put(msg);
}

const char *qmp_conn_output(const struct qmp_conn *c, size_t *len)
{
	*len = c->out_len;
	return c->out;
}

void qmp_conn_consume(struct qmp_conn *c, size_t n)
{
	if (n >= c->out_len) {
		c->out_len = 0;
		return;
	}
	memmove(c->out, c->out + n, c->out_len - n);
	c->out_len -= n;
}

bool qmp_conn_broken(const struct qmp_conn *c)
{
	return c->broken;
}

void qmp_conn_greet(struct qmp_conn *c)
{
	struct json_object *qemu = json_object_new_object();
	struct json_object *version = json_object_new_object();
	struct json_object *qmp = json_object_new_object();
	struct json_object *msg = json_object_new_object();

	json_object_object_add(qemu, "micro", json_object_new_int(QMP_QEMU_MICRO));
	json_object_object_add(qemu, "minor", json_object_new_int(QMP_QEMU_MINOR));
	json_object_object_add(qemu, "major", json_object_new_int(QMP_QEMU_MAJOR));
	json_object_object_add(version, "qemu", qemu);
	json_object_object_add(version, "package",
			       json_object_new_string("lagvisor-" LAGVISOR_VERSION));
	json_object_object_add(qmp, "version", version);
	/* No out-of-band execution: libvirt does not need it. */
	json_object_object_add(qmp, "capabilities", json_object_new_array());
	json_object_object_add(msg, "QMP", qmp);
	qmp_send(c, msg);
}

void qmp_conn_event(struct qmp_conn *c, const char *name, struct json_object *data)
{
	struct json_object *msg, *ts;
	int64_t us;

	if (!c->negotiated) {
		json_object_put(data);
		return;
	}
	us = c->now_us();
	msg = json_object_new_object();
	ts = json_object_new_object();
	json_object_object_add(ts, "seconds", json_object_new_int64(us / 1000000));
	json_object_object_add(ts, "microseconds", json_object_new_int64(us % 1000000));
	json_object_object_add(msg, "timestamp", ts);
	json_object_object_add(msg, "event", json_object_new_string(name));
	if (data)
		json_object_object_add(msg, "data", data);
	qmp_send(c, msg);
}

int qmp_fail(struct qmp_error *err, const char *cls, const char *fmt, ...)
{
	va_list ap;

	err->cls = cls;
	va_start(ap, fmt);
	vsnprintf(err->desc, sizeof(err->desc), fmt, ap);
	va_end(ap);
	return -1;
}

/* Reply with `ret` (taken; NULL: {}) or the error, echoing `id`. */
static void qmp_reply(struct qmp_conn *c, struct json_object *id, struct json_object *ret,
		      const struct qmp_error *err)
{
	struct json_object *msg = json_object_new_object();

	if (err) {
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "class", json_object_new_string(err->cls));
		json_object_object_add(e, "desc", json_object_new_string(err->desc));
		json_object_object_add(msg, "error", e);
	} else {
		json_object_object_add(msg, "return", ret ? ret : json_object_new_object());
	}
	if (id)
		json_object_object_add(msg, "id", json_object_get(id));
	qmp_send(c, msg);
}

/* Check the request's shape as QEMU does; find the command. */
static int qmp_check_request(struct qmp_conn *c, struct json_object *req,
			     const struct qmp_command **cmd, struct json_object **args,
			     struct qmp_error *err)
{
	struct json_object *exec = NULL;
	const char *name;

	if (!json_object_is_type(req, json_type_object))
		return qmp_fail(err, "GenericError", "QMP input must be a JSON object");
	json_object_object_foreach(req, key, val) {
		if (!strcmp(key, "execute")) {
			exec = val;
		} else if (!strcmp(key, "arguments")) {
			if (!json_object_is_type(val, json_type_object))
				return qmp_fail(err, "GenericError", "QMP input member "
						"'arguments' must be an object");
			*args = val;
		} else if (!strcmp(key, "exec-oob")) {
			return qmp_fail(err, "GenericError", "QMP input member 'exec-oob' "
					"is not supported (no out-of-band capability)");
		} else if (strcmp(key, "id")) {
			return qmp_fail(err, "GenericError",
					"QMP input member '%s' is unexpected", key);
		}
	}
	if (!exec)
		return qmp_fail(err, "GenericError", "QMP input lacks member 'execute'");
	if (!json_object_is_type(exec, json_type_string))
		return qmp_fail(err, "GenericError",
				"QMP input member 'execute' must be a string");
	name = json_object_get_string(exec);
	if (!c->negotiated && strcmp(name, "qmp_capabilities"))
		return qmp_fail(err, "CommandNotFound", "Expecting capabilities "
				"negotiation with 'qmp_capabilities'");
	if (c->negotiated && !strcmp(name, "qmp_capabilities"))
		return qmp_fail(err, "CommandNotFound", "Capabilities negotiation is "
				"already complete, command ignored");
	*cmd = qmp_command_find(name);
	if (!*cmd && qmp_unsupported_why(name))
		return qmp_fail(err, "GenericError", "lagvisor-qemu does not support "
				"%.100s: no %s", name, qmp_unsupported_why(name));
	if (!*cmd)
		return qmp_fail(err, "CommandNotFound", "The command %.200s has not been "
				"found", name);
	return 0;
}

static void qmp_dispatch(struct qmp_conn *c, struct json_object *req)
{
	const struct qmp_command *cmd = NULL;
	struct json_object *args = NULL, *ret = NULL, *id = NULL;
	struct qmp_error err;

	if (json_object_is_type(req, json_type_object))
		json_object_object_get_ex(req, "id", &id);
	if (qmp_check_request(c, req, &cmd, &args, &err) || cmd->fn(c, args, &ret, &err)) {
		qmp_reply(c, id, NULL, &err);
		return;
	}
	qmp_reply(c, id, ret, NULL);
	if (!strcmp(cmd->name, "quit") && c->ops->quit)
		c->ops->quit(c->opaque);
}

static void qmp_parse_error(struct qmp_conn *c, const char *what)
{
	struct qmp_error err;

	qmp_fail(&err, "GenericError", "%s", what);
	qmp_reply(c, NULL, NULL, &err);
	json_tokener_reset(c->tok);
	c->pending = 0;
	c->started = false;
	c->in_string = c->escaped = false;
	c->skipping = true;
}

/*
 * Before json-c sees a request: skip the whitespace between requests and
 * refuse one that does not start with '{', up to the next '{' or newline
 * (one error for `null` or `1` before a request on the same line, as a
 * bare value). A request must be an object, and json-c's answer for a bare
 * value depends on where the input was split: "1" at the end of one read
 * is a complete number, "1-x" in one read a bad one (fuzz_qmp found it:
 * the same bytes in other pieces gave other replies). Returns the bytes
 * skipped; c->started once a '{' is next.
 */
static size_t request_start(struct qmp_conn *c, const char *buf, size_t len)
{
	size_t i = 0;

	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
		i++;
	if (i == len)
		return i;
	if (buf[i] == '{') {
		c->started = true;
	} else {
		qmp_parse_error(c, "QMP input must be a JSON object");
		c->skipping = false;
		c->junk = true;
	}
	return i;
}

/*
 * How many of the first `len` bytes json-c may see now. json-c validates a
 * number against the bytes of the current call: "2-" in one call is "number
 * expected", but "2" ending one call and "-" starting the next made {"id":2}
 * (fuzz_qmp found it). So a number or literal (true, false, null) is never
 * split: the trailing run of such bytes outside a string is held back until
 * a byte that ends it arrives. The string state of the bytes let through is
 * kept in c; strings themselves json-c takes in any pieces.
 */
static size_t feedable(struct qmp_conn *c, const char *buf, size_t len)
{
	bool in_string = c->in_string, escaped = c->escaped;
	bool run_in_string = in_string, run_escaped = escaped;
	size_t run_start = 0;

	for (size_t i = 0; i < len; i++) {
		char ch = buf[i];
		bool token = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
			     (ch >= 'A' && ch <= 'Z') || ch == '.' || ch == '+' || ch == '-';

		if (in_string) {
			if (escaped)
				escaped = false;
			else if (ch == '\\')
				escaped = true;
			else if (ch == '"')
				in_string = false;
		} else if (ch == '"') {
			in_string = true;
		} else if (token) {
			continue;       /* part of a run that may be held back */
		}
		run_start = i + 1;
		run_in_string = in_string;
		run_escaped = escaped;
	}
	c->in_string = run_in_string;
	c->escaped = run_escaped;
	return run_start;
}

static int carry_add(struct qmp_conn *c, const char *buf, size_t len)
{
	if (c->carry_len + len > c->carry_cap) {
		size_t cap = (c->carry_len + len) * 2;
		char *n = realloc(c->carry, cap);

		if (!n)
			return -ENOMEM;
		c->carry = n;
		c->carry_cap = cap;
	}
	memcpy(c->carry + c->carry_len, buf, len);
	c->carry_len += len;
	return 0;
}

static void feed_stream(struct qmp_conn *c, const char *buf, size_t len);

void qmp_conn_feed(struct qmp_conn *c, const char *buf, size_t len)
{
	char *joined;
	size_t n;

	if (!c->carry_len) {
		feed_stream(c, buf, len);
		return;
	}
	/* held-back bytes first, as if they had come with these */
	n = c->carry_len;
	if (carry_add(c, buf, len)) {
		c->broken = true;
		return;
	}
	joined = c->carry;
	c->carry = NULL;
	c->carry_len = c->carry_cap = 0;
	feed_stream(c, joined, n + len);
	free(joined);
}

static void feed_stream(struct qmp_conn *c, const char *buf, size_t len)
{
	while (len && !c->broken) {
		struct json_object *obj;
		enum json_tokener_error jerr;
		size_t used, chunk, avail;

		if (c->skipping) {
			const char *nl = memchr(buf, '\n', len);

			if (!nl)
				return;
			c->skipping = false;
			len -= (size_t)(nl + 1 - buf);
			buf = nl + 1;
			continue;
		}
		if (c->junk) {
			for (used = 0; used < len && buf[used] != '{' && buf[used] != '\n'; used++)
				;
			if (used < len) {
				c->junk = false;
				used += buf[used] == '\n';
			}
			buf += used;
			len -= used;
			continue;
		}
		if (!c->started) {
			used = request_start(c, buf, len);
			buf += used;
			len -= used;
			continue;
		}
		/* json-c takes an int length; requests are far smaller anyway. */
		chunk = len > QMP_MAX_REQUEST ? QMP_MAX_REQUEST : len;
		avail = feedable(c, buf, chunk);
		if (!avail) {
			if (chunk == len) {
				/* a number or literal that may go on: wait */
				if (carry_add(c, buf, len))
					c->broken = true;
				return;
			}
			avail = chunk;  /* a 1 MiB token: too large anyway */
		}
		chunk = avail;
		obj = json_tokener_parse_ex(c->tok, buf, (int)chunk);
		jerr = json_tokener_get_error(c->tok);
		used = obj || jerr != json_tokener_continue ?
			json_tokener_get_parse_end(c->tok) : chunk;
		if (used > chunk)
			used = chunk;
		/* (A bare null, json-c's NULL with success, no longer comes
		 * here: request_start refuses what is not an object.) */
		if (obj || jerr == json_tokener_success) {
			c->pending = 0;
			c->started = false;
			c->in_string = c->escaped = false;
			json_tokener_reset(c->tok);
			qmp_dispatch(c, obj);
			json_object_put(obj);
		} else if (jerr == json_tokener_continue) {
			c->pending += used;
			if (c->pending > QMP_MAX_REQUEST) {
				/* Input after the chunk's last newline starts afresh. */
				const char *nl = memrchr(buf, '\n', used);

				qmp_parse_error(c, "JSON request too large (limit 1 MiB)");
				if (nl) {
					c->skipping = false;
					used = (size_t)(nl + 1 - buf);
				}
			}
		} else {
			char what[128];

			snprintf(what, sizeof(what), "JSON parse error, %s",
				 json_tokener_error_desc(jerr));
			/* Skip from the bad byte: the rest of its line belongs
			 * to the bad request. */
			qmp_parse_error(c, what);
		}
		buf += used;
		len -= used;
	}
}
