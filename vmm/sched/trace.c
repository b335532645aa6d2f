#include "vmm/sched/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/sched/sched_shm.h"

static void emit(struct trace_writer *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void emit(struct trace_writer *t, const char *fmt, ...)
{
	va_list ap;

	if (t->error)
		return;
	/* every event after the first starts with a comma */
	if (t->nr_events++ && fputs(",\n", t->f) < 0)
		t->error = -EIO;
	va_start(ap, fmt);
	if (vfprintf(t->f, fmt, ap) < 0)
		t->error = -EIO;
	va_end(ap);
}

/* "vCPU 3 (pid 1234)" or "entity 7" */
static void name_of(const struct trace_writer *t, uint32_t id, char *buf, size_t len)
{
	if (t->shm && id < t->shm->hdr->max_entities && t->shm->vcpus[id].pid)
		snprintf(buf, len, "vCPU %u (pid %d)", t->shm->vcpus[id].vcpu_index,
			 (int)t->shm->vcpus[id].pid);
	else
		snprintf(buf, len, "entity %u", id);
}

/* microseconds with ns precision, as trace viewers want */
#define US_FMT "%" PRIu64 ".%03u"
#define US(ns) (ns) / 1000, (unsigned)((ns) % 1000)

int trace_writer_open(struct trace_writer *t, const char *path, unsigned nr_pcpus,
		      const struct sched_shm *shm, char *err, size_t errlen)
{
	int r;

	memset(t, 0, sizeof(*t));
	t->curr = malloc(nr_pcpus * sizeof(*t->curr));
	t->since_ns = calloc(nr_pcpus, sizeof(*t->since_ns));
	if (!t->curr || !t->since_ns) {
		free(t->curr);
		free(t->since_ns);
		t->curr = NULL;
		t->since_ns = NULL;
		snprintf(err, errlen, "--trace %s: out of memory", path);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < nr_pcpus; i++)
		t->curr[i] = SCHED_NONE;
	t->f = fopen(path, "we");
	if (!t->f) {
		r = -errno;
		snprintf(err, errlen, "--trace %s: %s", path, strerror(-r));
		free(t->curr);
		free(t->since_ns);
		t->curr = NULL;
		t->since_ns = NULL;
		return r;
	}
	t->nr_pcpus = nr_pcpus;
	t->shm = shm;
	mutex_init(&t->lock);
	fputs("[\n", t->f);
	emit(t, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
	     "\"args\":{\"name\":\"lagvisor scheduling domain\"}}");
	for (unsigned i = 0; i < nr_pcpus; i++) {
		int cpu = shm ? shm->pcpus[i].host_cpu : -1;

		emit(t, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
		     "\"args\":{\"name\":\"pCPU %u (host CPU %d)\"}}", i, i, cpu);
	}
	return t->error;
}

/* The slice that ran on pcpu until now_ns, as a complete event. */
static void end_slice(struct trace_writer *t, unsigned pcpu, uint64_t now_ns)
{
	char name[64];
	uint32_t id = t->curr[pcpu];
	uint64_t start = t->since_ns[pcpu], dur = now_ns > start ? now_ns - start : 0;

	if (id == SCHED_NONE)
		return;
	name_of(t, id, name, sizeof(name));
	emit(t, "{\"name\":\"%s\",\"cat\":\"run\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,"
	     "\"ts\":" US_FMT ",\"dur\":" US_FMT ",\"args\":{\"entity\":%u}}",
	     name, pcpu, US(start), US(dur), id);
	t->curr[pcpu] = SCHED_NONE;
}

/* An instant event on the pCPU's track; args: extra JSON members, each
 * starting with a comma. */
static void instant(struct trace_writer *t, const char *what, const struct sched_trace_event *ev,
		    const char *args)
{
	char name[64];

	name_of(t, ev->entity, name, sizeof(name));
	emit(t, "{\"name\":\"%s\",\"cat\":\"sched\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,"
	     "\"tid\":%u,\"ts\":" US_FMT ",\"args\":{\"vcpu\":\"%s\",\"entity\":%u%s}}",
	     what, ev->pcpu, US(ev->now_ns), name, ev->entity, args);
}

void trace_writer_event(void *arg, const struct sched_trace_event *ev)
{
	static const char *const how[] = { "already", "enqueued", "listed" };
	struct trace_writer *t = arg;
	char args[128];

	if (!t->f || ev->pcpu >= t->nr_pcpus)
		return;
	mutex_lock(&t->lock);
	switch (ev->type) {
	case SCHED_TRACE_SWITCH:
		end_slice(t, ev->pcpu, ev->now_ns);
		t->curr[ev->pcpu] = ev->entity;
		t->since_ns[ev->pcpu] = ev->now_ns;
		break;
	case SCHED_TRACE_WAKE:
		snprintf(args, sizeof(args), ",\"how\":\"%s\"",
			 ev->arg0 >= 0 && ev->arg0 < 3 ? how[ev->arg0] : "?");
		instant(t, "wakeup", ev, args);
		break;
	case SCHED_TRACE_MIGRATE:
		snprintf(args, sizeof(args), ",\"from\":%u,\"to\":%u", ev->other, ev->pcpu);
		instant(t, "migrate", ev, args);
		break;
	case SCHED_TRACE_DEQUEUE:
		if (ev->arg1 != 1 && ev->arg1 != 2)
			break;                 /* a move, not a sleep */
		snprintf(args, sizeof(args), ",\"lag\":%" PRId64 ",\"delayed\":%s",
			 ev->arg0, ev->arg1 == 2 ? "true" : "false");
		instant(t, "block", ev, args);
		break;
	case SCHED_TRACE_PREEMPT:
		snprintf(args, sizeof(args), ",\"curr\":%u", ev->other);
		instant(t, "preempt", ev, args);
		break;
	default:
		break;
	}
	mutex_unlock(&t->lock);
}

int trace_writer_close(struct trace_writer *t, uint64_t now_ns)
{
	int r;

	if (!t->f)
		return 0;
	mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->nr_pcpus; i++)
		end_slice(t, i, now_ns);
	if (fputs("\n]\n", t->f) < 0 && !t->error)
		t->error = -EIO;
	if (fclose(t->f) && !t->error)
		t->error = -errno;
	t->f = NULL;
	mutex_unlock(&t->lock);
	mutex_destroy(&t->lock);
	free(t->curr);
	free(t->since_ns);
	t->curr = NULL;
	t->since_ns = NULL;
	r = t->error;
	return r;
}
