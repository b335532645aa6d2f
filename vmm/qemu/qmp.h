/*
 * The QMP protocol (QEMU Machine Protocol) for one client connection, as
 * libvirt 9.0 uses it (vmm/qemu/README.md): bytes in, bytes out, no
 * sockets and no threads here, so that it is tested without either. The
 * socket glue is qmp_server.
 *
 * Input is a stream of JSON objects {"execute":C,"arguments":{...},"id":X}
 * parsed with json-c as strict JSON (no comments, no single quotes), each
 * request ending at its closing brace however the bytes arrive; each gets exactly one reply {"return":...,"id":X} or
 * {"error":{"class":K,"desc":D},"id":X}. Malformed JSON and requests over
 * QMP_MAX_REQUEST bytes get a GenericError reply; the parser then skips to
 * the next newline (libvirt ends every request with one) and the
 * connection goes on. Input that does not start with '{' (null, 1, junk)
 * gets one GenericError and is dropped up to the next '{' or newline.
 * The replies do not depend on how the bytes were split: a number or
 * literal is held back until what ends it arrives (json-c checks them per
 * call). Events go out only after qmp_capabilities, as in QEMU.
 *
 * What commands act on (the VM) is reached through struct qmp_backend_ops.
 */
#ifndef LAGVISOR_VMM_QEMU_QMP_H
#define LAGVISOR_VMM_QEMU_QMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;
struct json_tokener;
struct kvm_stat;

/* The QEMU version libvirt is told it talks to: the one whose command
 * line and QMP the contract was observed with. */
#define QMP_QEMU_MAJOR 7
#define QMP_QEMU_MINOR 2
#define QMP_QEMU_MICRO 0

#define QMP_MAX_REQUEST (1u << 20)       /* bytes in one request */
#define QMP_MAX_OUTPUT  (8u << 20)       /* unread output before giving up */
#define QMP_MAX_CHARDEVS 8
#define QMP_MAX_DEVICES 16

/* QEMU's RunState names that libvirt maps to domain states. */
enum qmp_run_state {
	QMP_STATE_PRELAUNCH, QMP_STATE_RUNNING, QMP_STATE_PAUSED,
	QMP_STATE_SHUTDOWN, QMP_STATE_INTERNAL_ERROR,
};

/*
 * The VM side. Every hook is called in the thread feeding the connection
 * and returns 0 or -errno (the reply is then a GenericError with
 * strerror). The protocol emits the events that belong to a command
 * (STOP, RESUME, POWERDOWN, RESET, SHUTDOWN for quit) itself; events with
 * other causes come from the owner through qmp_conn_event.
 */
struct qmp_backend_ops {
	enum qmp_run_state (*state)(void *opaque);
	int (*stop)(void *opaque);
	int (*cont)(void *opaque);
	int (*powerdown)(void *opaque);
	int (*reset)(void *opaque);
	/* After the reply to quit is queued: end the process once flushed. */
	void (*quit)(void *opaque);
	/* Host thread IDs of vCPUs 0..n-1 into tids. 0 or -errno. */
	int (*vcpu_tids)(void *opaque, int *tids, unsigned n);
	/* Optional: KVM's statistics of the VM (vcpu -1) or of vCPU `vcpu`,
	 * fn once per statistic (vmm/kvm_stats_all.h). 0 or -errno (then
	 * query-stats reports none for it, as for a VM without KVM). */
	int (*kvm_stats)(void *opaque, int vcpu,
			 void (*fn)(void *arg, const struct kvm_stat *s), void *arg);
};

/* Facts about the machine that the queries report. */
struct qmp_machine {
	unsigned nr_cpus;
	unsigned nr_max_cpus;                /* -smp maxcpus; <= nr_cpus: as nr_cpus */
	uint64_t mem_bytes;
	const char *name;                    /* NULL: none */
	const char *uuid;                    /* NULL: none */
	unsigned nr_chardevs;
	struct {
		const char *label;               /* chardev id */
		const char *filename;            /* "pty:/dev/pts/3", "file", ... */
	} chardevs[QMP_MAX_CHARDEVS];
	unsigned nr_devices;
	struct {
		const char *id;
		const char *driver;
	} devices[QMP_MAX_DEVICES];
};

struct qmp_conn {
	const struct qmp_backend_ops *ops;
	void *opaque;
	const struct qmp_machine *machine;
	int64_t (*now_us)(void);             /* event timestamps; wall clock */
	struct json_tokener *tok;
	bool negotiated;                     /* qmp_capabilities done */
	bool skipping;                       /* dropping input up to a newline */
	bool started;                        /* a request's '{' was seen */
	bool junk;                           /* dropping up to a '{' or newline */
	bool broken;                         /* out of memory or output limit */
	size_t pending;                      /* bytes of the unfinished request */
	/* Where json-c's tokens can be split (qmp_conn_feed): inside a
	 * string of the current request, after a backslash there; the
	 * number or literal bytes held back from json-c until what follows
	 * them arrives. */
	bool in_string, escaped;
	char *carry;
	size_t carry_len, carry_cap;
	char *out;
	size_t out_len, out_cap;
};

/* 0 or -ENOMEM. `machine` and `opaque` are kept by pointer. */
int qmp_conn_init(struct qmp_conn *c, const struct qmp_backend_ops *ops, void *opaque,
		  const struct qmp_machine *machine);

/* Queue the greeting; call once when a client connects. */
void qmp_conn_greet(struct qmp_conn *c);

/* Process client bytes; replies and events are queued for output. */
void qmp_conn_feed(struct qmp_conn *c, const char *buf, size_t len);

/*
 * Queue event `name` with `data` (owned by the call; NULL: no data) if
 * the client has negotiated capabilities, else drop it.
 */
void qmp_conn_event(struct qmp_conn *c, const char *name, struct json_object *data);

/* Queued output: what to write, and how much of it was written. */
const char *qmp_conn_output(const struct qmp_conn *c, size_t *len);
void qmp_conn_consume(struct qmp_conn *c, size_t n);

/* The connection cannot go on (output limit, no memory): close it. */
bool qmp_conn_broken(const struct qmp_conn *c);

void qmp_conn_destroy(struct qmp_conn *c);

const char *qmp_run_state_name(enum qmp_run_state s);

#endif
