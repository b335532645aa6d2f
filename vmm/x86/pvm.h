/*
 * Native guests on a PVM-style KVM backend (KVM without VMX/SVM that runs
 * guest supervisor code in hardware ring 3).
 *
 * There an ordinary guest runs in KVM's instruction emulator. A vCPU runs
 * natively once a "VIF" page (virtual interrupt flag, byte 0; byte 1 set
 * by KVM while it holds an interrupt for a guest whose flag is 0) is
 * registered through MSR X86_PVM_MSR_VIF, its page tables have U/S set at
 * every level and it is in long mode. Only a guest that says it follows
 * those rules gets one: an ELF note (name "lagvisor", type
 * X86_PVM_NOTE_VIF, descriptor: u64 GPA of an array of 4 KiB pages inside
 * the image, u32 page count), one page per APIC ID. lagvisor registers page
 * n for vCPU n and appends "pvm.vif=0xGPA" to the guest's command line.
 *
 * The backend is detected, never assumed: a scratch vCPU must accept the
 * MSR from userspace and refuse its unused neighbour (ordinary KVM refuses
 * both, with ignore_msrs takes both; the read-back proves nothing). The
 * ABI and what the tests check: vmm/x86/README.md §1.
 */
#ifndef LAGVISOR_VMM_X86_PVM_H
#define LAGVISOR_VMM_X86_PVM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/guest_mem.h"

#define X86_PVM_MSR_VIF      0x4b564d10u
#define X86_PVM_NOTE_NAME    "lagvisor"
#define X86_PVM_NOTE_VIF     1u
#define X86_PVM_PAGE_BYTES   4096u
/* A host-initiated write needs bit 10 (bit 9 clear); reads return it. */
#define X86_PVM_VIF_HOST_BIT 0x400ull

/* 1: the KVM behind kvm_fd takes VIF pages; 0: it does not; -errno. */
int x86_pvm_probe(int kvm_fd);

/* Parse the note's descriptor. 0, or -EINVAL with the reason in why. */
int x86_pvm_note_parse(const uint8_t *desc, size_t len, uint64_t *gpa,
		       uint32_t *pages, char *why, size_t whylen);

/* Append " pvm.vif=0xGPA" to the NUL-terminated command line at `cmdline`
 * (room bytes in all). 0, or -E2BIG leaving it unchanged. */
int x86_pvm_cmdline_append(char *cmdline, size_t room, uint64_t gpa);

/* Register `gpa` as the vCPU's VIF page. 0 or -errno (logged). */
int x86_pvm_vif_register(int vcpu_fd, unsigned index, uint64_t gpa);

#endif
