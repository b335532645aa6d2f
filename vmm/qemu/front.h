/*
 * The QEMU front's runtime: one lagvisor VM driven the way QEMU is driven
 * by libvirt. It owns the parsed launch, the serial chardev, an I/O
 * thread of its own for the QMP monitor and the termination signals, and
 * the VM, which it may rebuild (system_reset) while the process and the
 * monitor stay.
 *
 * States (QMP run states) and what moves between them:
 *   prelaunch --cont--> running <--stop/cont--> paused
 *   running/paused --guest poweroff, debug-exit, system_powerdown-->
 *       SHUTDOWN event; exit 0, or with -no-shutdown STOP and "shutdown"
 *   shutdown --system_reset--> prelaunch (paused)
 *   running --system_reset--> running
 * A reset keeps the vCPU threads (libvirt knows their IDs) when the
 * machine could record its power-on state at the first cont (-S, in-kernel
 * irqchip: vm_reset.h); otherwise the VM is rebuilt with new threads. With
 * -no-shutdown and such a machine, system_powerdown only pauses it.
 *   any --SIGTERM/SIGINT/SIGHUP--> SHUTDOWN host-signal, exit 0
 *   any --quit--> SHUTDOWN host-qmp-quit, exit 0
 *   a VM failure (KVM error, triple fault) --> exit 1 without SHUTDOWN,
 *       which libvirt reports as "shut off (crashed)"
 *
 * Locking: front.lock guards state, req and vm_live. Lock order:
 * the QMP server's lock, then front.lock, then the VM's lock.
 */
#ifndef LAGVISOR_VMM_QEMU_FRONT_H
#define LAGVISOR_VMM_QEMU_FRONT_H

#include <pthread.h>
#include <stdbool.h>

#include "common/mutex.h"
#include "vmm/iothread.h"
#include "vmm/qemu/chardev.h"
#include "vmm/qemu/qemu_cmdline.h"
#include "vmm/qemu/qmp.h"
#include "vmm/qemu/qmp_server.h"
#include "vmm/qemu/standin.h"
#include "vmm/vm.h"

/* Why the front itself stopped the VM. */
enum front_req { FRONT_REQ_NONE, FRONT_REQ_POWERDOWN, FRONT_REQ_RESET,
		 FRONT_REQ_QUIT, FRONT_REQ_SIGNAL };

struct front;

/* The machine the front drives: lagvisor's VM, or the stand-in (tests). */
struct front_machine_ops {
	/* Create it for cfg; 0 or the process exit code (message logged). */
	int (*build)(struct front *f, struct vm_config *cfg);
	/* Run until stopped; the exit code. */
	int (*run)(struct front *f);
	int (*pause)(struct front *f);
	void (*resume)(struct front *f);
	void (*stop)(struct front *f);
	int (*vcpu_tids)(struct front *f, int *tids, unsigned n, int timeout_ms);
	/* Record the power-on state (paused, before the guest first ran). */
	int (*snapshot)(struct front *f);
	/* Back to that state keeping the vCPU threads; left paused. */
	int (*reset)(struct front *f);
	void (*destroy)(struct front *f);
};

struct front {
	const struct front_machine_ops *m;
	struct qemu_launch *launch;
	struct chardev_host serial;
	struct qmp_machine machine;
	struct iothread io;
	bool io_started;
	struct qmp_server qmp;
	bool qmp_on;

	struct mutex lock;
	pthread_cond_t cond;         /* req changed */
	enum qmp_run_state state;
	enum front_req req;
	int signo;                   /* the signal behind FRONT_REQ_SIGNAL */
	bool snap_tried;             /* snapshot attempted for this machine */
	bool can_reset;              /* ...and it worked: resets keep threads */
	int event_fd;                /* eventfd: emit the pending events */
	bool pending_shutdown;       /* SHUTDOWN(guest) + STOP to emit */
	bool pending_guest_reset;    /* the guest asked for a reset */
	bool guest_reset_ended;      /* ...under -no-reboot: it ended the guest */
	bool vm_live;                /* the machine is between build and destroy */
	struct vm vm;                /* lagvisor's machine */
	struct vm_snapshot *snap;    /* power-on state of vm (vm_reset.h) */
	struct standin standin;      /* -lagvisor machine=standin */
	/* <shares>, live (front_weight.c): the cgroup's weight file and the
	 * I/O thread's timer that rereads it; -1 when none. */
	int cg_fd, cg_timer_fd;
	bool cg_v2;
	uint32_t cg_seen;            /* the file's weight last read */
	uint32_t cg_weight;          /* changed while running: for rebuilds; 0 none */
};

/*
 * Set up everything but the VM: signals (call before any thread exists),
 * the serial chardev, the QMP monitor. 0, or -errno with a message logged.
 */
int front_init(struct front *f, struct qemu_launch *launch);

/* Build and run the VM until the process should exit; its exit status. */
int front_run(struct front *f);

void front_destroy(struct front *f);

/* <shares> as the weight at start and live (front_weight.c); after
 * iothread_init. 0 or -errno (message logged). */
int front_weight_init(struct front *f);
void front_weight_close(struct front *f);

/* Between front.c and front_machines.c. Exit statuses as lagvisor run's. */
#define EXIT_RUNTIME 1
#define EXIT_USAGE   2
/* How long query-cpus-fast and the power-on snapshot wait for the vCPU
 * threads of a VM being started. */
#define FRONT_TID_WAIT_MS 5000
extern const struct front_machine_ops front_vm_ops, front_standin_ops;
/* The VM's I/O thread's signal hook: a signal ends the VM as a request. */
void front_on_signal(void *opaque, int signo);
/* vm->guest_reset: the guest asked for a reset (its vCPU thread). */
void front_guest_reset(void *arg);

#endif
