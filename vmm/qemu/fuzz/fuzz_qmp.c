/*
 * libFuzzer target: the QMP protocol (vmm/qemu/qmp.c) as qmp_server.c
 * drives it for one client: greeting, client bytes arriving in pieces of
 * any size, output drained a part at a time, events from the VM injected
 * between pieces, backend hooks that fail.
 *
 * Input: u32 control word (seeds the split points, drains, events and
 * backend failures), then the client's byte stream.
 *
 * Beyond ASan/UBSan and leaks: (1) how the stream is split does not
 * matter: fed in one piece and fed in random pieces (no events, same
 * backend), the output is byte for byte the same; (2) everything the
 * server writes is a sequence of JSON objects each ended by "\r\n".
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/fuzz_target.h"
#include "vmm/qemu/qmp.h"

struct fake_vm {
	enum qmp_run_state state;
	uint32_t fail;                  /* bit per hook: return -EIO */
	unsigned quits;
};

static enum qmp_run_state vm_state(void *o) { return ((struct fake_vm *)o)->state; }

static int vm_set(void *o, unsigned bit, enum qmp_run_state to)
{
	struct fake_vm *vm = o;

	if (vm->fail & (1u << bit))
		return -EIO;
	if ((int)to >= 0)
		vm->state = to;
	return 0;
}

static int vm_stop(void *o) { return vm_set(o, 0, QMP_STATE_PAUSED); }
static int vm_cont(void *o) { return vm_set(o, 1, QMP_STATE_RUNNING); }
static int vm_powerdown(void *o) { return vm_set(o, 2, (enum qmp_run_state)-1); }
static int vm_reset(void *o) { return vm_set(o, 3, (enum qmp_run_state)-1); }
static void vm_quit(void *o) { ((struct fake_vm *)o)->quits++; }

static int vm_tids(void *o, int *tids, unsigned n)
{
	if (((struct fake_vm *)o)->fail & (1u << 4))
		return -EAGAIN;
	for (unsigned i = 0; i < n; i++)
		tids[i] = 1000 + (int)i;
	return 0;
}

static const struct qmp_backend_ops vm_ops = {
	.state = vm_state, .stop = vm_stop, .cont = vm_cont, .powerdown = vm_powerdown,
	.reset = vm_reset, .quit = vm_quit, .vcpu_tids = vm_tids,
};

static const struct qmp_machine machine = {
	.nr_cpus = 4,
	.mem_bytes = 1ull << 30,
	.name = "fuzz",
	.uuid = "c7a5fdbd-edaf-9455-926a-d65c16db1809",
	.nr_chardevs = 2,
	.chardevs = { { "charmonitor", "unix:/run/mon.sock,server=on" },
		      { "charserial0", "pty:/dev/pts/7" } },
	.nr_devices = 2,
	.devices = { { "serial0", "isa-serial" }, { "balloon0", "virtio-balloon-pci" } },
};

static int64_t fixed_now(void) { return 1700000000123456; }

static uint32_t rng;

static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* Drained output, kept for the well-formedness check. */
struct sink {
	char *buf;
	size_t len, cap;
};

static void sink_add(struct sink *s, const char *p, size_t n)
{
	if (s->len + n + 1 > s->cap) {
		s->cap = (s->len + n + 1) * 2;
		s->buf = realloc(s->buf, s->cap);
		FZ_ASSERT(s->buf);
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = 0;
}

static void drain(struct qmp_conn *c, struct sink *s, size_t max)
{
	size_t len;
	const char *out = qmp_conn_output(c, &len);

	if (max > len)
		max = len;
	sink_add(s, out, max);
	qmp_conn_consume(c, max);
}

/* Every message: a JSON object, then "\r\n"; nothing after the last. */
static void check_messages(struct sink *s)
{
	char *p = s->buf, *nl;

	if (!p)
		return;
	while ((nl = strstr(p, "\r\n"))) {
		struct json_object *o;

		*nl = 0;
		o = json_tokener_parse(p);
		FZ_ASSERT(o && json_object_is_type(o, json_type_object));
		json_object_put(o);
		p = nl + 2;
	}
	FZ_ASSERT(*p == 0);
}

static void conn_open(struct qmp_conn *c, struct fake_vm *vm, uint32_t fail)
{
	memset(vm, 0, sizeof(*vm));
	vm->state = QMP_STATE_PRELAUNCH;
	vm->fail = fail;
	FZ_ASSERT(qmp_conn_init(c, &vm_ops, vm, &machine) == 0);
	c->now_us = fixed_now;
	qmp_conn_greet(c);
}

static const char *const events[] = {
	"SHUTDOWN", "STOP", "RESUME", "RESET", "POWERDOWN", "GUEST_PANICKED", "DEVICE_DELETED",
};

static struct json_object *event_data(uint32_t r)
{
	struct json_object *d;

	if (r & 1)
		return NULL;
	d = json_object_new_object();
	json_object_object_add(d, "guest", json_object_new_boolean(r & 2));
	json_object_object_add(d, "reason", json_object_new_string((r & 4) ? "host-signal"
									    : "guest-shutdown"));
	return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	uint32_t ctl = fz_u32(&in);
	const char *stream = (const char *)in.p;
	size_t n = in.len, off, whole_len, split_len;
	struct qmp_conn a, b;
	struct fake_vm va, vb;
	struct sink sa = { 0 }, sb = { 0 };
	const char *out;

	/* (1) in one piece, then in random pieces: the same output */
	conn_open(&a, &va, ctl >> 24 & 0x1f);
	qmp_conn_feed(&a, stream, n);
	out = qmp_conn_output(&a, &whole_len);
	sink_add(&sa, out ? out : "", whole_len);

	rng = ctl | 1;
	conn_open(&b, &vb, ctl >> 24 & 0x1f);
	for (off = 0; off < n;) {
		size_t piece = 1 + next() % ((next() & 3) ? 8 : 256);

		if (piece > n - off)
			piece = n - off;
		qmp_conn_feed(&b, stream + off, piece);
		off += piece;
	}
	out = qmp_conn_output(&b, &split_len);
	sink_add(&sb, out ? out : "", split_len);
	if (!qmp_conn_broken(&a) && !qmp_conn_broken(&b)) {
		if (sa.len != sb.len || memcmp(sa.buf, sb.buf, sa.len))
			fprintf(stderr, "in one piece:\n%s\nin pieces:\n%s\n", sa.buf, sb.buf);
		FZ_ASSERT(sa.len == sb.len);
		FZ_ASSERT(!memcmp(sa.buf, sb.buf, sa.len));
		FZ_ASSERT(va.state == vb.state && va.quits == vb.quits);
	}
	check_messages(&sa);
	qmp_conn_destroy(&a);
	qmp_conn_destroy(&b);
	free(sb.buf);
	sb = (struct sink){ 0 };
	free(sa.buf);

	/* (2) the server's life: pieces, drains, events, hook failures */
	rng = ~ctl | 1;
	conn_open(&b, &vb, 0);
	for (off = 0; off < n && !qmp_conn_broken(&b);) {
		size_t piece = 1 + next() % 64;
		uint32_t r = next();

		if (piece > n - off)
			piece = n - off;
		qmp_conn_feed(&b, stream + off, piece);
		off += piece;
		if (r & 1)
			drain(&b, &sb, (r >> 8) % 512);
		if ((r & 0x30) == 0x30)
			qmp_conn_event(&b, events[(r >> 20) % (sizeof(events) / sizeof(events[0]))],
				       event_data(r >> 24));
		if ((r & 0xc0) == 0xc0)
			vb.fail = r >> 27;
		if ((r & 0x300) == 0x300)
			vb.state = (enum qmp_run_state)((r >> 12) % 5);
	}
	drain(&b, &sb, SIZE_MAX);
	if (!qmp_conn_broken(&b))
		check_messages(&sb);
	qmp_conn_destroy(&b);
	free(sb.buf);
	return 0;
}
