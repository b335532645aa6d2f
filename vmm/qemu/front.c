#include "vmm/qemu/front.h"

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "vmm/kvm.h"
#include "vmm/kvm_stats_all.h"
#include "vmm/seccomp.h"
#include "vmm/x86/vm_reset.h"

/* How long the last events may take to reach libvirt before exiting. */
#define FRONT_FLUSH_MS 2000

static struct json_object *shutdown_data(bool guest, const char *reason)
{
	struct json_object *d = json_object_new_object();

	json_object_object_add(d, "guest", json_object_new_boolean(guest));
	json_object_object_add(d, "reason", json_object_new_string(reason));
	return d;
}

static void front_event(struct front *f, const char *name, struct json_object *data)
{
	if (f->qmp_on)
		qmp_server_event(&f->qmp, name, data);
	else
		json_object_put(data);
}

/* A request that ends the current VM (vm_run returns in front_run). */
static void front_request_locked(struct front *f, enum front_req req)
{
	MUTEX_ASSERT_HELD(&f->lock);
	/* A signal or quit is final; a reset or powerdown yields to them. */
	if (f->req == FRONT_REQ_SIGNAL || f->req == FRONT_REQ_QUIT)
		return;
	f->req = req;
	/* Out of "shutdown" a reset leads to prelaunch at once, so that a
	 * query or a cont that follows sees it (front_run rebuilds). */
	if (req == FRONT_REQ_RESET && f->state == QMP_STATE_SHUTDOWN)
		f->state = QMP_STATE_PRELAUNCH;
	/* The machine is ending: from now on nothing may use it, and queries
	 * about vCPUs wait for the next one (a rebuild). */
	if (f->vm_live)
		f->m->stop(f);
	f->vm_live = false;
	pthread_cond_broadcast(&f->cond);
}

void front_on_signal(void *opaque, int signo)
{
	struct front *f = opaque;

	log_info("signal %d (%s): shutting down", signo, strsignal(signo));
	mutex_lock(&f->lock);
	front_request_locked(f, FRONT_REQ_SIGNAL);
	if (f->req == FRONT_REQ_SIGNAL)
		f->signo = signo;
	mutex_unlock(&f->lock);
}

/* QMP backend hooks: the I/O thread, QMP server lock held. */

static enum qmp_run_state fb_state(void *opaque)
{
	struct front *f = opaque;
	enum qmp_run_state s;

	mutex_lock(&f->lock);
	s = f->state;
	mutex_unlock(&f->lock);
	return s;
}

static int fb_stop(void *opaque)
{
	struct front *f = opaque;
	int r = 0;

	mutex_lock(&f->lock);
	if (f->state == QMP_STATE_RUNNING) {
		if (f->vm_live)
			r = f->m->pause(f);
		if (!r)
			f->state = QMP_STATE_PAUSED;
	}
	mutex_unlock(&f->lock);
	return r;
}

static int fb_cont(void *opaque)
{
	struct front *f = opaque;

	mutex_lock(&f->lock);
	/* The first cont of a machine started with -S: nothing has run yet,
	 * so this is its power-on state, which resets come back to. */
	if (f->vm_live && !f->snap_tried && f->state == QMP_STATE_PRELAUNCH) {
		int r = f->m->snapshot(f);

		f->snap_tried = true;
		f->can_reset = r == 0;
		if (r)
			log_info("reset will rebuild the VM (no power-on snapshot: %s)",
				 strerror(-r));
	}
	if (f->vm_live)
		f->m->resume(f);
	/* Not live: a rebuild is under way; it starts the VM running. */
	f->state = QMP_STATE_RUNNING;
	mutex_unlock(&f->lock);
	return 0;
}

/*
 * lagvisor machines have no ACPI power button: the request ends the
 * guest as one that honours the button would, and reports it as the
 * guest's shutdown, which is what libvirt waits for.
 */
static int fb_powerdown(void *opaque)
{
	struct front *f = opaque;

	uint64_t one = 1;
	int r = 0;

	mutex_lock(&f->lock);
	if (f->state == QMP_STATE_SHUTDOWN) {
		/* Already off. */
	} else if (f->vm_live && f->can_reset && f->launch->no_shutdown) {
		/* Off but kept, threads and all, for a reset (virsh reboot). */
		r = f->m->pause(f);
		if (!r) {
			f->state = QMP_STATE_SHUTDOWN;
			f->pending_shutdown = true;
			/* After this command's reply: the I/O thread emits them. */
			if (write(f->event_fd, &one, sizeof(one)) < 0)
				log_warn("powerdown: event eventfd: %s", strerror(errno));
		}
	} else {
		/* While a reset rebuilds the machine the request waits for it. */
		front_request_locked(f, FRONT_REQ_POWERDOWN);
	}
	mutex_unlock(&f->lock);
	return r;
}

static int fb_reset(void *opaque)
{
	struct front *f = opaque;

	int r = -1;

	mutex_lock(&f->lock);
	if (f->vm_live && f->can_reset && f->req == FRONT_REQ_NONE) {
		r = f->m->reset(f);
		if (r) {
			log_error("reset in place failed; rebuilding the VM");
		} else if (f->state == QMP_STATE_RUNNING) {
			f->m->resume(f);
		} else if (f->state == QMP_STATE_SHUTDOWN) {
			f->state = QMP_STATE_PRELAUNCH;
		}
	}
	if (r)
		front_request_locked(f, FRONT_REQ_RESET);
	mutex_unlock(&f->lock);
	return 0;
}

/*
 * A guest's own reset request (port 0xcf9, i8042), in its vCPU thread,
 * which must not wait for itself: the I/O thread acts on it, as QEMU does:
 * a reset in place with RESET {"guest": true}, or under -no-reboot (libvirt's
 * <on_reboot>destroy) the end of the guest, as a shutdown.
 */
void front_guest_reset(void *arg)
{
	struct front *f = arg;
	uint64_t one = 1;

	mutex_lock(&f->lock);
	f->pending_guest_reset = true;
	mutex_unlock(&f->lock);
	if (write(f->event_fd, &one, sizeof(one)) < 0)
		log_warn("guest reset: event eventfd: %s", strerror(errno));
}

static void front_do_guest_reset(struct front *f)
{
	if (f->launch->no_reboot) {
		log_info("guest requested reset: -no-reboot, so the guest ends");
		mutex_lock(&f->lock);
		f->guest_reset_ended = true;
		if (f->vm_live)
			f->m->stop(f);
		mutex_unlock(&f->lock);
		return;
	}
	log_info("guest requested reset: resetting the machine");
	fb_reset(f);
	front_event(f, "RESET", shutdown_data(true, "guest-reset"));
}

/* Events that a command's effects cause after its reply (powerdown), and
 * the guest's reset requests. */
static void front_pending_events(void *opaque, uint32_t events)
{
	struct front *f = opaque;
	uint64_t v;
	bool shutdown, reset;

	(void)events;
	if (read(f->event_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_once(LOG_WARN, "event eventfd: %s", strerror(errno));
	mutex_lock(&f->lock);
	shutdown = f->pending_shutdown;
	f->pending_shutdown = false;
	reset = f->pending_guest_reset;
	f->pending_guest_reset = false;
	mutex_unlock(&f->lock);
	if (shutdown) {
		front_event(f, "SHUTDOWN", shutdown_data(true, "guest-shutdown"));
		front_event(f, "STOP", NULL);
	}
	if (reset)
		front_do_guest_reset(f);
}

static void fb_quit(void *opaque)
{
	struct front *f = opaque;

	mutex_lock(&f->lock);
	front_request_locked(f, FRONT_REQ_QUIT);
	mutex_unlock(&f->lock);
}

static int fb_vcpu_tids(void *opaque, int *tids, unsigned n)
{
	struct front *f = opaque;
	struct timespec ts = clock_cond_deadline_ms(FRONT_TID_WAIT_MS);
	int r = -EAGAIN;

	mutex_lock(&f->lock);
	/* A reset may be rebuilding the machine: wait for the new one. */
	while (!f->vm_live && f->state != QMP_STATE_SHUTDOWN &&
	       mutex_cond_timedwait(&f->lock, &f->cond, &ts) != -ETIMEDOUT)
		;
	if (f->vm_live)
		r = f->m->vcpu_tids(f, tids, n, FRONT_TID_WAIT_MS);
	mutex_unlock(&f->lock);
	return r;
}

static int fb_kvm_stats(void *opaque, int vcpu,
			void (*fn)(void *arg, const struct kvm_stat *s), void *arg)
{
	struct front *f = opaque;
	int r = -ENOENT;

	mutex_lock(&f->lock);
	if (f->vm_live && !f->launch->standin)
		r = vm_kvm_stats(&f->vm, vcpu, fn, arg);
	mutex_unlock(&f->lock);
	return r;
}

static const struct qmp_backend_ops front_qmp_ops = {
	.state = fb_state,
	.stop = fb_stop,
	.cont = fb_cont,
	.powerdown = fb_powerdown,
	.reset = fb_reset,
	.quit = fb_quit,
	.vcpu_tids = fb_vcpu_tids,
	.kvm_stats = fb_kvm_stats,
};

static void front_fill_machine(struct front *f)
{
	const struct qemu_launch *l = f->launch;
	struct qmp_machine *m = &f->machine;

	m->nr_cpus = l->cfg.nr_cpus;
	m->nr_max_cpus = l->max_cpus;
	m->mem_bytes = l->cfg.mem_bytes;
	m->name = l->name;
	m->uuid = l->uuid;
	for (unsigned i = 0; i < l->nr_chardevs && i < QMP_MAX_CHARDEVS; i++) {
		const struct qemu_chardev *c = &l->chardevs[i];

		m->chardevs[m->nr_chardevs].label = c->id;
		if (l->serial && !strcmp(c->id, l->serial))
			m->chardevs[m->nr_chardevs].filename = f->serial.filename;
		else
			m->chardevs[m->nr_chardevs].filename = c->backend;
		m->nr_chardevs++;
	}
	for (unsigned i = 0; i < l->nr_devices && i < QMP_MAX_DEVICES; i++) {
		m->devices[i].id = l->devices[i].id;
		m->devices[i].driver = l->devices[i].driver;
		m->nr_devices++;
	}
}

static int front_open_monitor(struct front *f)
{
	const struct qemu_chardev *c = qemu_launch_chardev(f->launch, f->launch->monitor);
	int fd = c->fd, r;

	if (fd < 0) {
		fd = qmp_server_listen_path(c->path);
		if (fd < 0) {
			log_error("QMP monitor %s: cannot listen on %s: %s", c->id, c->path,
				  strerror(-fd));
			return fd;
		}
	}
	r = qmp_server_init(&f->qmp, &f->io, fd, &front_qmp_ops, f, &f->machine);
	if (r) {
		log_error("QMP monitor %s (fd %d): %s", c->id, fd, strerror(-r));
		qmp_server_destroy(&f->qmp);
		return r;
	}
	f->qmp_on = true;
	return 0;
}

int front_init(struct front *f, struct qemu_launch *launch)
{
	char err[512] = "";
	sigset_t sigs;
	int r;

	memset(f, 0, sizeof(*f));
	f->event_fd = f->cg_fd = f->cg_timer_fd = -1;
	f->launch = launch;
	f->m = launch->standin ? &front_standin_ops : &front_vm_ops;
	f->serial.out_fd = f->serial.in_fd = f->serial.pty_master = f->serial.pty_slave = -1;
	f->state = launch->start_paused ? QMP_STATE_PRELAUNCH : QMP_STATE_RUNNING;
	mutex_init(&f->lock);
	pthread_cond_init(&f->cond, NULL);
	/* Before any thread exists, so that every thread inherits the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	r = iothread_init(&f->io, &sigs, front_on_signal, f);
	if (r) {
		log_error("I/O thread setup: %s", strerror(-r));
		return r;
	}
	f->io.seccomp_role = SECCOMP_ROLE_QMP;
	r = front_weight_init(f);
	if (r)
		return r;
	if (launch->serial) {
		r = chardev_open(&f->serial, launch, qemu_launch_chardev(launch, launch->serial),
				 err, sizeof(err));
		if (r) {
			log_error("%s", err);
			return r;
		}
	}
	front_fill_machine(f);
	f->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (f->event_fd < 0 ||
	    (r = iothread_add(&f->io, f->event_fd, EPOLLIN, front_pending_events, f))) {
		r = f->event_fd < 0 ? -errno : r;
		log_error("event eventfd: %s", strerror(-r));
		return r;
	}
	if (launch->monitor)
		return front_open_monitor(f);
	return 0;
}

/* After a guest-side end with -no-shutdown: wait for reset, quit or a signal. */
static enum front_req front_wait_shut_down(struct front *f)
{
	enum front_req req;

	mutex_lock(&f->lock);
	while (f->req == FRONT_REQ_NONE || f->req == FRONT_REQ_POWERDOWN)
		mutex_cond_wait(&f->lock, &f->cond);
	req = f->req;
	if (req == FRONT_REQ_RESET) {
		f->req = FRONT_REQ_NONE;
		/* A reset that came before the state said "shutdown". */
		if (f->state == QMP_STATE_SHUTDOWN)
			f->state = QMP_STATE_PRELAUNCH;
	}
	mutex_unlock(&f->lock);
	return req;
}

static int front_exit(struct front *f, enum front_req req, int code)
{
	if (req == FRONT_REQ_SIGNAL)
		front_event(f, "SHUTDOWN", shutdown_data(false, "host-signal"));
	/* quit: the protocol sent SHUTDOWN before its reply. */
	if (f->qmp_on)
		qmp_server_flush(&f->qmp, FRONT_FLUSH_MS);
	return code;
}

int front_run(struct front *f)
{
	struct vm_config cfg = f->launch->cfg;

	for (;;) {
		enum front_req req;
		int code;

		/* A live cpu_shares change outlives the machine it was made on. */
		mutex_lock(&f->lock);
		if (f->cg_weight)
			cfg.sched_opts.weight = f->cg_weight;
		mutex_unlock(&f->lock);
		code = f->m->build(f, &cfg);

		if (code)
			return front_exit(f, FRONT_REQ_NONE, code);
		mutex_lock(&f->lock);
		f->vm_live = true;
		f->snap_tried = f->can_reset = false;
		pthread_cond_broadcast(&f->cond);
		if (f->state != QMP_STATE_RUNNING)
			f->m->pause(f);
		/* Requests that came while there was no machine: a reset is
		 * what just happened; the others end the new machine at once. */
		if (f->req == FRONT_REQ_RESET)
			f->req = FRONT_REQ_NONE;
		else if (f->req != FRONT_REQ_NONE)
			f->m->stop(f);
		mutex_unlock(&f->lock);
		if (!f->io_started) {
			int r = iothread_start(&f->io);

			if (r) {
				log_error("starting the QMP I/O thread: %s", strerror(-r));
				f->m->destroy(f);
				return EXIT_RUNTIME;
			}
			f->io_started = true;
		}
		code = f->m->run(f);
		mutex_lock(&f->lock);
		f->vm_live = false;
		req = f->req;
		if (req == FRONT_REQ_RESET || req == FRONT_REQ_POWERDOWN)
			f->req = FRONT_REQ_NONE;
		mutex_unlock(&f->lock);
		f->m->destroy(f);

		if (req == FRONT_REQ_SIGNAL || req == FRONT_REQ_QUIT)
			return front_exit(f, req, 0);
		if (req == FRONT_REQ_RESET)
			continue;          /* same state: running or paused */
		if (req == FRONT_REQ_NONE && code == EXIT_RUNTIME) {
			log_error("the VM failed; exiting without a SHUTDOWN event");
			mutex_lock(&f->lock);
			f->state = QMP_STATE_INTERNAL_ERROR;
			mutex_unlock(&f->lock);
			return front_exit(f, req, EXIT_RUNTIME);
		}
		/* The guest ended (poweroff, debug-exit, or the power button).
		 * The state changes before the events, so that a client acting
		 * on them (libvirt's reboot: system_reset, cont) finds it. */
		mutex_lock(&f->lock);
		f->state = QMP_STATE_SHUTDOWN;
		mutex_unlock(&f->lock);
		front_event(f, "SHUTDOWN", shutdown_data(true, f->guest_reset_ended ?
							 "guest-reset" : "guest-shutdown"));
		f->guest_reset_ended = false;
		if (!f->launch->no_shutdown)
			return front_exit(f, req, code);
		front_event(f, "STOP", NULL);
		req = front_wait_shut_down(f);
		if (req != FRONT_REQ_RESET)
			return front_exit(f, req, code);
	}
}

void front_destroy(struct front *f)
{
	if (f->io_started)
		iothread_stop(&f->io);
	if (f->qmp_on)
		qmp_server_destroy(&f->qmp);
	chardev_close(&f->serial);
	front_weight_close(f);
	if (f->event_fd >= 0)
		close(f->event_fd);
	iothread_destroy(&f->io);
	pthread_cond_destroy(&f->cond);
	mutex_destroy(&f->lock);
}
