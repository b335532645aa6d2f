/*
 * apic-modes: IPI delivery modes beyond fixed/physical, and a guest that
 * misuses its APIC.
 *  - NMI IPIs (delivery mode NMI) reach each other vCPU, one at a time,
 *    exactly NMI_ROUNDS times, through the NMI vector (2) without an EOI;
 *  - logical destination mode: xAPIC flat model (DFR all ones, LDR one bit
 *    per CPU) or x2APIC cluster (LDR read-only); an IPI to a set of
 *    logical IDs reaches exactly that set;
 *  - misuse is contained: IPIs with illegal vectors (0-15), writes to
 *    reserved and read-only registers, an unmasked LVT with vector 0. The
 *    guest must keep running with its APIC working (ESR shown for
 *    information: KVM and lagvisor need not agree bit for bit).
 */
#include "guest.h"

#define VEC_NMI       2
#define VEC_LOGICAL   0x60
#define VEC_CHECK     0x61
#define NMI_ROUNDS    200
#define WAIT_MS       5000
#define APIC_LDR      0x0d0
#define APIC_DFR      0x0e0
#define APIC_DEST_LOGICAL (1u << 11)

static volatile uint32_t nmis[MAX_CPUS], logical_hits[MAX_CPUS], checks[MAX_CPUS];
static volatile uint32_t ldr[MAX_CPUS];

static void nmi_handler(struct trap_frame *f)
{
	(void)f;
	atomic_inc(&nmis[smp_id()]);
}

static void logical_handler(struct trap_frame *f)
{
	(void)f;
	atomic_inc(&logical_hits[smp_id()]);
}

static void check_handler(struct trap_frame *f)
{
	(void)f;
	atomic_inc(&checks[smp_id()]);
}

static bool wait_count(volatile uint32_t *p, uint32_t want)
{
	return wait_count_ms(p, want, WAIT_MS);
}

static void spin_ms(unsigned ms)
{
	uint64_t end = tsc_deadline_ms(ms);

	while ((int64_t)(rdtsc() - end) < 0)
		cpu_relax();
}

static void test_nmi(unsigned n)
{
	for (unsigned c = 1; c < n; c++) {
		unsigned r = 0;

		for (; r < NMI_ROUNDS; r++) {
			lapic_send_ipi(cpu_struct(c)->apic_id, APIC_DM_NMI);
			if (!wait_count(&nmis[c], r + 1))
				break;
		}
		spin_ms(5);
		report(r == NMI_ROUNDS && nmis[c] == NMI_ROUNDS,
		       "NMI IPI to cpu %u: %u/%u delivered", c, nmis[c], NMI_ROUNDS);
	}
	report(nmis[0] == 0, "no NMI on the sender");
}

/* Each CPU: flat model with its own bit (xAPIC), or just read the LDR. */
static void setup_logical(void *arg)
{
	unsigned me = smp_id();

	(void)arg;
	if (!lapic_x2apic()) {
		lapic_write(APIC_DFR, 0xffffffffu);
		lapic_write(APIC_LDR, (1u << me) << 24);
	}
	ldr[me] = lapic_read(APIC_LDR);
}

static uint32_t logical_dest(uint32_t set)
{
	uint32_t d = 0;

	for (unsigned c = 0; c < 32; c++)
		if (set & (1u << c))
			d |= lapic_x2apic() ? ldr[c] : ldr[c] >> 24;
	return d;
}

static void test_logical(unsigned n)
{
	uint32_t sets[3] = { 1u << 1, 0, 0 };
	bool ok = true;

	for (unsigned c = 0; c < n; c++)
		on_cpu(c, setup_logical, NULL);
	for (unsigned c = 0; c < n; c++)
		report_info("cpu %u: LDR 0x%08x", c, ldr[c]);
	for (unsigned c = 1; c < n; c++)
		sets[1] |= 1u << c;               /* all but the sender */
	sets[2] = n > 2 ? (1u << 0) | (1u << (n - 1)) : 1u << 0;  /* incl. self */
	for (unsigned s = 0; s < 3; s++) {
		uint32_t before[MAX_CPUS];

		for (unsigned c = 0; c < n; c++)
			before[c] = logical_hits[c];
		lapic_send_ipi(logical_dest(sets[s]),
			       APIC_DM_FIXED | APIC_DEST_LOGICAL | VEC_LOGICAL);
		for (unsigned c = 0; c < n; c++)
			if (sets[s] & (1u << c))
				wait_count(&logical_hits[c], before[c] + 1);
		spin_ms(5);
		for (unsigned c = 0; c < n; c++) {
			uint32_t want = before[c] + ((sets[s] >> c) & 1);

			if (logical_hits[c] != want) {
				ok = false;
				report_info("set 0x%x: cpu %u got %u, expected %u", sets[s],
					    c, logical_hits[c], want);
			}
		}
	}
	report(ok, "logical destination (%s): IPIs reached exactly their sets",
	       lapic_x2apic() ? "x2APIC cluster" : "xAPIC flat");
}

static uint32_t read_esr(void)
{
	lapic_write(APIC_ESR, 0);       /* latch the errors so far */
	return lapic_read(APIC_ESR);
}

static void test_misuse(unsigned n)
{
	uint32_t esr;

	read_esr();
	/* KVM's own APIC delivers vectors 0-15 (they would arrive as
	 * exceptions): only where the command line says the VMM refuses them
	 * as the SDM says (ESR send/receive illegal vector). */
	if (cmdline_has("illegal-vectors")) {
		for (unsigned v = 0; v < 16; v++) {
			lapic_send_ipi(cpu_struct(1)->apic_id, APIC_DM_FIXED | v);
			lapic_send_ipi(0, APIC_DM_FIXED | APIC_DEST_SELF | v);
		}
		spin_ms(5);
		esr = read_esr();
		report(esr & 0x60, "illegal-vector IPIs refused, ESR 0x%x "
		       "(send/receive illegal vector)", esr);
	} else {
		report_skip("illegal-vector IPIs (no illegal-vectors on the command line)");
	}
	/* Reserved and read-only registers, LVT with vector 0 but masked off
	 * the moment it matters (timer stopped), ICR with a reserved mode. */
	if (!lapic_x2apic()) {
		lapic_write(0x040, 0xdeadbeef);
		lapic_write(0x0a0, 0xdeadbeef);      /* PPR: read-only */
		lapic_write(0x3f0, 0xdeadbeef);
		(void)lapic_read(0x3f0);
		lapic_send_ipi(cpu_struct(1)->apic_id, 0x300 | VEC_CHECK); /* mode 3: reserved */
	}
	lapic_write(APIC_LVTERR, APIC_LVT_MASKED);
	lapic_write(APIC_LVT0, APIC_LVT_MASKED | 0x0);
	esr = read_esr();
	report_info("ESR after reserved-register writes: 0x%x", esr);
	/* The APICs still work: a fixed IPI each way. */
	for (unsigned c = 1; c < n; c++) {
		uint32_t before = checks[c];

		lapic_send_ipi(cpu_struct(c)->apic_id, APIC_DM_FIXED | VEC_CHECK);
		report(wait_count(&checks[c], before + 1),
		       "after misuse: fixed IPI to cpu %u still delivered", c);
	}
	report(checks[0] == 0, "no stray interrupt on the sender");
}

int main(int argc, char **argv)
{
	unsigned n;

	(void)argc, (void)argv;
	irq_set_handler(VEC_NMI, nmi_handler);
	irq_set_handler(VEC_LOGICAL, logical_handler);
	irq_set_handler(VEC_CHECK, check_handler);
	n = smp_init(10000);
	if (!report(n >= 2 && n == smp_expected_cpus(), "%u of %u CPUs online",
		    n, smp_expected_cpus()))
		return report_summary();
	irq_enable();
	test_nmi(n);
	test_logical(n);
	test_misuse(n);
	return report_summary();
}
