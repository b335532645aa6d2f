#include "vmm/qemu/standin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

#define STANDIN_TICK_MS 500

static void *standin_thread(void *arg)
{
	struct standin_vcpu *v = arg;
	struct standin *s = v->s;
	char name[16];

	snprintf(name, sizeof(name), "vcpu%u", v->index);
	pthread_setname_np(pthread_self(), name);
	mutex_lock(&s->lock);
	v->tid = gettid();
	pthread_cond_broadcast(&s->cond);
	while (!s->stopping) {
		struct timespec ts = clock_cond_deadline_ms(STANDIN_TICK_MS);

		if (s->paused) {
			mutex_cond_wait(&s->lock, &s->cond);
			continue;
		}
		if (mutex_cond_timedwait(&s->lock, &s->cond, &ts) != -ETIMEDOUT ||
		    v->index != 0 || s->paused || s->stopping || s->out_fd < 0)
			continue;
		{
			char line[80];
			int n = snprintf(line, sizeof(line),
					 "lagvisor stand-in: tick %u (no guest, no KVM)\r\n",
					 ++s->ticks);

			/* A full pty drops the line, as guest output would be. */
			if (write(s->out_fd, line, (size_t)n) < 0 && errno != EAGAIN)
				s->out_fd = -1;
		}
	}
	mutex_unlock(&s->lock);
	return NULL;
}

int standin_create(struct standin *s, unsigned nr_cpus, int out_fd)
{
	memset(s, 0, sizeof(*s));
	s->nr = nr_cpus;
	s->out_fd = out_fd;
	s->vcpus = calloc(nr_cpus, sizeof(*s->vcpus));
	if (!s->vcpus)
		return -ENOMEM;
	mutex_init(&s->lock);
	pthread_cond_init(&s->cond, NULL);
	for (unsigned i = 0; i < nr_cpus; i++)
		s->vcpus[i] = (struct standin_vcpu){ .s = s, .index = i };
	return 0;
}

int standin_run(struct standin *s)
{
	for (unsigned i = 0; i < s->nr; i++) {
		int r = pthread_create(&s->vcpus[i].thread, NULL, standin_thread, &s->vcpus[i]);

		if (r) {
			standin_stop(s, 1);
			break;
		}
		s->vcpus[i].started = true;
	}
	mutex_lock(&s->lock);
	while (!s->stopping)
		mutex_cond_wait(&s->lock, &s->cond);
	mutex_unlock(&s->lock);
	for (unsigned i = 0; i < s->nr; i++)
		if (s->vcpus[i].started)
			pthread_join(s->vcpus[i].thread, NULL);
	return s->exit_code;
}

void standin_pause(struct standin *s)
{
	mutex_lock(&s->lock);
	s->paused = true;
	pthread_cond_broadcast(&s->cond);
	mutex_unlock(&s->lock);
}

void standin_resume(struct standin *s)
{
	mutex_lock(&s->lock);
	s->paused = false;
	pthread_cond_broadcast(&s->cond);
	mutex_unlock(&s->lock);
}

void standin_stop(struct standin *s, int exit_code)
{
	mutex_lock(&s->lock);
	if (!s->stopping) {
		s->stopping = true;
		s->exit_code = exit_code;
	}
	pthread_cond_broadcast(&s->cond);
	mutex_unlock(&s->lock);
}

void standin_reset(struct standin *s)
{
	mutex_lock(&s->lock);
	s->ticks = 0;
	mutex_unlock(&s->lock);
}

int standin_vcpu_tids(struct standin *s, int *tids, unsigned n, int timeout_ms)
{
	struct timespec ts = clock_cond_deadline_ms(timeout_ms);
	int r = 0;

	mutex_lock(&s->lock);
	for (unsigned i = 0; i < n && !r; i++) {
		while (i < s->nr && !s->vcpus[i].tid && !s->stopping && !r)
			r = mutex_cond_timedwait(&s->lock, &s->cond, &ts) == -ETIMEDOUT ?
				-ETIMEDOUT : 0;
		if (!r && (i >= s->nr || !s->vcpus[i].tid))
			r = -EAGAIN;
		if (!r)
			tids[i] = s->vcpus[i].tid;
	}
	mutex_unlock(&s->lock);
	return r;
}

void standin_destroy(struct standin *s)
{
	if (!s->vcpus)
		return;
	free(s->vcpus);
	s->vcpus = NULL;
	pthread_cond_destroy(&s->cond);
	mutex_destroy(&s->lock);
}
