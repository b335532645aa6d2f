/*
 * Logging for every module: one line per message, prefixed "lagvisor: ".
 * sched/ must not log (it reports through its host-ops trace hook); devices/
 * may, since a guest misusing a device is worth a line.
 */
#ifndef LAGVISOR_COMMON_LOG_H
#define LAGVISOR_COMMON_LOG_H

#include <stdbool.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Messages above this level are dropped; default LOG_WARN. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* Every message is one line: control characters (a newline in a quoted
 * argument, say) are printed as '?'. */
void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The same for a message kept in a buffer (the err of a parser): each
 * byte below 0x20 and 0x7f becomes '?', in place. */
void log_one_line(char *s);

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/*
 * Log at most once per call site: a guest hammering an unhandled port must
 * not flood the console. The flag is per site, not per argument value.
 */
#define log_once(level, ...)                                         \
	do {                                                         \
		static bool log_once_done_;                          \
		if (!__atomic_exchange_n(&log_once_done_, true,      \
					 __ATOMIC_RELAXED))          \
			log_msg(level, __VA_ARGS__);                 \
	} while (0)

#endif
