/* The console escape keys, and output to a file. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "vmm/config.h"
#include "vmm/console.h"
#include "common/test_check.h"

static size_t feed(bool *armed, const char *in, size_t len, char *out,
		   size_t *used, enum console_event *ev)
{
	size_t n = console_escape_feed(armed, (const uint8_t *)in, len,
				       (uint8_t *)out, used, ev);

	out[n] = '\0';
	return n;
}

int main(void)
{
	enum console_event ev;
	bool armed = false;
	char out[64];
	size_t used;

	CHECK(feed(&armed, "hello", 5, out, &used, &ev) == 5);
	CHECK(!strcmp(out, "hello") && used == 5 && ev == CONSOLE_EV_NONE && !armed);

	/* C-a x quits and stops right after the x. */
	CHECK(feed(&armed, "ab\001xcd", 6, out, &used, &ev) == 2);
	CHECK(!strcmp(out, "ab") && used == 4 && ev == CONSOLE_EV_QUIT && !armed);

	/* C-a C-a sends one C-a. */
	CHECK(feed(&armed, "a\001\001b", 4, out, &used, &ev) == 3);
	CHECK(!memcmp(out, "a\001b", 3) && used == 4 && ev == CONSOLE_EV_NONE);

	/* The escape may arrive at the end of one read and the key in the next. */
	CHECK(feed(&armed, "z\001", 2, out, &used, &ev) == 1);
	CHECK(armed && ev == CONSOLE_EV_NONE);
	CHECK(feed(&armed, "X", 1, out, &used, &ev) == 0);
	CHECK(ev == CONSOLE_EV_QUIT && !armed);

	/* C-a h asks for help; processing can resume after it. */
	CHECK(feed(&armed, "\001hq", 3, out, &used, &ev) == 0);
	CHECK(ev == CONSOLE_EV_HELP && used == 2);
	CHECK(feed(&armed, "q", 1, out, &used, &ev) == 1 && !strcmp(out, "q"));

	/* Any other key after C-a is dropped, together with the C-a. */
	CHECK(feed(&armed, "\001c1", 3, out, &used, &ev) == 1);
	CHECK(!strcmp(out, "1") && ev == CONSOLE_EV_NONE && !armed);

	/* x without the escape is an ordinary byte. */
	CHECK(feed(&armed, "x", 1, out, &used, &ev) == 1 && ev == CONSOLE_EV_NONE);

	/* --serial file:PATH truncates and receives output; no input. */
	{
		char path[] = "/tmp/lagvisor-console-XXXXXX";
		struct vm_config cfg;
		struct console c;
		char err[128], buf[32];
		int fd = mkstemp(path);

		CHECK(fd >= 0);
		CHECK(write(fd, "old contents", 12) == 12);
		close(fd);
		config_init(&cfg);
		cfg.serial = SERIAL_FILE;
		cfg.serial_path = path;
		CHECK(console_open(&c, &cfg, err, sizeof(err)) == 0);
		CHECK(c.in_fd == -1 && !c.tty);
		console_output(&c, (const uint8_t *)"guest\n", 6);
		console_close(&c);
		fd = open(path, O_RDONLY);
		CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == 6);
		CHECK(!memcmp(buf, "guest\n", 6));
		close(fd);
		unlink(path);

		cfg.serial_path = "/nonexistent-dir/x.log";
		CHECK(console_open(&c, &cfg, err, sizeof(err)) < 0);
		CHECK_MSG(err, "--serial file:/nonexistent-dir/x.log: No such file");
		console_close(&c);
	}
	return check_report("test_console");
}
