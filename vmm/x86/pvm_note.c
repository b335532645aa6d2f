/* The pure half of native mode (pvm.h): the guest's note and command line. */
#include "vmm/x86/pvm.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vmm/x86/bytes.h"

int x86_pvm_note_parse(const uint8_t *desc, size_t len, uint64_t *gpa,
		       uint32_t *pages, char *why, size_t whylen)
{
	if (len < 12) {
		snprintf(why, whylen, "lagvisor VIF note has %zu descriptor bytes, not 12", len);
		return -EINVAL;
	}
	*gpa = get_le64(desc);
	*pages = get_le32(desc + 8);
	if (*gpa % X86_PVM_PAGE_BYTES || *pages == 0 || *gpa >= (1ull << 32)) {
		snprintf(why, whylen, "lagvisor VIF note: pages at 0x%" PRIx64
			 " (%" PRIu32 " of them) are not whole pages below 4 GiB",
			 *gpa, *pages);
		return -EINVAL;
	}
	return 0;
}

int x86_pvm_cmdline_append(char *cmdline, size_t room, uint64_t gpa)
{
	size_t len = strnlen(cmdline, room);
	int n;

	if (len >= room)
		return -E2BIG;
	n = snprintf(cmdline + len, room - len, "%spvm.vif=0x%" PRIx64,
		     len ? " " : "", gpa);
	if (n < 0 || (size_t)n >= room - len) {
		cmdline[len] = '\0';
		return -E2BIG;
	}
	return 0;
}
