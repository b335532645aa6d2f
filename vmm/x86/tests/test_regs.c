/*
 * GDT descriptors, page tables, entry registers, SIPI state, GSI routing
 * and LAPIC LINT setup, against values worked out from the Intel SDM
 * (descriptor and paging formats) and the boot protocols.
 */
#include <errno.h>
#include <stdlib.h>

#include "vmm/x86/boot.h"
#include "vmm/x86/irqchip.h"
#include "vmm/x86/regs.h"
#include "common/test_check.h"
#include "le_bytes.h"

static void test_gdt(void)
{
	uint64_t g[X86_GDT_ENTRIES];

	x86_gdt_build(g, true);
	CHECK_EQ(g[0], 0);
	CHECK_EQ(g[1], 0);
	CHECK_EQ(g[2], 0x00af9b000000ffffULL);   /* 64-bit code, G, limit 0xfffff */
	CHECK_EQ(g[3], 0x00cf93000000ffffULL);   /* 32-bit data, G */
	CHECK_EQ(g[4], 0x00008b0000000067ULL);   /* busy TSS, limit 0x67 */
	CHECK_EQ(g[5], 0);
	x86_gdt_build(g, false);
	CHECK_EQ(g[2], 0x00cf9b000000ffffULL);   /* 32-bit code */
	CHECK_EQ(x86_gdt_entry(0x93, 0xc, 0x12345678, 0xabcde), 0x12ca93345678bcdeULL);
}

static void test_page_tables(void)
{
	uint8_t *pt = calloc(1, X86_PAGE_TABLE_BYTES);

	x86_page_tables_build(pt, 0x9000);
	CHECK_EQ(rd(pt, 8), 0xa003);                       /* PML4[0] -> PDPT, P|RW */
	CHECK_EQ(rd(pt + 8, 8), 0);
	CHECK_EQ(rd(pt + 0x1000, 8), 0xb003);              /* PDPT[0..3] -> PDs */
	CHECK_EQ(rd(pt + 0x1018, 8), 0xe003);
	CHECK_EQ(rd(pt + 0x1020, 8), 0);
	CHECK_EQ(rd(pt + 0x2000, 8), 0x83);                /* 0..2M, P|RW|PS */
	CHECK_EQ(rd(pt + 0x2008, 8), 0x200083);
	CHECK_EQ(rd(pt + 0x3000, 8), 0x40000083);          /* PD 1 starts at 1 GiB */
	CHECK_EQ(rd(pt + 0x5ff8, 8), 0xffe00083);          /* last 2M below 4 GiB */
	free(pt);
}

static void test_sregs(void)
{
	struct kvm_sregs s;

	memset(&s, 0, sizeof(s));
	s.apic_base = 0xfee00900;
	x86_boot_sregs(&s, X86_ENTRY_LINUX64);
	CHECK_EQ(s.cs.selector, 0x10);
	CHECK_EQ(s.cs.base, 0);
	CHECK_EQ(s.cs.limit, 0xffffffff);
	CHECK(s.cs.type == 0xb && s.cs.present && s.cs.s && s.cs.l && !s.cs.db && s.cs.g &&
	      s.cs.dpl == 0);
	CHECK(s.ds.selector == 0x18 && s.ss.selector == 0x18 && s.es.selector == 0x18 &&
	      s.fs.selector == 0x18 && s.gs.selector == 0x18);
	CHECK(s.ds.type == 0x3 && s.ds.db && s.ds.g && !s.ds.l && s.ds.limit == 0xffffffff);
	CHECK(s.tr.selector == 0x20 && s.tr.type == 0xb && !s.tr.s && s.tr.present &&
	      s.tr.limit == 0x67 && s.tr.base == 0);
	CHECK_EQ(s.gdt.base, 0x500);
	CHECK_EQ(s.gdt.limit, 47);
	CHECK_EQ(s.cr0, 0x80000011);
	CHECK_EQ(s.cr3, 0x9000);
	CHECK_EQ(s.cr4, 0x20);
	CHECK_EQ(s.efer, 0x500);
	CHECK_EQ(s.apic_base, 0xfee00900);                 /* untouched */

	x86_boot_sregs(&s, X86_ENTRY_PVH32);
	CHECK(s.cs.selector == 0x10 && s.cs.type == 0xb && s.cs.db && !s.cs.l &&
	      s.cs.limit == 0xffffffff && s.cs.base == 0);
	CHECK(s.ds.limit == 0xffffffff && s.ds.db && s.ds.base == 0);
	CHECK_EQ(s.cr0, 0x11);                             /* PE (+ read-only ET) */
	CHECK_EQ(s.cr3, 0);
	CHECK_EQ(s.cr4, 0);
	CHECK_EQ(s.efer, 0);
}

static void test_regs(void)
{
	struct x86_boot_info b = { .mode = X86_ENTRY_LINUX64, .entry_gpa = 0x100200,
				   .param_gpa = 0x7000 };
	struct kvm_sregs s;
	struct kvm_regs r;

	memset(&r, 0xff, sizeof(r));
	x86_boot_regs(&r, &b);
	CHECK(r.rip == 0x100200 && r.rsi == 0x7000 && r.rbx == 0 && r.rflags == 2 &&
	      r.rax == 0 && r.rsp == 0x8ff0);
	b.mode = X86_ENTRY_PVH32;
	b.entry_gpa = 0x1000000;
	x86_boot_regs(&r, &b);
	CHECK(r.rip == 0x1000000 && r.rbx == 0x7000 && r.rsi == 0 && r.rflags == 2);

	memset(&s, 0, sizeof(s));
	s.cs.base = 0xffff0000;
	s.cs.selector = 0xf000;
	r.rip = 0xfff0;
	x86_sipi_regs(&s, &r, 0x9a);
	CHECK(s.cs.selector == 0x9a00 && s.cs.base == 0x9a000 && r.rip == 0);
}

static void test_irqchip(void)
{
	struct kvm_irq_routing_entry e[X86_GSI_ROUTES];
	unsigned pic = 0, ioapic = 0;
	uint8_t regs[KVM_APIC_REG_SIZE];

	memset(e, 0xff, sizeof(e));
	x86_gsi_routes_build(e);
	for (unsigned i = 0; i < X86_GSI_ROUTES; i++) {
		CHECK(e[i].type == KVM_IRQ_ROUTING_IRQCHIP && e[i].flags == 0);
		CHECK(e[i].gsi != 2);
		if (e[i].u.irqchip.irqchip == KVM_IRQCHIP_IOAPIC) {
			ioapic++;
			CHECK_EQ(e[i].u.irqchip.pin, e[i].gsi == 0 ? 2 : e[i].gsi);
		} else {
			pic++;
			CHECK(e[i].gsi < 16);
			CHECK_EQ(e[i].u.irqchip.irqchip,
				 e[i].gsi < 8 ? KVM_IRQCHIP_PIC_MASTER : KVM_IRQCHIP_PIC_SLAVE);
			CHECK_EQ(e[i].u.irqchip.pin, e[i].gsi % 8);
		}
	}
	CHECK_EQ(pic, 15);
	CHECK_EQ(ioapic, 23);

	memset(regs, 0, sizeof(regs));
	wr(regs + 0x350, 4, 0x10000);    /* masked, fixed */
	wr(regs + 0x360, 4, 0x10700);    /* masked, ExtINT */
	wr(regs + 0x370, 4, 0x12345);    /* LVT error: untouched */
	x86_lapic_set_lints(regs);
	CHECK_EQ(rd(regs + 0x350, 4), 0x10700);
	CHECK_EQ(rd(regs + 0x360, 4), 0x10400);
	CHECK_EQ(rd(regs + 0x370, 4), 0x12345);
}

/* x86_nmi_due decides both of its uses: kvm-unit-tests apic "multiple
 * nmi" (a fixed IPI sent after two NMIs was delivered before them) and
 * guest test apic-modes-user (a halted vCPU slept on an NMI KVM held). */
static void test_nmi_due(void)
{
	struct kvm_vcpu_events ev;

	memset(&ev, 0, sizeof(ev));
	CHECK(!x86_nmi_due(&ev));
	CHECK(!x86_nmi_in_kvm(&ev));
	ev.nmi.pending = 1;                     /* next entry injects it */
	CHECK(x86_nmi_due(&ev));
	CHECK(x86_nmi_in_kvm(&ev));
	ev.nmi.masked = 1;                      /* in an NMI handler: may wait */
	CHECK(!x86_nmi_due(&ev));
	CHECK(x86_nmi_in_kvm(&ev));
	ev.nmi.pending = 0;
	ev.nmi.injected = 1;                    /* being delivered */
	CHECK(x86_nmi_due(&ev));
	CHECK(x86_nmi_in_kvm(&ev));
	ev.nmi.injected = 0;                    /* handler running, none left */
	CHECK(!x86_nmi_due(&ev));
	CHECK(!x86_nmi_in_kvm(&ev));
}

/* A native vCPU on a PVM backend: its VIF byte decides, not kvm_run's
 * if_flag (seen as 0 with the VIF byte 1 at a HLT exit, and as 1 with it 0
 * after an interrupt-window request). */
static void test_irq_allowed(void)
{
	struct kvm_run run;
	uint8_t vif[2] = { 0, 0 };

	memset(&run, 0, sizeof(run));
	run.if_flag = 1;
	CHECK(!x86_irq_allowed(&run, NULL));    /* not ready: something queued */
	run.ready_for_interrupt_injection = 1;
	CHECK(x86_irq_allowed(&run, NULL));
	CHECK(x86_irq_flag(&run, NULL));
	CHECK(!x86_irq_allowed(&run, vif));     /* native: VIF byte 0 says no */
	CHECK(!x86_irq_flag(&run, vif));
	run.if_flag = 0;
	vif[0] = 1;
	CHECK(x86_irq_allowed(&run, vif));
	CHECK(x86_irq_flag(&run, vif));
	CHECK(!x86_irq_allowed(&run, NULL));
	run.ready_for_interrupt_injection = 0;  /* a vector still queued in KVM */
	CHECK(!x86_irq_allowed(&run, vif));
	CHECK(x86_irq_flag(&run, vif));
}

int main(void)
{
	test_gdt();
	test_page_tables();
	test_sregs();
	test_regs();
	test_irqchip();
	test_nmi_due();
	test_irq_allowed();
	return check_report("x86_test_regs");
}
