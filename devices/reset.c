#include "devices/reset.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "common/log.h"

#define CF9_RST_CPU 0x04

/* i8042 status bits. */
#define KBD_STAT_OBF 0x01       /* output buffer full: read port 0x60 */
#define KBD_STAT_UNLOCKED 0x10  /* keyboard not inhibited by the keylock */

/* i8042 configuration byte (CTR) bits. */
#define KBD_CTR_KBDDIS 0x10
#define KBD_CTR_AUXDIS 0x20
#define KBD_CTR_XLATE 0x40

/* Output port bit 0 drives the CPU reset line (active low). */
#define KBD_OUTPORT_NORESET 0x01
#define KBD_OUTPORT_A20 0x02

static void kbd_reply_locked(struct reset_dev *r, uint8_t v)
{
	MUTEX_ASSERT_HELD(&r->lock);
	r->kbd_out = v;
	r->kbd_status |= KBD_STAT_OBF;
}

/* A controller command written to 0x64. Returns true if it resets. */
static bool kbd_command_locked(struct reset_dev *r, uint8_t cmd)
{
	MUTEX_ASSERT_HELD(&r->lock);
	r->kbd_pending = 0;
	if (cmd >= 0xf0)
		/* Pulse output port bits 0-3 low where cmd has a 0: 0xfe
		 * pulses bit 0, the reset line. */
		return !(cmd & 0x01);
	switch (cmd) {
	case 0x20:                      /* read CTR */
		kbd_reply_locked(r, r->kbd_ctr);
		break;
	case 0x60:                      /* write CTR: next data byte */
	case 0xd1:                      /* write output port */
	case 0xd2:                      /* write keyboard output buffer */
	case 0xd3:                      /* write aux output buffer */
	case 0xd4:                      /* write to aux device */
		r->kbd_pending = cmd;
		break;
	case 0xa7:
		r->kbd_ctr |= KBD_CTR_AUXDIS;
		break;
	case 0xa8:
		r->kbd_ctr &= ~KBD_CTR_AUXDIS;
		break;
	case 0xa9:                      /* aux interface test */
		/* 0x01: "clock line stuck low", i.e. no aux port; Linux
		 * then does not register a mouse port. */
		kbd_reply_locked(r, 0x01);
		break;
	case 0xaa:                      /* controller self-test */
		kbd_reply_locked(r, 0x55);
		break;
	case 0xab:                      /* keyboard interface test */
		kbd_reply_locked(r, 0x00);
		break;
	case 0xad:
		r->kbd_ctr |= KBD_CTR_KBDDIS;
		break;
	case 0xae:
		r->kbd_ctr &= ~KBD_CTR_KBDDIS;
		break;
	case 0xd0:                      /* read output port */
		kbd_reply_locked(r, KBD_OUTPORT_NORESET | KBD_OUTPORT_A20);
		break;
	default:
		log_once(LOG_INFO, "i8042: ignoring controller command %#x "
			 "(and any others not emulated)", cmd);
		break;
	}
	return false;
}

/* A data byte written to 0x60. Returns true if it resets. */
static bool kbd_data_locked(struct reset_dev *r, uint8_t v)
{
	uint8_t cmd = r->kbd_pending;

	MUTEX_ASSERT_HELD(&r->lock);
	r->kbd_pending = 0;
	switch (cmd) {
	case 0x60:
		r->kbd_ctr = v;
		break;
	case 0xd1:
		if (!(v & KBD_OUTPORT_A20))
			log_once(LOG_INFO, "i8042: guest disabled A20; "
				 "A20 masking is not emulated");
		return !(v & KBD_OUTPORT_NORESET);
	case 0xd2:
	case 0xd3:
		/* Loop the byte back as if the keyboard sent it. For 0xd3 a
		 * PS/2 controller would flag it as aux data; without that
		 * flag Linux's aux loop test fails at once (no mouse port)
		 * instead of timing out. */
		kbd_reply_locked(r, v);
		break;
	case 0xd4:
	default:
		/* To the mouse or the keyboard, neither of which exists. */
		break;
	}
	return false;
}

static void reset_request(struct reset_dev *r, const char *why)
{
	log_info("guest requested a reset (%s)", why);
	r->reset(r->opaque);
}

static void cf9_read(void *opaque, uint64_t offset, void *data, unsigned len)
{
	struct reset_dev *r = opaque;

	(void)offset;
	memset(data, 0xff, len);
	mutex_lock(&r->lock);
	*(uint8_t *)data = r->cf9;
	mutex_unlock(&r->lock);
}

static void cf9_write(void *opaque, uint64_t offset, const void *data,
		      unsigned len)
{
	struct reset_dev *r = opaque;
	uint8_t v = *(const uint8_t *)data;

	(void)offset;
	(void)len;
	mutex_lock(&r->lock);
	r->cf9 = v;
	mutex_unlock(&r->lock);
	if (v & CF9_RST_CPU)
		reset_request(r, "port 0xcf9");
}

static void kbd_read(void *opaque, uint64_t offset, void *data, unsigned len,
		     bool status)
{
	struct reset_dev *r = opaque;

	(void)offset;
	memset(data, 0xff, len);
	mutex_lock(&r->lock);
	if (status) {
		*(uint8_t *)data = r->kbd_status;
	} else {
		*(uint8_t *)data = r->kbd_out;
		r->kbd_status &= ~KBD_STAT_OBF;
	}
	mutex_unlock(&r->lock);
}

static void kbd_data_read(void *opaque, uint64_t offset, void *data,
			  unsigned len)
{
	kbd_read(opaque, offset, data, len, false);
}

static void kbd_status_read(void *opaque, uint64_t offset, void *data,
			    unsigned len)
{
	kbd_read(opaque, offset, data, len, true);
}

/* One i8042 write: the state change under the lock, the reset (which
 * calls out of the device) after it. */
static void kbd_write(struct reset_dev *r, uint8_t val,
		      bool (*step_locked)(struct reset_dev *, uint8_t), const char *why)
{
	bool reset;

	mutex_lock(&r->lock);
	reset = step_locked(r, val);
	mutex_unlock(&r->lock);
	if (reset)
		reset_request(r, why);
}

static void kbd_data_write(void *opaque, uint64_t offset, const void *data,
			   unsigned len)
{
	(void)offset;
	(void)len;
	kbd_write(opaque, *(const uint8_t *)data, kbd_data_locked, "i8042 output port");
}

static void kbd_command_write(void *opaque, uint64_t offset, const void *data,
			      unsigned len)
{
	(void)offset;
	(void)len;
	kbd_write(opaque, *(const uint8_t *)data, kbd_command_locked, "i8042 reset pulse");
}

static const struct device_ops cf9_ops = {
	.name = "reset-cf9",
	.read = cf9_read,
	.write = cf9_write,
};

static const struct device_ops kbd_data_ops = {
	.name = "i8042-data",
	.read = kbd_data_read,
	.write = kbd_data_write,
};

static const struct device_ops kbd_cmd_ops = {
	.name = "i8042-cmd",
	.read = kbd_status_read,
	.write = kbd_command_write,
};

int reset_attach(struct reset_dev *r, struct bus *pio)
{
	int err;

	if (!r->reset)
		return -EINVAL;
	err = mutex_init(&r->lock);
	if (err)
		return err;
	r->cf9 = 0;
	/* As a BIOS leaves it: translation on, both interfaces enabled,
	 * interrupts off (Linux rewrites it anyway). */
	r->kbd_ctr = KBD_CTR_XLATE;
	r->kbd_out = 0;
	r->kbd_status = KBD_STAT_UNLOCKED;
	r->kbd_pending = 0;

	err = bus_register(pio, RESET_PORT_CF9, 1, &cf9_ops, r);
	if (err)
		goto fail_cf9;
	err = bus_register(pio, RESET_PORT_KBD_DATA, 1, &kbd_data_ops, r);
	if (err)
		goto fail_data;
	err = bus_register(pio, RESET_PORT_KBD_CMD, 1, &kbd_cmd_ops, r);
	if (err)
		goto fail_cmd;
	return 0;

fail_cmd:
	bus_unregister(pio, RESET_PORT_KBD_DATA);
fail_data:
	bus_unregister(pio, RESET_PORT_CF9);
fail_cf9:
	mutex_destroy(&r->lock);
	return err;
}

void reset_destroy(struct reset_dev *r)
{
	mutex_destroy(&r->lock);
}
