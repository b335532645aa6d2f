/* PV EOI with lagvisor's LAPIC (see pv_eoi.h). */
#include "vmm/x86/pv_eoi.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "common/log.h"

#define PV_EOI_ENABLED  1u
#define PV_EOI_BIT      1u

int pv_eoi_msr_write(struct pv_eoi *p, const struct guest_mem *mem, uint64_t val)
{
	uint64_t gpa = val & ~(uint64_t)PV_EOI_ENABLED;
	uint8_t *flag = NULL;

	if (!(val & PV_EOI_ENABLED)) {
		p->msr = val;
		p->flag = NULL;
		return 0;
	}
	if (gpa & 3)
		return -EINVAL;
	flag = guest_mem_ptr(mem, gpa, 1);
	if (!flag) {
		log_once(LOG_INFO, "guest put its PV EOI flag at 0x%" PRIx64 ", outside RAM: #GP",
			 gpa);
		return -EINVAL;
	}
	p->msr = val;
	p->flag = flag;
	return 0;
}

uint64_t pv_eoi_msr_read(const struct pv_eoi *p)
{
	return p->msr;
}

void pv_eoi_reset(struct pv_eoi *p)
{
	memset(p, 0, sizeof(*p));
}

void pv_eoi_arm(struct pv_eoi *p, bool deferrable)
{
	if (!p->flag || !deferrable)
		return;
	/* Only this bit is ours: the guest keeps the rest of its byte. */
	__atomic_fetch_or(p->flag, PV_EOI_BIT, __ATOMIC_RELEASE);
	p->armed = true;
}

bool pv_eoi_disarm(struct pv_eoi *p)
{
	uint8_t old;

	if (!p->armed)
		return false;
	p->armed = false;
	old = __atomic_fetch_and(p->flag, (uint8_t)~PV_EOI_BIT, __ATOMIC_ACQ_REL);
	if (old & PV_EOI_BIT)
		return false;
	p->nr_eois++;
	return true;
}
