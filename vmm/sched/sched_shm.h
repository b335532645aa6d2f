/*
 * The scheduling domain's memory: the sched/ domain block plus what the
 * host binding and `lagvisor stat` need next to it, in ONE mapping.
 *
 *   --sched-domain NAME: a shared-memory file (default dir /dev/shm, or
 *   $LAGVISOR_SHM_DIR; file lagvisor-NAME, mode 0600) created by the first
 *   member with O_CREAT|O_EXCL, joined by later ones. Without a name: a
 *   private anonymous mapping with the same layout.
 *
 * File layout (offsets in the header, each part 64-byte aligned):
 *   header | member table | pCPU slots | vCPU slots (one per entity) | domain
 * The header's `initialised` is stored last (release): a joiner that sees it
 * (acquire) sees everything else. Join, leave and dead-member cleanup hold
 * flock(LOCK_EX) on the file, which the kernel drops when a holder dies, so
 * a SIGKILLed member can never leave the table locked; the run queues use
 * sched/'s robust mutexes.
 *
 * A member is (pid, start time from /proc/PID/stat): a pid reused by an
 * unrelated process does not look alive. Entities carry their member's pid
 * as sched owner tag, so a dead member's vCPUs leave the queues with
 * sched_remove_owner.
 */
#ifndef LAGVISOR_VMM_SCHED_SHM_H
#define LAGVISOR_VMM_SCHED_SHM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sched/sched.h"
#include "vmm/sched/sched_opts.h"

#define SCHED_SHM_MAGIC 0x316d6f647667616cull   /* "lagvdom1" in memory order */
/* 2: KVM's per-vCPU counters (kvm_exits, kvm_emulations) joined the vCPU
 * slot. 3: the feature word gained DELAY_ZERO and PREEMPT_ELIGIBLE (every
 * later bit moved) and its defaults changed. 4: blocked vCPUs' deadlines
 * (vCPU sleep_deadline_ns, sleep_pcpu; pCPU sleeper_ns), which the
 * holder of a pCPU watches (feature HOLDER_WAKE), and the member's VM
 * name. A member of another ABI is refused at join (sched_shm_open). */
#define SCHED_SHM_ABI 4u
#define SCHED_SHM_MAX_MEMBERS 64u
#define SCHED_SHM_DEFAULT_ENTITIES 512u
/* Wakeup latency histogram: bucket 0 is < 1 us, bucket i (>= 1) holds
 * [2^(i-1), 2^i) us, the last one everything from ~33 s up. */
#define SCHED_SHM_LAT_BUCKETS 26u

/* The runner token of a pCPU (struct sched_shm_pcpu.released): SCHED_NONE
 * (nobody: idle), an entity id (that vCPU's thread holds the pCPU) or
 * SCHED_SHM_CLAIM_BASE + member (a thread of that member is making a
 * decision for the idle pCPU). */
#define SCHED_SHM_CLAIM_BASE 0xff000000u

/* The default domain of a user: DIR/lagvisor-default-UID (sched_host.c). */
#define SCHED_SHM_DEFAULT_PREFIX "default-"
#define SCHED_SHM_VM_NAME_LEN 48u

struct sched_shm_member {
	int32_t pid;                   /* 0: free slot */
	uint32_t pad;
	uint64_t start_time;           /* /proc/PID/stat field 22 */
	char name[SCHED_SHM_VM_NAME_LEN];  /* the VM's --name, NUL-terminated ("": none) */
};

struct sched_shm_pcpu {
	uint32_t released;             /* runner token, atomic (see above) */
	uint32_t kicked;               /* a decision is wanted, atomic */
	uint64_t timer_ns;             /* slice timer wanted by sched/ (0: none) */
	int32_t host_cpu;              /* host CPU number of this pCPU */
	uint32_t pad;
	uint64_t last_balance_ns;
	uint64_t busy_ns;              /* time some vCPU thread held it (stat) */
	uint64_t sleeper_ns;           /* earliest deadline of a vCPU blocked here
					* (a lower bound; 0: none), atomic */
} __attribute__((aligned(64)));

/* Per entity: the binding's futex and identity, and counters for stat. */
struct sched_shm_vcpu {
	uint32_t grant;                /* futex: 0 none, else pCPU + 1 granted */
	uint32_t wake_seq;             /* bumped by every wake request */
	int32_t pid, tid;              /* owning member process and thread */
	uint32_t vcpu_index;           /* the VM's vCPU number */
	uint32_t in_use;
	uint64_t wake_start_ns;        /* when the pending wakeup was requested */
	uint64_t runnable_since_ns;    /* preempted or woken, waiting for a pCPU; 0: not */
	uint64_t stint_start_ns;       /* holding a pCPU since (not in run_ns yet); 0: not */
	uint64_t run_ns, wait_ns;      /* holding a pCPU / runnable without one */
	uint64_t steal_ns;             /* for the guest's steal clock: wait_ns so far
					* (host run delay not added yet) */
	uint64_t nr_wakeups, nr_preemptions, nr_migrations, nr_blocks;
	uint64_t lat_hist[SCHED_SHM_LAT_BUCKETS];
	uint64_t lat_max_ns;
	/* KVM's own counters of this vCPU (vmm/kvm_stats.h), published by its
	 * thread now and then (sched_bind_vcpu_publish_kvm): they show
	 * whether it runs natively or in KVM's instruction emulator. */
	uint64_t kvm_exits, kvm_emulations;
	/* Blocked with its own timer due at sleep_deadline_ns (0: not), from
	 * pCPU sleep_pcpu, whose holder wakes it then. Atomic. */
	uint64_t sleep_deadline_ns;
	uint32_t sleep_pcpu, pad2;
} __attribute__((aligned(64)));

struct sched_shm_header {
	uint64_t magic;
	uint32_t abi;
	uint32_t header_size;          /* sizeof(struct sched_shm_header) */
	uint32_t member_size, pcpu_size, vcpu_size, pad;
	uint64_t total_size;           /* file size */
	uint32_t nr_pcpus, max_entities, max_members;
	uint32_t initialised;          /* stored last, release */
	uint64_t member_off, pcpu_off, vcpu_off, dom_off, dom_size;
	uint64_t host_cpus[SCHED_OPTS_MAX_HOST_CPUS / 64];
	uint64_t created_ns;           /* CLOCK_MONOTONIC at creation */
} __attribute__((aligned(64)));

/* One process's view of a domain. */
struct sched_shm {
	char path[PATH_MAX];           /* "" for a private domain */
	int fd;                        /* -1 for a private domain */
	void *mem;
	size_t len;
	struct sched_shm_header *hdr;
	struct sched_shm_member *members;
	struct sched_shm_pcpu *pcpus;
	struct sched_shm_vcpu *vcpus;
	void *dom;                     /* the sched/ domain block */
	size_t dom_len;
	unsigned member;               /* own slot; SCHED_NONE for an observer */
	bool created;
};

struct sched_shm_params {
	const char *name;              /* NULL: private anonymous mapping */
	const char *dir;               /* NULL: $LAGVISOR_SHM_DIR or /dev/shm */
	const struct host_cpu_list *host_cpus;  /* pCPU i = i-th set CPU; required */
	unsigned max_entities;         /* 0: SCHED_SHM_DEFAULT_ENTITIES */
	const struct sched_domain_params *dom_params;  /* creator only; may be NULL */
	unsigned join_timeout_ms;      /* wait for a creator to finish; 0: 2000 */
	bool observe;                  /* stat: read-only, no member slot, never creates */
	const char *vm_name;           /* shown by lagvisor stat; NULL: none */
};

/* The file for a domain name: DIR/lagvisor-NAME. 0, or -ENAMETOOLONG/-EINVAL. */
int sched_shm_path(const char *dir, const char *name, char *buf, size_t len);

/*
 * Create or join (or, observe, just map) the domain. On success the caller
 * attaches its own sched_handle to s->dom / s->dom_len. Refusals (-EINVAL:
 * not a lagvisor domain, other ABI or sizes, other host CPUs, corrupt;
 * -EACCES: not owned by us or group/other may access it; -ETIMEDOUT: never
 * initialised) put one line naming the file in err.
 */
int sched_shm_open(struct sched_shm *s, const struct sched_shm_params *p,
		   char *err, size_t errlen);

/* Leave: free the member slot; the last member out unlinks the file. The
 * caller removed its entities first. Safe on a zeroed or failed struct. */
void sched_shm_close(struct sched_shm *s);

/* Whether a member slot's process is still the one that joined. */
bool sched_shm_member_alive(const struct sched_shm_member *m);

/*
 * Clean out members that died: their entities leave the queues
 * (sched_remove_owner through h), on_dead (may be NULL) is told each pid
 * after that (the binding hands their pCPUs on), then their entity slots and
 * member slot are freed. Returns the number of members cleaned, or -errno.
 * Cheap when nobody died (one /proc read per member).
 */
int sched_shm_reap(struct sched_shm *s, struct sched_handle *h, uint64_t now_ns,
		   void (*on_dead)(void *arg, pid_t pid), void *arg);

/* Number of live member slots (racy read). */
unsigned sched_shm_nr_members(const struct sched_shm *s);

/* Start time of a process from /proc/PID/stat; 0 when gone or a zombie. */
uint64_t sched_shm_proc_start_time(pid_t pid);

/* The pCPU index of host CPU cpu, or SCHED_NONE. */
unsigned sched_shm_pcpu_of_host_cpu(const struct sched_shm *s, int cpu);

#endif
