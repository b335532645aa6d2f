/*
 * Test results, in the style of kvm-unit-tests. Every check is one
 * report(); report_summary() prints the line the runner looks for,
 *   SUMMARY: <n> tests, <f> failed, <s> skipped
 * and returns main()'s exit code: 0 only if nothing failed and at least
 * one check ran (a test that checked nothing has not passed).
 * Safe to call from any vCPU.
 */
#ifndef GUEST_REPORT_H
#define GUEST_REPORT_H

#include <stdbool.h>

#include "printf.h"

/* "PASS: <msg>" or "FAIL: <msg>"; returns cond. */
bool report(bool cond, const char *fmt, ...) PRINTF_FMT(2, 3);
/* "SKIP: <msg>": a check this machine cannot make. */
void report_skip(const char *fmt, ...) PRINTF_FMT(1, 2);
/* "INFO: <msg>": context only. */
void report_info(const char *fmt, ...) PRINTF_FMT(1, 2);
int report_summary(void);
/* Failures so far (for tests that stop early). */
unsigned report_failures(void);

#endif
