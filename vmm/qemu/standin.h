/*
 * A stand-in machine for the QEMU front: vCPU threads with the names and
 * the pause/resume/stop behaviour of lagvisor's, but no KVM and no guest;
 * vCPU 0 prints a numbered line to the serial port every 500 ms. It exists
 * so that libvirt's whole management path (QMP, pty console, vCPU thread
 * IDs, cgroups and pinning, suspend/resume, shutdown, destroy, a libvirtd
 * restart) can be tested on hosts without /dev/kvm. Chosen with
 * `-lagvisor machine=standin`; never used otherwise.
 */
#ifndef LAGVISOR_VMM_QEMU_STANDIN_H
#define LAGVISOR_VMM_QEMU_STANDIN_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/mutex.h"

struct standin;

struct standin_vcpu {
	struct standin *s;
	unsigned index;
	pthread_t thread;
	bool started;
	pid_t tid;                  /* 0 until the thread has run */
};

struct standin {
	unsigned nr;
	int out_fd;                 /* serial output, -1: none */
	struct mutex lock;
	pthread_cond_t cond;
	bool paused, stopping;
	int exit_code;
	unsigned ticks;
	struct standin_vcpu *vcpus;
};

int standin_create(struct standin *s, unsigned nr_cpus, int out_fd);
/* Start the threads, wait for standin_stop, join them; the exit code. */
int standin_run(struct standin *s);
void standin_pause(struct standin *s);
void standin_resume(struct standin *s);
void standin_stop(struct standin *s, int exit_code);
/* Power-on state again (the tick count restarts); threads are kept. */
void standin_reset(struct standin *s);
int standin_vcpu_tids(struct standin *s, int *tids, unsigned n, int timeout_ms);
void standin_destroy(struct standin *s);

#endif
