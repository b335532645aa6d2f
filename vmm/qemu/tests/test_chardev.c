/*
 * Host ends of the serial port: a pty whose slave path works both ways
 * and never blocks the writer when nobody reads, and a file chardev on an
 * -add-fd fd (libvirt's pipe to virtlogd).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "vmm/qemu/chardev.h"
#include "common/test_check.h"

static ssize_t read_wait(int fd, char *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 2000) <= 0)
		return -1;
	return read(fd, buf, len);
}

static void test_pty(void)
{
	char *const argv[] = { "q", "-chardev", "pty,id=charserial0",
			       "-device", "isa-serial,chardev=charserial0,id=serial0" };
	struct qemu_launch l;
	struct chardev_host h;
	char err[256] = "", buf[64];
	size_t total = 0;
	int s, stderr_copy, devnull;
	ssize_t n;

	CHECK(qemu_cmdline_parse(5, argv, NULL, &l, err, sizeof(err)) == 0);
	/* chardev_open prints QEMU's "char device redirected" line: hide it. */
	stderr_copy = dup(2);
	devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, 2);
	CHECK(chardev_open(&h, &l, qemu_launch_chardev(&l, l.serial), err, sizeof(err)) == 0);
	dup2(stderr_copy, 2);
	close(stderr_copy);
	close(devnull);
	CHECK(!strncmp(h.filename, "pty:/dev/pts/", 13));
	CHECK(h.out_fd >= 0 && h.in_fd == h.out_fd);
	s = open(h.filename + 4, O_RDWR | O_NOCTTY);
	CHECK(s >= 0);
	/* Guest output reaches whoever opened the slave path, unchanged (raw). */
	CHECK(write(h.out_fd, "hello\n", 6) == 6);
	n = read_wait(s, buf, sizeof(buf));
	CHECK(n == 6 && !memcmp(buf, "hello\n", 6));
	/* Typing into the console reaches the guest side, no echo back. */
	CHECK(write(s, "x\r", 2) == 2);
	n = read_wait(h.in_fd, buf, sizeof(buf));
	CHECK(n == 2 && !memcmp(buf, "x\r", 2));
	close(s);
	/* Nobody reading: writes fill the buffer, then fail with EAGAIN
	 * instead of blocking the vCPU. */
	memset(buf, 'a', sizeof(buf));
	while (total < (16u << 20)) {
		n = write(h.out_fd, buf, sizeof(buf));
		if (n < 0)
			break;
		total += (size_t)n;
	}
	CHECK(n < 0 && errno == EAGAIN);
	CHECK(total > 0 && total < (16u << 20));
	chardev_close(&h);
	qemu_launch_free(&l);
}

static void test_fdset_file(void)
{
	int p[2];
	char fdarg[64], buf[16];
	struct qemu_launch l;
	struct chardev_host h;
	char err[256] = "";

	CHECK(pipe(p) == 0);
	snprintf(fdarg, sizeof(fdarg), "set=0,fd=%d,opaque=serial0-source", p[1]);
	{
		char *const argv[] = { "q", "-add-fd", fdarg, "-chardev",
				       "file,id=charserial0,path=/dev/fdset/0,append=on",
				       "-serial", "chardev:charserial0",
				       "-chardev", "file,id=bad,path=/dev/fdset/4" };

		CHECK(qemu_cmdline_parse(7, argv, NULL, &l, err, sizeof(err)) == 0);
		CHECK(chardev_open(&h, &l, qemu_launch_chardev(&l, "charserial0"), err,
				   sizeof(err)) == 0);
		CHECK(h.out_fd == p[1] && h.in_fd == -1 && !strcmp(h.filename, "file"));
		CHECK(write(h.out_fd, "log", 3) == 3);
		CHECK(read(p[0], buf, sizeof(buf)) == 3);
		chardev_close(&h);
		qemu_launch_free(&l);
		CHECK(qemu_cmdline_parse(9, argv, NULL, &l, err, sizeof(err)) == 0);
		CHECK(chardev_open(&h, &l, qemu_launch_chardev(&l, "bad"), err,
				   sizeof(err)) == -EINVAL);
		CHECK_MSG(err, "no -add-fd for that set");
		chardev_close(&h);
		qemu_launch_free(&l);
	}
	close(p[0]);
}

int main(void)
{
	test_pty();
	test_fdset_file();
	return check_report("test_chardev");
}
