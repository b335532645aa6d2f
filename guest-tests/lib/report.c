/* report()/report_summary(); the contract is in report.h. */
#include "report.h"

#include <stdarg.h>

#include "atomic.h"
#include "exit.h"
#include "processor.h"

static volatile uint32_t tests, failures, skips;

static void report_line(const char *tag, const char *fmt, va_list ap)
{
	char msg[256];
	unsigned long flags;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	flags = console_lock();
	printf_locked("%s: %s\n", tag, msg);
	console_unlock(flags);
}

bool report(bool cond, const char *fmt, ...)
{
	va_list ap;

	atomic_inc(&tests);
	if (!cond)
		atomic_inc(&failures);
	va_start(ap, fmt);
	report_line(cond ? "PASS" : "FAIL", fmt, ap);
	va_end(ap);
	return cond;
}

void report_skip(const char *fmt, ...)
{
	va_list ap;

	atomic_inc(&skips);
	va_start(ap, fmt);
	report_line("SKIP", fmt, ap);
	va_end(ap);
}

void report_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_line("INFO", fmt, ap);
	va_end(ap);
}

unsigned report_failures(void)
{
	return atomic_read(&failures);
}

int report_summary(void)
{
	unsigned t = atomic_read(&tests), f = atomic_read(&failures);

	printf("SUMMARY: %u tests, %u failed, %u skipped\n", t, f,
	       atomic_read(&skips));
	return (f == 0 && t > 0) ? 0 : 1;
}

_Noreturn void guest_exit(unsigned value)
{
	irq_disable();
	outl(GUEST_EXIT_PORT, value);
	/* A VMM without the device (or one that ignores it) keeps us here. */
	halt_forever();
}

_Noreturn void exit(int code)
{
	guest_exit(code == 0 ? GUEST_EXIT_PASS : GUEST_EXIT_FAIL);
}
