#include "vmm/console.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"

/*
 * The terminal is process-wide, so is what restores it at exit: the saved
 * mode and fd, armed while raw mode is on.
 */
static struct termios console_saved_tty;
static int console_raw_fd = -1;
static bool console_atexit_done;

static void console_restore_at_exit(void)
{
	if (console_raw_fd >= 0)
		tcsetattr(console_raw_fd, TCSANOW, &console_saved_tty);
	console_raw_fd = -1;
}

size_t console_escape_feed(bool *armed, const uint8_t *in, size_t len,
			   uint8_t *out, size_t *consumed, enum console_event *ev)
{
	size_t o = 0;

	*ev = CONSOLE_EV_NONE;
	for (size_t i = 0; i < len; i++) {
		uint8_t b = in[i];

		if (!*armed) {
			if (b == CONSOLE_ESCAPE)
				*armed = true;
			else
				out[o++] = b;
			continue;
		}
		*armed = false;
		if (b == CONSOLE_ESCAPE) {
			out[o++] = b;
		} else if (b == 'x' || b == 'X') {
			*ev = CONSOLE_EV_QUIT;
		} else if (b == 'h' || b == 'H' || b == '?') {
			*ev = CONSOLE_EV_HELP;
		}
		/* Any other key after the escape is dropped, as in QEMU. */
		if (*ev != CONSOLE_EV_NONE) {
			*consumed = i + 1;
			return o;
		}
	}
	*consumed = len;
	return o;
}

static void write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno == EAGAIN) {
			/* stdout may be non-blocking, set so by whoever shares it */
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			poll(&p, 1, -1);
		} else {
			log_once(LOG_WARN, "console output: %s; dropping guest output",
				 n < 0 ? strerror(errno) : "short write");
			return;
		}
	}
}

void console_output(void *opaque, const uint8_t *buf, size_t len)
{
	struct console *c = opaque;

	if (c->out_fd < 0)
		return;
	if (c->mode != SERIAL_FD) {
		write_all(c->out_fd, buf, len);
		return;
	}
	while (len) {
		ssize_t n = write(c->out_fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (errno != EAGAIN)
				log_once(LOG_WARN, "console output: %s; dropping guest output",
					 strerror(errno));
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

int console_open(struct console *c, const struct vm_config *cfg, char *err,
		 size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->in_fd = c->out_fd = c->room_fd = -1;
	c->mode = cfg->serial;
	c->inited = true;
	switch (cfg->serial) {
	case SERIAL_STDIO:
		c->out_fd = STDOUT_FILENO;
		c->in_fd = STDIN_FILENO;
		c->tty = isatty(STDIN_FILENO);
		break;
	case SERIAL_FILE:
		c->out_fd = open(cfg->serial_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
				 0644);
		if (c->out_fd < 0) {
			int e = errno;

			snprintf(err, errlen, "--serial file:%s: %s", cfg->serial_path,
				 strerror(e));
			return -e;
		}
		c->out_owned = true;
		break;
	case SERIAL_NONE:
		break;
	case SERIAL_FD:
		c->out_fd = cfg->serial_out_fd;
		c->in_fd = cfg->serial_in_fd;
		break;
	}
	return 0;
}

/* Hand pending bytes to the guest; pause stdin while some are refused. */
static void console_flush(struct console *c)
{
	size_t n = c->input(c->opaque, c->pending + c->pending_off, c->pending_len);

	c->pending_off += n;
	c->pending_len -= n;
	if (c->pending_len && !c->in_paused) {
		c->in_paused = true;
		iothread_set_events(c->io, c->in_fd, 0);
	} else if (!c->pending_len && c->in_paused) {
		c->in_paused = false;
		iothread_set_events(c->io, c->in_fd, EPOLLIN);
	}
}

static void console_help(struct console *c)
{
	static const char help[] =
		"\nlagvisor console: C-a x  quit    C-a C-a  send C-a    C-a h  this help\n";

	if (c->out_fd >= 0)
		write_all(c->out_fd, (const uint8_t *)help, sizeof(help) - 1);
}

static void console_stdin(void *opaque, uint32_t events)
{
	struct console *c = opaque;
	uint8_t buf[CONSOLE_PENDING_SIZE];
	size_t off = 0;
	ssize_t n;

	(void)events;
	if (c->pending_len)
		return;
	n = read(c->in_fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/* End of input (or an error reading it): the guest runs on,
		 * with no more console input. */
		if (n < 0)
			log_warn("console input: %s; no more input", strerror(errno));
		iothread_set_events(c->io, c->in_fd, 0);
		return;
	}
	c->pending_off = 0;
	if (!c->tty) {
		memcpy(c->pending, buf, (size_t)n);
		c->pending_len = (size_t)n;
		console_flush(c);
		return;
	}
	while (off < (size_t)n) {
		enum console_event ev;
		size_t used;

		c->pending_len += console_escape_feed(&c->escape_armed, buf + off,
						      (size_t)n - off,
						      c->pending + c->pending_len,
						      &used, &ev);
		off += used;
		if (ev == CONSOLE_EV_QUIT) {
			if (c->pending_len)
				console_flush(c);
			log_info("console: C-a x: stopping the VM");
			c->quit(c->opaque, 0);
			return;
		}
		if (ev == CONSOLE_EV_HELP)
			console_help(c);
	}
	if (c->pending_len)
		console_flush(c);
}

static void console_room_ready(void *opaque, uint32_t events)
{
	struct console *c = opaque;
	uint64_t v;

	(void)events;
	if (read(c->room_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_once(LOG_WARN, "console: room eventfd: %s", strerror(errno));
	if (c->pending_len)
		console_flush(c);
}

void console_room(void *opaque)
{
	struct console *c = opaque;
	uint64_t one = 1;

	/* Called with the UART lock held: only poke the I/O thread. */
	if (c->room_fd >= 0 && write(c->room_fd, &one, sizeof(one)) < 0 &&
	    errno != EAGAIN)
		log_once(LOG_WARN, "console: room eventfd: %s", strerror(errno));
}

int console_attach(struct console *c, struct iothread *io,
		   size_t (*input)(void *opaque, const uint8_t *buf, size_t len),
		   void (*quit)(void *opaque, int exit_code), void *opaque)
{
	int r;

	c->io = io;
	c->input = input;
	c->quit = quit;
	c->opaque = opaque;
	if (c->in_fd < 0)
		return 0;
	c->room_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->room_fd < 0)
		return -errno;
	r = iothread_add(io, c->room_fd, EPOLLIN, console_room_ready, c);
	if (r)
		return r;
	r = iothread_add(io, c->in_fd, EPOLLIN, console_stdin, c);
	if (r == -EPERM) {
		/* A regular file or /dev/null: epoll cannot wait on it. */
		log_info("console: stdin is a file or /dev/null, which cannot be "
			 "watched: no console input");
		c->in_fd = -1;
		return 0;
	}
	return r;
}

int console_raw(struct console *c)
{
	struct termios raw;

	if (!c->tty || c->raw)
		return 0;
	if (tcgetattr(c->in_fd, &c->saved))
		return -errno;
	raw = c->saved;
	cfmakeraw(&raw);
	/* Keep output post-processing so "\n" from log lines returns the
	 * carriage; guests that send "\r\n" are unaffected. */
	raw.c_oflag |= OPOST | ONLCR;
	console_saved_tty = c->saved;
	console_raw_fd = c->in_fd;
	if (!console_atexit_done) {
		console_atexit_done = true;
		atexit(console_restore_at_exit);
	}
	if (tcsetattr(c->in_fd, TCSANOW, &raw)) {
		console_raw_fd = -1;
		return -errno;
	}
	c->raw = true;
	return 0;
}

void console_restore(struct console *c)
{
	if (!c->raw)
		return;
	tcsetattr(c->in_fd, TCSANOW, &c->saved);
	console_raw_fd = -1;
	c->raw = false;
}

void console_close(struct console *c)
{
	if (!c->inited)
		return;
	console_restore(c);
	if (c->out_owned && c->out_fd >= 0)
		close(c->out_fd);
	if (c->room_fd >= 0)
		close(c->room_fd);
	c->out_fd = c->room_fd = -1;
	c->inited = false;
}
