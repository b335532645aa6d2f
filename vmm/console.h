/*
 * The guest's serial console on the host side (--serial).
 *   stdio:     output to stdout; input from stdin through the I/O thread.
 *              When stdin is a terminal it is put in raw mode (keeping
 *              OPOST|ONLCR so that "\n" in log lines still returns the
 *              carriage), and Ctrl-A x quits, Ctrl-A Ctrl-A sends Ctrl-A,
 *              Ctrl-A h prints the keys. When stdin is not a terminal its
 *              bytes go to the guest unchanged and termios is not touched.
 *   file:PATH: output to PATH (created 0644, truncated); no input.
 *   none:      output dropped; no input.
 *   fd:        cfg->serial_out_fd / serial_in_fd, owned by the caller (the
 *              QEMU front's pty or -add-fd file). Output that does not fit
 *              (a non-blocking pty nobody reads) is dropped, never waited
 *              for; input bytes go to the guest unchanged.
 * The terminal is restored by console_close and, should the process exit
 * any other way, by an atexit handler.
 */
#ifndef LAGVISOR_VMM_CONSOLE_H
#define LAGVISOR_VMM_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <termios.h>

#include "vmm/config.h"
#include "vmm/iothread.h"

#define CONSOLE_ESCAPE 0x01              /* Ctrl-A */
#define CONSOLE_PENDING_SIZE 256

enum console_event { CONSOLE_EV_NONE, CONSOLE_EV_QUIT, CONSOLE_EV_HELP };

struct console {
	bool inited;
	enum serial_mode mode;
	int in_fd;                           /* -1: no input */
	int out_fd;                          /* -1: output dropped */
	bool out_owned;                      /* out_fd is our file: close it */
	bool tty;                            /* in_fd is a terminal */
	bool raw;                            /* ...and we put it in raw mode */
	struct termios saved;
	int room_fd;                         /* eventfd: the guest side has room */
	bool escape_armed;                   /* Ctrl-A seen, next key is a command */
	bool in_paused;                      /* waiting for room */
	uint8_t pending[CONSOLE_PENDING_SIZE];
	size_t pending_off, pending_len;     /* bytes the guest has not taken */
	struct iothread *io;
	size_t (*input)(void *opaque, const uint8_t *buf, size_t len);
	void (*quit)(void *opaque, int exit_code);
	void *opaque;
};

/* Open the output per cfg->serial, detect a terminal. 0 or -errno (msg). */
int console_open(struct console *c, const struct vm_config *cfg, char *err,
		 size_t errlen);

/*
 * Feed stdin to `input` (returns how many bytes it took; the rest is kept
 * and retried after console_room) from the I/O thread; `quit` is called
 * there on Ctrl-A x. Nothing to do for modes without input. 0 or -errno.
 */
int console_attach(struct console *c, struct iothread *io,
		   size_t (*input)(void *opaque, const uint8_t *buf, size_t len),
		   void (*quit)(void *opaque, int exit_code), void *opaque);

/* Raw mode when stdin is a terminal (else nothing). 0 or -errno. */
int console_raw(struct console *c);

/* Restore the terminal mode saved by console_raw. Idempotent. */
void console_restore(struct console *c);

/* Guest output (the UART's out callback): written fully, any thread. */
void console_output(void *opaque, const uint8_t *buf, size_t len);

/* The guest side has room for input again (the UART's room callback). */
void console_room(void *opaque);

void console_close(struct console *c);

/*
 * The escape-key state machine, pure. Processes in[0..len), writing the
 * bytes meant for the guest to out (room for len bytes). Stops right after
 * a command key; *consumed says how far it got, *ev what was asked.
 * Returns the number of bytes written to out.
 */
size_t console_escape_feed(bool *armed, const uint8_t *in, size_t len,
			   uint8_t *out, size_t *consumed, enum console_event *ev);

#endif
