/*
 * printf-like output to the serial console. Supported: %d %i %u %x %X %o
 * %c %s %p %%, flags '0' and '-', a width (number or *), length modifiers
 * l, ll, z. One call's output is never interleaved with another vCPU's.
 */
#ifndef GUEST_PRINTF_H
#define GUEST_PRINTF_H

#include <stdarg.h>
#include <stddef.h>

#define PRINTF_FMT(a, b) __attribute__((format(printf, a, b)))

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...) PRINTF_FMT(3, 4);
int printf(const char *fmt, ...) PRINTF_FMT(1, 2);
int vprintf(const char *fmt, va_list ap);
void puts(const char *s);

/*
 * Console lock, for callers that print several lines as one block (and
 * for printf itself). IF is off while it is held.
 */
unsigned long console_lock(void);
void console_unlock(unsigned long flags);
/* Print while the caller holds console_lock(). */
int printf_locked(const char *fmt, ...) PRINTF_FMT(1, 2);

/*
 * Print even if the console lock is held (an exception in the middle of a
 * printf): waits a bounded time for the lock, then prints regardless.
 */
int printf_emergency(const char *fmt, ...) PRINTF_FMT(1, 2);

#endif
