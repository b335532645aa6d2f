/* The input encoding of fuzz_sched_shm.c, shared with the seed generator. */
#ifndef LAGVISOR_VMM_FUZZ_SCHED_SHM_OPS_H
#define LAGVISOR_VMM_FUZZ_SCHED_SHM_OPS_H

#include <stddef.h>

#include "vmm/sched/sched_shm.h"

/* Input: u8 flags (and a u32 new size with SHM_FLAG_RESIZE), then ops. */
#define SHM_FLAG_OBSERVE 0x01   /* open as `lagvisor stat` does */
#define SHM_FLAG_RESIZE  0x02   /* u32: the file's size (truncated or grown) */
#define SHM_FLAG_MODE    0x04   /* group-readable: must be refused */

enum shm_op {
	SHM_OP_PATCH,           /* u32 offset, u8 n, n bytes: at offset % file size */
	SHM_OP_PATCH_DOM,       /* the same, from the domain block's start */
	SHM_OP_MEMBER,          /* u8 slot, u32 pid, u64 start time */
	SHM_OP_COUNT
};

/* Header fields the seeds patch. */
#define SHM_HDR_NR_PCPUS offsetof(struct sched_shm_header, nr_pcpus)
#define SHM_HDR_DOM_OFF offsetof(struct sched_shm_header, dom_off)

#endif
