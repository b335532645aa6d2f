#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>

static enum log_level log_threshold = LOG_WARN;

void log_set_level(enum log_level level)
{
	log_threshold = level;
}

enum log_level log_get_level(void)
{
	return log_threshold;
}

void log_one_line(char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = {
		[LOG_ERROR] = "error", [LOG_WARN] = "warning",
		[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
	};
	char line[1024];
	va_list ap;

	if (level > log_threshold)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_one_line(line);
	/* One fprintf per line so lines from several threads do not interleave.
	 * The raw-mode console keeps OPOST|ONLCR, so "\n" is enough. */
	fprintf(stderr, "lagvisor: %s: %s\n", names[level], line);
}
