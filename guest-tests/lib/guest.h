/* Everything a test guest includes. */
#ifndef GUEST_GUEST_H
#define GUEST_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic.h"
#include "bootinfo.h"
#include "exit.h"
#include "lapic.h"
#include "layout.h"
#include "mptable.h"
#include "printf.h"
#include "processor.h"
#include "report.h"
#include "smp.h"
#include "string.h"
#include "timing.h"
#include "traps.h"

/* Implemented by each test; return report_summary(). */
int main(int argc, char **argv);

#endif
