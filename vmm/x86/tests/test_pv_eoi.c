/* PV EOI's MSR and flag protocol (vmm/x86/pv_eoi.h), on a fake guest RAM. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/test_check.h"
#include "vmm/x86/pv_eoi.h"

static uint8_t ram[8192];

int main(void)
{
	struct guest_mem mem = { .nr = 1, .slots = { { .gpa = 0x10000, .size = sizeof(ram),
						       .hva = ram } } };
	struct pv_eoi p;

	pv_eoi_reset(&p);
	/* Off: nothing armed, whatever the LAPIC says. */
	pv_eoi_arm(&p, true);
	CHECK(!p.armed);
	CHECK(!pv_eoi_disarm(&p));
	/* Bad addresses: #GP, and the old state stays. */
	CHECK_EQ(pv_eoi_msr_write(&p, &mem, 0x10002 | 1), -EINVAL);     /* not 4-aligned */
	CHECK_EQ(pv_eoi_msr_write(&p, &mem, 0x0 | 1), -EINVAL);         /* outside RAM */
	CHECK_EQ(pv_eoi_msr_write(&p, &mem, (0x10000 + sizeof(ram)) | 1), -EINVAL);
	CHECK_EQ(pv_eoi_msr_read(&p), 0);
	CHECK(p.flag == NULL);
	/* On, at the last byte of RAM. */
	CHECK_EQ(pv_eoi_msr_write(&p, &mem, (0x10000 + sizeof(ram) - 4) | 1), 0);
	CHECK_EQ(pv_eoi_msr_read(&p), (0x10000 + sizeof(ram) - 4) | 1);
	CHECK(p.flag == &ram[sizeof(ram) - 4]);

	/* An EOI not deferrable: the bit stays clear. */
	ram[sizeof(ram) - 4] = 0xf0;
	pv_eoi_arm(&p, false);
	CHECK_EQ(ram[sizeof(ram) - 4], 0xf0);
	CHECK(!pv_eoi_disarm(&p));

	/* Armed, the guest did not EOI: cleared again, nothing to do; the
	 * guest's other bits are its own. */
	pv_eoi_arm(&p, true);
	CHECK_EQ(ram[sizeof(ram) - 4], 0xf1);
	CHECK(!pv_eoi_disarm(&p));
	CHECK_EQ(ram[sizeof(ram) - 4], 0xf0);
	CHECK_EQ(p.nr_eois, 0);

	/* Armed, the guest cleared the bit: that was its EOI, once. */
	pv_eoi_arm(&p, true);
	ram[sizeof(ram) - 4] &= (uint8_t)~1;
	CHECK(pv_eoi_disarm(&p));
	CHECK(!pv_eoi_disarm(&p));
	CHECK_EQ(p.nr_eois, 1);

	/* Disabled by the guest, then reset: off and reading back 0. */
	CHECK_EQ(pv_eoi_msr_write(&p, &mem, 0x10000), 0);
	CHECK(p.flag == NULL);
	CHECK_EQ(pv_eoi_msr_read(&p), 0x10000);
	pv_eoi_reset(&p);
	CHECK_EQ(pv_eoi_msr_read(&p), 0);
	return check_report("test_pv_eoi");
}
