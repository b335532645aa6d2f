// SPDX-License-Identifier: MIT
/*
 * KVM smoke probe run by `scripts/nested-kvm --self-test` inside the nested
 * (TCG + emulated SVM) VM: opens /dev/kvm, runs a real-mode loop of 100
 * `out 0x10, al` followed by `hlt` in a 64 KiB guest and times each KVM_RUN
 * round trip. Prints "probe: OK" and exits 0 only if every exit is as expected.
 * Built by the script with `gcc -static`; not part of the meson build.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CODE_GPA 0x1000
#define LOOPS 100

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int fail(const char *what)
{
	perror(what);
	return 1;
}

int main(void)
{
	/* 16-bit: out 0x10,al; inc al; cmp al,LOOPS; jne start; hlt */
	static const uint8_t code[] = { 0xe6, 0x10, 0xfe, 0xc0, 0x3c, LOOPS, 0x75, 0xf8, 0xf4 };
	const size_t mem_size = 0x10000;
	struct kvm_userspace_memory_region region;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_run *run;
	uint64_t first_ns = 0, sum_ns = 0, min_ns = UINT64_MAX, max_ns = 0;
	int kvm, vm, vcpu, run_size, n_io = 0, n_bad = 0, n_runs = 0;
	uint8_t *mem;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return fail("probe: open /dev/kvm");
	printf("probe: api=%d user_space_msr=%d irqchip=%d nr_vcpus=%d\n",
	       ioctl(kvm, KVM_GET_API_VERSION, 0),
	       ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_X86_USER_SPACE_MSR),
	       ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_IRQCHIP),
	       ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_NR_VCPUS));
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		return fail("probe: KVM_CREATE_VM");
	mem = mmap(NULL, mem_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return fail("probe: mmap guest memory");
	memcpy(mem + CODE_GPA, code, sizeof(code));
	memset(&region, 0, sizeof(region));
	region.memory_size = mem_size;
	region.userspace_addr = (uintptr_t)mem;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		return fail("probe: KVM_SET_USER_MEMORY_REGION");
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		return fail("probe: KVM_CREATE_VCPU");
	run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (run_size <= 0)
		return fail("probe: KVM_GET_VCPU_MMAP_SIZE");
	run = mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		return fail("probe: mmap kvm_run");
	if (ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0)
		return fail("probe: KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0)
		return fail("probe: KVM_SET_SREGS");
	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_GPA;
	regs.rflags = 2;
	if (ioctl(vcpu, KVM_SET_REGS, &regs) < 0)
		return fail("probe: KVM_SET_REGS");

	for (;;) {
		uint64_t t0 = now_ns(), dt;

		if (ioctl(vcpu, KVM_RUN, 0) < 0)
			return fail("probe: KVM_RUN");
		dt = now_ns() - t0;
		/* The first run includes building the guest's page tables/VMCB. */
		if (n_runs++ == 0) {
			first_ns = dt;
		} else {
			sum_ns += dt;
			min_ns = dt < min_ns ? dt : min_ns;
			max_ns = dt > max_ns ? dt : max_ns;
		}
		if (run->exit_reason == KVM_EXIT_IO) {
			uint8_t v = *((uint8_t *)run + run->io.data_offset);

			if (run->io.port != 0x10 || run->io.direction != KVM_EXIT_IO_OUT || v != n_io)
				n_bad++;
			n_io++;
			continue;
		}
		if (run->exit_reason == KVM_EXIT_HLT)
			break;
		printf("probe: unexpected exit reason %u (hardware exit 0x%llx)\n", run->exit_reason,
		       (unsigned long long)run->hw.hardware_exit_reason);
		printf("probe: FAIL\n");
		return 1;
	}
	if (ioctl(vcpu, KVM_GET_REGS, &regs) < 0)
		return fail("probe: KVM_GET_REGS");
	printf("probe: %d io exits (%d wrong), then hlt exit at rip 0x%llx\n", n_io, n_bad,
	       (unsigned long long)regs.rip);
	printf("probe: first KVM_RUN %llu us; round trip avg %llu us, min %llu, max %llu over %d\n",
	       (unsigned long long)(first_ns / 1000),
	       (unsigned long long)(sum_ns / (uint64_t)(n_runs - 1) / 1000),
	       (unsigned long long)(min_ns / 1000), (unsigned long long)(max_ns / 1000), n_runs - 1);
	if (n_io != LOOPS || n_bad || regs.rip != CODE_GPA + sizeof(code)) {
		printf("probe: FAIL\n");
		return 1;
	}
	printf("probe: OK\n");
	return 0;
}
