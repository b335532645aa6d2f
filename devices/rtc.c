#include "devices/rtc.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "common/log.h"

enum {
	RTC_SEC = 0x00, RTC_MIN = 0x02, RTC_HOUR = 0x04, RTC_WDAY = 0x06,
	RTC_MDAY = 0x07, RTC_MON = 0x08, RTC_YEAR = 0x09, RTC_REG_A = 0x0a,
	RTC_REG_B = 0x0b, RTC_REG_C = 0x0c, RTC_REG_D = 0x0d,
	RTC_CENTURY = 0x32,
};

#define REG_A_UIP 0x80
#define REG_B_SET 0x80          /* freeze the clock for setting */
#define REG_B_DM 0x04           /* data mode: 1 = binary, 0 = BCD */
#define REG_B_24H 0x02
#define REG_D_VRT 0x80          /* valid RAM and time (battery good) */
#define HOUR_PM 0x80            /* 12 h mode */

#define SECS_PER_DAY 86400

struct rtc_tm {
	int64_t year;
	int mon, mday, hour, min, sec, wday;    /* mon 1-12, wday 0 = Sunday */
};

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/*
 * Days since 1970-01-01 of a proleptic Gregorian date. Counting years from
 * March puts the leap day last, so the day of year is a fixed function of
 * the month: months from March have lengths 31,30,31,30,31 repeating, 153
 * days per 5 months, hence doy = (153 * mp + 2) / 5 + mday - 1 with mp = 0
 * for March. A 400-year era has 146097 days (97 leap years); day 0 of era 0
 * is 0000-03-01, which is 719468 days before 1970-01-01.
 */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = floor_div(y, 400);
	yoe = y - era * 400;                                    /* [0, 399] */
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;  /* [0, 365] */
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;            /* [0, 146096] */
	return era * 146097 + doe - 719468;
}

/* The inverse: the year of era subtracts the leap days that doe contains
 * (one per 1460 days, minus one per 36524, plus one at 146096). */
static void civil_from_days(int64_t z, struct rtc_tm *tm)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = floor_div(z, 146097);
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	tm->mday = (int)(doy - (153 * mp + 2) / 5 + 1);
	tm->mon = (int)(mp < 10 ? mp + 3 : mp - 9);
	tm->year = yoe + era * 400 + (tm->mon <= 2);
}

static void rtc_time_to_tm(int64_t t, struct rtc_tm *tm)
{
	int64_t days = floor_div(t, SECS_PER_DAY);
	int64_t sod = t - days * SECS_PER_DAY;

	civil_from_days(days, tm);
	tm->hour = (int)(sod / 3600);
	tm->min = (int)(sod / 60 % 60);
	tm->sec = (int)(sod % 60);
	/* 1970-01-01 was a Thursday (4). */
	tm->wday = (int)(days - floor_div(days + 4, 7) * 7 + 4);
}

static int64_t rtc_tm_to_time(const struct rtc_tm *tm)
{
	return days_from_civil(tm->year, tm->mon, tm->mday) * SECS_PER_DAY +
	       tm->hour * 3600 + tm->min * 60 + tm->sec;
}

static bool rtc_binary(const struct rtc *r)
{
	return r->cmos[RTC_REG_B] & REG_B_DM;
}

static uint8_t rtc_enc(const struct rtc *r, int v)
{
	return rtc_binary(r) ? (uint8_t)v : (uint8_t)((v / 10) << 4 | v % 10);
}

static int rtc_dec(const struct rtc *r, uint8_t v)
{
	return rtc_binary(r) ? v : (v >> 4) * 10 + (v & 0x0f);
}

static uint8_t rtc_enc_hour(const struct rtc *r, int hour)
{
	int h12;

	if (r->cmos[RTC_REG_B] & REG_B_24H)
		return rtc_enc(r, hour);
	/* 12 h: 00:xx is 12 AM, 12:xx is 12 PM. */
	h12 = hour % 12 ? hour % 12 : 12;
	return rtc_enc(r, h12) | (hour >= 12 ? HOUR_PM : 0);
}

static int rtc_dec_hour(const struct rtc *r, uint8_t v)
{
	if (r->cmos[RTC_REG_B] & REG_B_24H)
		return rtc_dec(r, v);
	return rtc_dec(r, v & 0x7f) % 12 + (v & HOUR_PM ? 12 : 0);
}

static bool rtc_is_clock_reg(uint8_t index)
{
	switch (index) {
	case RTC_SEC: case RTC_MIN: case RTC_HOUR: case RTC_WDAY:
	case RTC_MDAY: case RTC_MON: case RTC_YEAR: case RTC_CENTURY:
		return true;
	}
	return false;
}

static int64_t rtc_now_locked(const struct rtc *r)
{
	MUTEX_ASSERT_HELD(&r->lock);
	return r->now_s(r->opaque) + r->offset_s;
}

/* The clock register `index` for calendar time tm, in the guest's format. */
static uint8_t rtc_field(const struct rtc *r, const struct rtc_tm *tm,
			 uint8_t index)
{
	int64_t y = tm->year < 0 ? 0 : tm->year > 9999 ? 9999 : tm->year;

	switch (index) {
	case RTC_SEC: return rtc_enc(r, tm->sec);
	case RTC_MIN: return rtc_enc(r, tm->min);
	case RTC_HOUR: return rtc_enc_hour(r, tm->hour);
	case RTC_WDAY: return rtc_enc(r, tm->wday + 1);  /* Sunday = 1 */
	case RTC_MDAY: return rtc_enc(r, tm->mday);
	case RTC_MON: return rtc_enc(r, tm->mon);
	case RTC_YEAR: return rtc_enc(r, (int)(y % 100));
	case RTC_CENTURY: return rtc_enc(r, (int)(y / 100));
	}
	return 0xff;
}

/* Calendar fields from the clock registers in r->cmos (a frozen or
 * guest-written set). Returns false if they are not a valid time. */
static bool rtc_parse_cmos(const struct rtc *r, struct rtc_tm *tm)
{
	const uint8_t *c = r->cmos;

	tm->sec = rtc_dec(r, c[RTC_SEC]);
	tm->min = rtc_dec(r, c[RTC_MIN]);
	tm->hour = rtc_dec_hour(r, c[RTC_HOUR]);
	tm->mday = rtc_dec(r, c[RTC_MDAY]);
	tm->mon = rtc_dec(r, c[RTC_MON]);
	tm->year = rtc_dec(r, c[RTC_CENTURY]) * 100 + rtc_dec(r, c[RTC_YEAR]);
	return tm->sec < 60 && tm->min < 60 && tm->hour < 24 &&
	       tm->mday >= 1 && tm->mday <= 31 && tm->mon >= 1 &&
	       tm->mon <= 12 && rtc_dec(r, c[RTC_YEAR]) < 100;
}

/* Snapshot the running clock into the clock registers. */
static void rtc_freeze_locked(struct rtc *r)
{
	static const uint8_t regs[] = { RTC_SEC, RTC_MIN, RTC_HOUR, RTC_WDAY,
					RTC_MDAY, RTC_MON, RTC_YEAR,
					RTC_CENTURY };
	struct rtc_tm tm;

	MUTEX_ASSERT_HELD(&r->lock);
	rtc_time_to_tm(rtc_now_locked(r), &tm);
	for (unsigned i = 0; i < sizeof(regs); i++)
		r->cmos[regs[i]] = rtc_field(r, &tm, regs[i]);
}

/* Run the clock from the time in the clock registers. */
static void rtc_thaw_locked(struct rtc *r)
{
	struct rtc_tm tm;

	MUTEX_ASSERT_HELD(&r->lock);
	if (!rtc_parse_cmos(r, &tm)) {
		log_once(LOG_WARN, "rtc: guest set an invalid time "
			 "(%02x:%02x:%02x %02x.%02x.%02x%02x), keeping the old",
			 r->cmos[RTC_HOUR], r->cmos[RTC_MIN], r->cmos[RTC_SEC],
			 r->cmos[RTC_MDAY], r->cmos[RTC_MON],
			 r->cmos[RTC_CENTURY], r->cmos[RTC_YEAR]);
		return;
	}
	r->offset_s = rtc_tm_to_time(&tm) - r->now_s(r->opaque);
}

int rtc_init(struct rtc *r, int64_t (*now_s)(void *opaque), void *opaque)
{
	int err;

	if (!now_s)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	err = mutex_init(&r->lock);
	if (err)
		return err;
	r->now_s = now_s;
	r->opaque = opaque;
	r->cmos[RTC_REG_A] = 0x26;      /* 32.768 kHz base, 1024 Hz rate */
	r->cmos[RTC_REG_B] = REG_B_24H;
	r->cmos[RTC_REG_D] = REG_D_VRT;
	return 0;
}

void rtc_destroy(struct rtc *r)
{
	mutex_destroy(&r->lock);
}

static uint8_t rtc_read_locked(struct rtc *r, uint8_t index)
{
	struct rtc_tm tm;
	uint8_t v;

	MUTEX_ASSERT_HELD(&r->lock);
	if (rtc_is_clock_reg(index) && !(r->cmos[RTC_REG_B] & REG_B_SET)) {
		rtc_time_to_tm(rtc_now_locked(r), &tm);
		return rtc_field(r, &tm, index);
	}
	switch (index) {
	case RTC_REG_A:
		return r->cmos[RTC_REG_A] & ~REG_A_UIP;
	case RTC_REG_C:
		/* Interrupt flags, cleared by reading; we raise none. */
		v = r->cmos[RTC_REG_C];
		r->cmos[RTC_REG_C] = 0;
		return v;
	case RTC_REG_D:
		return REG_D_VRT;
	}
	return r->cmos[index];
}

static void rtc_write_locked(struct rtc *r, uint8_t index, uint8_t val)
{
	uint8_t old_b = r->cmos[RTC_REG_B];

	MUTEX_ASSERT_HELD(&r->lock);
	if (rtc_is_clock_reg(index) && !(old_b & REG_B_SET)) {
		/* Setting one field of a running clock: the others keep
		 * running from where they are now. */
		rtc_freeze_locked(r);
		r->cmos[index] = val;
		rtc_thaw_locked(r);
		return;
	}
	switch (index) {
	case RTC_REG_A:
		r->cmos[RTC_REG_A] = val & ~REG_A_UIP;
		return;
	case RTC_REG_B:
		r->cmos[RTC_REG_B] = val;
		/* The snapshot is taken in the new format, so a guest that
		 * sets SET and changes mode in one write sees its mode. */
		if ((val & REG_B_SET) && !(old_b & REG_B_SET))
			rtc_freeze_locked(r);
		else if (!(val & REG_B_SET) && (old_b & REG_B_SET))
			rtc_thaw_locked(r);
		return;
	case RTC_REG_C:
	case RTC_REG_D:
		log_once(LOG_INFO, "rtc: guest wrote read-only status %c",
			 index == RTC_REG_C ? 'C' : 'D');
		return;
	}
	r->cmos[index] = val;
}

uint8_t rtc_read_reg(struct rtc *r, uint8_t index)
{
	uint8_t v;

	mutex_lock(&r->lock);
	v = rtc_read_locked(r, index & 0x7f);
	mutex_unlock(&r->lock);
	return v;
}

void rtc_write_reg(struct rtc *r, uint8_t index, uint8_t val)
{
	mutex_lock(&r->lock);
	rtc_write_locked(r, index & 0x7f, val);
	mutex_unlock(&r->lock);
}

/* Offset 0 is the index port (write-only: reads float to ones), offset 1
 * the data port. Only the first byte of a wider access is meaningful. */
static void rtc_bus_read(void *opaque, uint64_t offset, void *data,
			 unsigned len)
{
	struct rtc *r = opaque;

	memset(data, 0xff, len);
	if (offset != 1)
		return;
	mutex_lock(&r->lock);
	*(uint8_t *)data = rtc_read_locked(r, r->index);
	mutex_unlock(&r->lock);
}

static void rtc_bus_write(void *opaque, uint64_t offset, const void *data,
			  unsigned len)
{
	struct rtc *r = opaque;
	uint8_t v = *(const uint8_t *)data;

	if (len != 1)
		log_once(LOG_WARN, "rtc: %u-byte write at offset %llu, using "
			 "the first byte", len, (unsigned long long)offset);
	mutex_lock(&r->lock);
	if (offset == 0)
		r->index = v & 0x7f;    /* bit 7 masks NMI on a PC: ignored */
	else if (offset == 1)
		rtc_write_locked(r, r->index, v);
	mutex_unlock(&r->lock);
}

static const struct device_ops rtc_ops = {
	.name = "rtc",
	.read = rtc_bus_read,
	.write = rtc_bus_write,
};

int rtc_attach(struct rtc *r, struct bus *pio)
{
	return bus_register(pio, RTC_PORT_INDEX, 2, &rtc_ops, r);
}
