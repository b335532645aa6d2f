/*
 * MC146818-style CMOS real-time clock and its 128 bytes of CMOS RAM, at
 * ports 0x70 (index; bit 7 is the PC's NMI mask, ignored) and 0x71 (data).
 *
 * Time is never stored: each read of a clock register converts
 * now_s(opaque) + offset_s to calendar fields, so the clock runs with the
 * host's wall clock and tests inject any instant. A guest that sets the
 * clock changes offset_s. Register formats follow status B as the guest set
 * it (BCD or binary, 24 h or 12 h with bit 7 = PM); the default is BCD, 24 h.
 * Register 0x32 is the century (the IBM PC convention, also what ACPI's FADT
 * names by default). Status A's UIP bit always reads 0: an update is never
 * in progress, so a guest's "wait until UIP clears" loop ends at once.
 * There is no interrupt line: periodic, alarm and update interrupts are not
 * generated (status C reads 0).
 *
 * Locking: a mutex inside; now_s is called with it held.
 */
#ifndef LAGVISOR_DEVICES_RTC_H
#define LAGVISOR_DEVICES_RTC_H

#include <pthread.h>
#include <stdint.h>

#include "common/mutex.h"
#include "devices/bus.h"

#define RTC_PORT_INDEX 0x70
#define RTC_CMOS_SIZE 128

struct rtc {
	struct mutex lock;
	uint8_t index;                  /* selected register, 0..127 */
	uint8_t cmos[RTC_CMOS_SIZE];    /* RAM, alarms, status A/B; the clock
					 * fields only while status B.SET */
	int64_t offset_s;               /* guest clock - host clock */
	int64_t (*now_s)(void *opaque); /* Unix time, UTC */
	void *opaque;
};

/* Reset state (status A 0x26, B 0x02, D 0x80, RAM zero, offset 0).
 * Returns 0 or -errno. */
int rtc_init(struct rtc *r, int64_t (*now_s)(void *opaque), void *opaque);

/* Register ports 0x70 and 0x71 on `pio`. Returns bus_register's code. */
int rtc_attach(struct rtc *r, struct bus *pio);

void rtc_destroy(struct rtc *r);

/* Register-level access: select `index`, then read or write the data port. */
uint8_t rtc_read_reg(struct rtc *r, uint8_t index);
void rtc_write_reg(struct rtc *r, uint8_t index, uint8_t val);

#endif
