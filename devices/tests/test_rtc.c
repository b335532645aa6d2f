/* CMOS RTC: clock registers for injected instants, hand-computed (epochs
 * from `date -u -d ... +%s`), in BCD/binary and 24 h/12 h; status
 * registers; CMOS RAM; the guest setting the clock. */
#include <errno.h>
#include <stdint.h>

#include "devices/rtc.h"
#include "common/test_check.h"

enum { SEC = 0, MIN = 2, HOUR = 4, WDAY = 6, MDAY = 7, MON = 8, YEAR = 9,
       REG_A = 0x0a, REG_B = 0x0b, REG_C = 0x0c, REG_D = 0x0d,
       CENTURY = 0x32 };

struct fake_clock {
	int64_t t;
	int calls;
};

static int64_t fake_now(void *opaque)
{
	struct fake_clock *c = opaque;

	c->calls++;
	return c->t;
}

/* sec, min, hour, wday, mday, mon, year, century as the guest reads them. */
struct want {
	uint8_t sec, min, hour, wday, mday, mon, year, century;
};

static void check_time_at(struct rtc *r, int line, struct want w)
{
	struct want g = {
		rtc_read_reg(r, SEC), rtc_read_reg(r, MIN),
		rtc_read_reg(r, HOUR), rtc_read_reg(r, WDAY),
		rtc_read_reg(r, MDAY), rtc_read_reg(r, MON),
		rtc_read_reg(r, YEAR), rtc_read_reg(r, CENTURY),
	};

	if (g.sec != w.sec || g.min != w.min || g.hour != w.hour ||
	    g.wday != w.wday || g.mday != w.mday || g.mon != w.mon ||
	    g.year != w.year || g.century != w.century) {
		fprintf(stderr, "test_rtc.c:%d: got %02x:%02x:%02x wday %02x "
			"%02x.%02x.%02x%02x, want %02x:%02x:%02x wday %02x "
			"%02x.%02x.%02x%02x\n", line, g.hour, g.min, g.sec,
			g.wday, g.mday, g.mon, g.century, g.year, w.hour, w.min,
			w.sec, w.wday, w.mday, w.mon, w.century, w.year);
		check_failures++;
	}
}

#define CHECK_TIME(r, ...) check_time_at(r, __LINE__, (struct want){ __VA_ARGS__ })

static void test_formats(void)
{
	struct fake_clock clk = { .t = 1796083198 };    /* 2026-11-30 23:59:58 */
	struct rtc r;

	CHECK_EQ(rtc_init(&r, fake_now, &clk), 0);
	/* Default: BCD, 24 h. Monday = 2 (Sunday = 1). */
	CHECK_EQ(rtc_read_reg(&r, REG_B), 0x02);
	CHECK_TIME(&r, 0x58, 0x59, 0x23, 0x02, 0x30, 0x11, 0x26, 0x20);
	CHECK(clk.calls > 0);
	/* Binary: 58 59 23, 30.11.(20)26. */
	rtc_write_reg(&r, REG_B, 0x06);
	CHECK_TIME(&r, 58, 59, 23, 2, 30, 11, 26, 20);
	/* 12 h binary: 23 h = 11 PM = 0x80 | 11. */
	rtc_write_reg(&r, REG_B, 0x04);
	CHECK_EQ(rtc_read_reg(&r, HOUR), 0x8b);
	/* 12 h BCD: 0x80 | 0x11. */
	rtc_write_reg(&r, REG_B, 0x00);
	CHECK_EQ(rtc_read_reg(&r, HOUR), 0x91);

	/* Two seconds later it is Tuesday 2026-12-01 00:00:00; midnight is
	 * 12 AM in 12 h mode. */
	clk.t += 2;
	CHECK_TIME(&r, 0x00, 0x00, 0x12, 0x03, 0x01, 0x12, 0x26, 0x20);
	rtc_write_reg(&r, REG_B, 0x02);
	CHECK_EQ(rtc_read_reg(&r, HOUR), 0x00);
	/* Noon: 12 PM. 1796083200 + 12 h. */
	clk.t = 1796083200 + 12 * 3600;
	CHECK_EQ(rtc_read_reg(&r, HOUR), 0x12);
	rtc_write_reg(&r, REG_B, 0x00);
	CHECK_EQ(rtc_read_reg(&r, HOUR), 0x92);
	rtc_write_reg(&r, REG_B, 0x04);
	CHECK_EQ(rtc_read_reg(&r, HOUR), 0x8c);
	/* 1 PM. */
	clk.t += 3600;
	CHECK_EQ(rtc_read_reg(&r, HOUR), 0x81);
	rtc_destroy(&r);
}

static void test_calendar(void)
{
	struct fake_clock clk;
	struct rtc r;

	CHECK_EQ(rtc_init(&r, fake_now, &clk), 0);
	/* Century rollover: 2099-12-31 23:59:59 Thursday, then Friday
	 * 2100-01-01. */
	clk.t = 4102444799;
	CHECK_TIME(&r, 0x59, 0x59, 0x23, 0x05, 0x31, 0x12, 0x99, 0x20);
	clk.t++;
	CHECK_TIME(&r, 0x00, 0x00, 0x00, 0x06, 0x01, 0x01, 0x00, 0x21);
	/* 2024 is a leap year: Thursday 29 February. */
	clk.t = 1709164799 + 1;
	CHECK_TIME(&r, 0x00, 0x00, 0x00, 0x05, 0x29, 0x02, 0x24, 0x20);
	/* 2100 is not: Sunday 28 February is followed by Monday 1 March. */
	clk.t = 4107542399;
	CHECK_TIME(&r, 0x59, 0x59, 0x23, 0x01, 0x28, 0x02, 0x00, 0x21);
	clk.t++;
	CHECK_TIME(&r, 0x00, 0x00, 0x00, 0x02, 0x01, 0x03, 0x00, 0x21);
	/* Before the epoch: -1 is Wednesday 1969-12-31 23:59:59. */
	clk.t = -1;
	CHECK_TIME(&r, 0x59, 0x59, 0x23, 0x04, 0x31, 0x12, 0x69, 0x19);
	/* Several days before it: Saturday 1969-12-27 (negative modulo). */
	clk.t = -5 * 86400;
	CHECK_TIME(&r, 0x00, 0x00, 0x00, 0x07, 0x27, 0x12, 0x69, 0x19);
	/* 2000 is a leap year (divisible by 400): Tuesday 29 February is the
	 * last day of a 400-year era's leap cycle, Wednesday 1 March next. */
	clk.t = 951782400;
	CHECK_TIME(&r, 0x00, 0x00, 0x00, 0x03, 0x29, 0x02, 0x00, 0x20);
	clk.t = 951868800;
	CHECK_TIME(&r, 0x00, 0x00, 0x00, 0x04, 0x01, 0x03, 0x00, 0x20);
	/* 2000-01-01 00:00:00 was a Saturday (7). */
	clk.t = 946684800;
	CHECK_TIME(&r, 0x00, 0x00, 0x00, 0x07, 0x01, 0x01, 0x00, 0x20);
	rtc_destroy(&r);
}

static void test_status_and_ram(void)
{
	struct fake_clock clk = { .t = 0 };
	struct rtc r;

	CHECK_EQ(rtc_init(&r, fake_now, &clk), 0);
	CHECK_EQ(rtc_read_reg(&r, REG_A), 0x26);
	rtc_write_reg(&r, REG_A, 0xa6);         /* UIP is read-only, 0 */
	CHECK_EQ(rtc_read_reg(&r, REG_A), 0x26);
	rtc_write_reg(&r, REG_A, 0x2f);
	CHECK_EQ(rtc_read_reg(&r, REG_A), 0x2f);
	CHECK_EQ(rtc_read_reg(&r, REG_C), 0x00);
	CHECK_EQ(rtc_read_reg(&r, REG_D), 0x80);        /* valid RAM/time */
	rtc_write_reg(&r, REG_D, 0x00);
	CHECK_EQ(rtc_read_reg(&r, REG_D), 0x80);
	rtc_write_reg(&r, REG_C, 0xf0);
	CHECK_EQ(rtc_read_reg(&r, REG_C), 0x00);

	/* RAM: every byte that is not a clock/status register keeps what
	 * was written; the index wraps at 128. */
	for (unsigned i = 0x0e; i < RTC_CMOS_SIZE; i++)
		if (i != CENTURY)
			rtc_write_reg(&r, (uint8_t)i, (uint8_t)(i ^ 0xa5));
	for (unsigned i = 0x0e; i < RTC_CMOS_SIZE; i++)
		if (i != CENTURY)
			CHECK_EQ(rtc_read_reg(&r, (uint8_t)i), i ^ 0xa5);
	CHECK_EQ(rtc_read_reg(&r, 0x80 | 0x40), 0x40 ^ 0xa5);
	/* Alarm registers are plain storage. */
	rtc_write_reg(&r, 0x01, 0x33);
	CHECK_EQ(rtc_read_reg(&r, 0x01), 0x33);
	rtc_destroy(&r);
}

static void test_set_clock(void)
{
	struct fake_clock clk = { .t = 1796083198 };
	struct rtc r;

	CHECK_EQ(rtc_init(&r, fake_now, &clk), 0);
	/* Freeze: reads stop moving. */
	rtc_write_reg(&r, REG_B, 0x82);
	clk.t += 5;
	CHECK_EQ(rtc_read_reg(&r, SEC), 0x58);
	/* Set 2000-01-01 00:00:00 (BCD) and let it run. */
	rtc_write_reg(&r, SEC, 0x00);
	rtc_write_reg(&r, MIN, 0x00);
	rtc_write_reg(&r, HOUR, 0x00);
	rtc_write_reg(&r, MDAY, 0x01);
	rtc_write_reg(&r, MON, 0x01);
	rtc_write_reg(&r, YEAR, 0x00);
	rtc_write_reg(&r, CENTURY, 0x20);
	rtc_write_reg(&r, REG_B, 0x02);
	CHECK_EQ(r.offset_s, 946684800 - clk.t);
	CHECK_TIME(&r, 0x00, 0x00, 0x00, 0x07, 0x01, 0x01, 0x00, 0x20);
	clk.t += 61;
	CHECK_TIME(&r, 0x01, 0x01, 0x00, 0x07, 0x01, 0x01, 0x00, 0x20);

	/* One field of a running clock, here in binary 12 h: 3 PM. */
	rtc_write_reg(&r, REG_B, 0x04);
	rtc_write_reg(&r, HOUR, 0x83);
	CHECK_EQ(rtc_read_reg(&r, HOUR), 0x83);
	CHECK_EQ(rtc_read_reg(&r, MIN), 1);
	rtc_write_reg(&r, REG_B, 0x06);
	CHECK_EQ(rtc_read_reg(&r, HOUR), 15);
	CHECK_EQ(r.offset_s, 946684800 + 15 * 3600 + 61 - clk.t);
	/* 12 AM is hour 0, 12 PM hour 12 (BCD 12 h writes). */
	rtc_write_reg(&r, REG_B, 0x00);
	rtc_write_reg(&r, HOUR, 0x12);
	rtc_write_reg(&r, REG_B, 0x02);
	CHECK_EQ(rtc_read_reg(&r, HOUR), 0x00);
	rtc_write_reg(&r, REG_B, 0x00);
	rtc_write_reg(&r, HOUR, 0x92);
	rtc_write_reg(&r, REG_B, 0x02);
	CHECK_EQ(rtc_read_reg(&r, HOUR), 0x12);
	CHECK_EQ(rtc_read_reg(&r, MDAY), 0x01);
	rtc_write_reg(&r, REG_B, 0x06);
	rtc_write_reg(&r, HOUR, 15);

	/* An invalid date (month 13) is refused; the clock keeps going. */
	rtc_write_reg(&r, REG_B, 0x86);
	rtc_write_reg(&r, MON, 13);
	rtc_write_reg(&r, REG_B, 0x06);
	CHECK_EQ(rtc_read_reg(&r, MON), 1);
	CHECK_EQ(rtc_read_reg(&r, YEAR), 0);
	CHECK_EQ(rtc_read_reg(&r, HOUR), 15);
	rtc_destroy(&r);
}

static void test_ports(void)
{
	struct fake_clock clk = { .t = 1796083198 };
	struct rtc r, bad;
	struct bus bus;
	uint8_t v;

	CHECK_EQ(rtc_init(&bad, NULL, &clk), -EINVAL);
	CHECK_EQ(rtc_init(&r, fake_now, &clk), 0);
	bus_init(&bus, "pio");
	CHECK_EQ(rtc_attach(&r, &bus), 0);
	v = 0x80 | MIN;                         /* NMI-disable bit ignored */
	CHECK_EQ(bus_write(&bus, 0x70, &v, 1), 0);
	CHECK_EQ(bus_read(&bus, 0x71, &v, 1), 0);
	CHECK_EQ(v, 0x59);
	CHECK_EQ(bus_read(&bus, 0x70, &v, 1), 0);
	CHECK_EQ(v, 0xff);                      /* index port is write-only */
	v = 0x50;
	bus_write(&bus, 0x70, &v, 1);
	v = 0x77;
	bus_write(&bus, 0x71, &v, 1);
	CHECK_EQ(rtc_read_reg(&r, 0x50), 0x77);
	CHECK_EQ(bus_read(&bus, 0x72, &v, 1), -ENOENT);
	rtc_destroy(&r);
}

int main(void)
{
	test_formats();
	test_calendar();
	test_status_and_ram();
	test_set_clock();
	test_ports();
	return check_report("test_rtc");
}
