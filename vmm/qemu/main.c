/*
 * lagvisor-qemu: the QEMU-compatible front that libvirt runs as a domain's
 * <emulator>. A capability probe (-machine none) is handed to the real
 * qemu-system-x86_64 with the same argv, so that libvirt records real
 * QEMU capabilities; any other command line is parsed and run as a
 * lagvisor VM served over QMP (front.h). Only this file exits.
 *
 * Environment: LAGVISOR_QEMU_BINARY (the real QEMU, default
 * /usr/bin/qemu-system-x86_64), LAGVISOR_QEMU_OPTS (lagvisor settings,
 * see qemu_cmdline.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "vmm/qemu/front.h"
#include "vmm/qemu/qemu_cmdline.h"
#include "vmm/sched/sched_host.h"
#include "vmm/sched/sched_shm.h"
#include "vmm/seccomp.h"

#define QEMU_DEFAULT_BINARY "/usr/bin/qemu-system-x86_64"

static int exec_real_qemu(char **argv)
{
	const char *qemu = getenv("LAGVISOR_QEMU_BINARY");

	if (!qemu || !*qemu)
		qemu = QEMU_DEFAULT_BINARY;
	argv[0] = (char *)qemu;
	execv(qemu, argv);
	log_error("capability probe: cannot run %s: %s (install qemu-system-x86 or "
		  "set LAGVISOR_QEMU_BINARY)", qemu, strerror(errno));
	return 1;
}

static int write_pidfile(const char *path)
{
	char buf[32];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

	if (fd < 0 || write(fd, buf, (size_t)n) != n) {
		log_error("-pidfile %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * -daemonize: the parent exits once the child is ready (monitor
 * listening), with the child's failure status if it fails before that.
 * Returns in the child with *ready_fd to write one byte to.
 */
static int daemonize(int *ready_fd)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		exit(read(p[0], &c, 1) == 1 ? 0 : 1);
	}
	close(p[0]);
	setsid();
	*ready_fd = p[1];
	return 0;
}

static void to_dev_null(void)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

/* A rebuild reopens the shared domain's file: another user's needs some
 * capabilities kept (seccomp.h). */
static uint64_t domain_keep_caps(const struct vm_config *cfg)
{
	char path[256], buf[64];
	const char *name = sched_host_domain_name(&cfg->sched_opts, buf, sizeof(buf));
	struct stat st;

	if (cfg->sched != SCHED_MODE_EEVDF || !name ||
	    sched_shm_path(NULL, name, path, sizeof(path)) ||
	    stat(path, &st))
		return 0;
	return seccomp_caps_for_domain(st.st_uid, true);
}

/* After setup (monitor listening, pidfile written): the main thread only
 * (re)builds and tears down VMs from here, in its sandbox. */
static int sandbox(const struct qemu_launch *launch)
{
	int r = seccomp_configure(!launch->cfg.no_seccomp, domain_keep_caps(&launch->cfg));

	if (!r)
		r = seccomp_thread_enter(SECCOMP_ROLE_QEMU_MAIN);
	if (r)
		log_error("seccomp sandbox: %s (-lagvisor seccomp=off runs without)", strerror(-r));
	return r;
}

int main(int argc, char **argv)
{
	struct qemu_launch launch;
	struct front front;
	char err[512] = "";
	int ready_fd = -1, code;

	if (qemu_cmdline_is_probe(argc, argv))
		return exec_real_qemu(argv);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-version") || !strcmp(argv[i], "--version")) {
			printf("QEMU emulator version 7.2.0 (lagvisor %s)\n", LAGVISOR_VERSION);
			return 0;
		}
	}
	if (qemu_cmdline_parse(argc, argv, getenv("LAGVISOR_QEMU_OPTS"), &launch, err,
			       sizeof(err))) {
		log_error("%s", err);
		qemu_launch_free(&launch);
		return 2;
	}
	if (launch.cfg.verbose)
		log_set_level(launch.cfg.verbose > 1 ? LOG_DEBUG : LOG_INFO);
	if (launch.daemonize && daemonize(&ready_fd)) {
		log_error("-daemonize: %s", strerror(errno));
		qemu_launch_free(&launch);
		return 1;
	}
	if (launch.pidfile && write_pidfile(launch.pidfile)) {
		qemu_launch_free(&launch);
		return 1;
	}
	if (front_init(&front, &launch)) {
		front_destroy(&front);
		qemu_launch_free(&launch);
		return 1;
	}
	if (ready_fd >= 0) {
		to_dev_null();
		if (write(ready_fd, "", 1) != 1)
			log_warn("-daemonize: parent gone");
		close(ready_fd);
	}
	if (sandbox(&launch)) {
		front_destroy(&front);
		qemu_launch_free(&launch);
		return 1;
	}
	code = front_run(&front);
	front_destroy(&front);
	qemu_launch_free(&launch);
	return code;
}
