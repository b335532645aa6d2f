#include "vmm/sched/sched_shm.h"

#include "common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ALIGN64(x) (((x) + 63) & ~(uint64_t)63)

int sched_shm_path(const char *dir, const char *name, char *buf, size_t len)
{
	int n;

	if (!name || !sched_opts_domain_name_ok(name))
		return -EINVAL;
	if (!dir)
		dir = getenv("LAGVISOR_SHM_DIR");
	if (!dir || !*dir)
		dir = "/dev/shm";
	n = snprintf(buf, len, "%s/lagvisor-%s", dir, name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

uint64_t sched_shm_proc_start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	char state;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* "pid (comm) S ppid ...": comm may hold spaces and parentheses, so
	 * fields count from the last ')'. starttime is field 22, i.e. the
	 * 20th after the state (field 3). */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c", &state) != 1 || state == 'Z' || state == 'X')
		return 0;
	p += 2;
	for (int f = 3; f < 22 && p; f++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p || sscanf(p, "%llu", &start) != 1)
		return 0;
	return start ? (uint64_t)start : 1;
}

bool sched_shm_member_alive(const struct sched_shm_member *m)
{
	pid_t pid = __atomic_load_n(&m->pid, __ATOMIC_ACQUIRE);
	uint64_t st;

	if (pid <= 0)
		return false;
	st = sched_shm_proc_start_time(pid);
	if (st)
		return st == m->start_time;
	/* No entry, or a zombie: dead, unless /proc itself is missing, where
	 * kill(pid, 0) is all we can ask (and cannot see pid reuse). */
	return access("/proc/self/stat", R_OK) != 0 && kill(pid, 0) == 0;
}

unsigned sched_shm_nr_members(const struct sched_shm *s)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->hdr->max_members; i++)
		n += __atomic_load_n(&s->members[i].pid, __ATOMIC_RELAXED) > 0;
	return n;
}

unsigned sched_shm_pcpu_of_host_cpu(const struct sched_shm *s, int cpu)
{
	for (unsigned i = 0; i < s->hdr->nr_pcpus; i++)
		if (s->pcpus[i].host_cpu == cpu)
			return i;
	return SCHED_NONE;
}

/* Offsets of every part for a domain of this shape. */
static int layout(struct sched_shm_header *h, unsigned nr_pcpus, unsigned max_entities)
{
	size_t dom = sched_domain_size(nr_pcpus, max_entities);

	if (!dom)
		return -EINVAL;
	h->header_size = sizeof(struct sched_shm_header);
	h->member_size = sizeof(struct sched_shm_member);
	h->pcpu_size = sizeof(struct sched_shm_pcpu);
	h->vcpu_size = sizeof(struct sched_shm_vcpu);
	h->nr_pcpus = nr_pcpus;
	h->max_entities = max_entities;
	h->max_members = SCHED_SHM_MAX_MEMBERS;
	h->member_off = ALIGN64(sizeof(*h));
	h->pcpu_off = ALIGN64(h->member_off + (uint64_t)h->max_members * h->member_size);
	h->vcpu_off = ALIGN64(h->pcpu_off + (uint64_t)nr_pcpus * h->pcpu_size);
	h->dom_off = ALIGN64(h->vcpu_off + (uint64_t)max_entities * h->vcpu_size);
	h->dom_size = dom;
	h->total_size = ALIGN64(h->dom_off + dom);
	return 0;
}

static void set_views(struct sched_shm *s)
{
	char *m = s->mem;

	s->hdr = s->mem;
	s->members = (void *)(m + s->hdr->member_off);
	s->pcpus = (void *)(m + s->hdr->pcpu_off);
	s->vcpus = (void *)(m + s->hdr->vcpu_off);
	s->dom = m + s->hdr->dom_off;
	s->dom_len = s->hdr->dom_size;
}

static int count_cpus(const struct host_cpu_list *l)
{
	return (int)host_cpu_list_count(l);
}

/* Fill a fresh, zeroed block: header, pCPU slots, domain; not published. */
static int init_block(struct sched_shm *s, const struct sched_shm_params *p, unsigned nr_pcpus,
		      unsigned max_entities, char *err, size_t errlen)
{
	struct sched_shm_header *h = s->mem;
	unsigned i = 0;
	int r;

	h->magic = SCHED_SHM_MAGIC;
	h->abi = SCHED_SHM_ABI;
	layout(h, nr_pcpus, max_entities);
	memcpy(h->host_cpus, p->host_cpus->bits, sizeof(h->host_cpus));
	h->created_ns = clock_now_ns();
	set_views(s);
	for (int c = 0; c < (int)SCHED_OPTS_MAX_HOST_CPUS; c++) {
		if (!host_cpu_list_test(p->host_cpus, (unsigned)c))
			continue;
		s->pcpus[i].host_cpu = c;
		s->pcpus[i].released = SCHED_NONE;
		i++;
	}
	r = sched_domain_init(s->dom, s->dom_len, nr_pcpus, max_entities, p->dom_params);
	if (r)
		snprintf(err, errlen, "cannot set up the scheduling domain: %s "
			 "(bad --slice or --sched-feature?)", strerror(-r));
	return r;
}

static int register_member(struct sched_shm *s, const struct sched_shm_params *p)
{
	for (unsigned i = 0; i < s->hdr->max_members; i++) {
		struct sched_shm_member *m = &s->members[i];

		if (m->pid > 0 && sched_shm_member_alive(m))
			continue;
		if (m->pid > 0)
			continue;              /* dead, not cleaned yet: leave to reap */
		m->start_time = sched_shm_proc_start_time(getpid());
		memset(m->name, 0, sizeof(m->name));
		if (p->vm_name)
			snprintf(m->name, sizeof(m->name), "%s", p->vm_name);
		__atomic_store_n(&m->pid, (int32_t)getpid(), __ATOMIC_RELEASE);
		s->member = i;
		return 0;
	}
	return -EUSERS;
}

static int create_private(struct sched_shm *s, const struct sched_shm_params *p,
			  unsigned nr_pcpus, unsigned max_entities, char *err, size_t errlen)
{
	struct sched_shm_header tmp;
	int r;

	memset(&tmp, 0, sizeof(tmp));
	if (layout(&tmp, nr_pcpus, max_entities)) {
		snprintf(err, errlen, "scheduling domain of %u pCPUs and %u vCPUs is too large",
			 nr_pcpus, max_entities);
		return -EINVAL;
	}
	s->len = tmp.total_size;
	s->mem = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->mem == MAP_FAILED) {
		r = -errno;
		s->mem = NULL;
		snprintf(err, errlen, "cannot map the scheduling domain: %s", strerror(-r));
		return r;
	}
	r = init_block(s, p, nr_pcpus, max_entities, err, errlen);
	if (r)
		return r;
	s->created = true;
	register_member(s, p);
	__atomic_store_n(&s->hdr->initialised, 1u, __ATOMIC_RELEASE);
	return 0;
}

static void probe_kick(void *opaque, unsigned pcpu)
{
	(void)opaque;
	(void)pcpu;
}

/*
 * A domain file of another lagvisor version (another ABI) that none of its
 * members still uses: a default domain outlives the VMs of an upgrade that
 * were SIGKILLed, and refusing it would refuse every later VM of the user.
 * The member table's place and the (pid, start time) at its slots' start
 * are the same in every ABI so far; anything that does not fit in the file
 * is not trusted (then it is refused as before). flock held.
 */
static bool abandoned_other_version(const struct sched_shm_header *h, off_t file_size)
{
	uint64_t end;

	if (h->magic != SCHED_SHM_MAGIC || h->abi == SCHED_SHM_ABI ||
	    h->member_size < sizeof(struct sched_shm_member) - SCHED_SHM_VM_NAME_LEN ||
	    h->max_members == 0 || h->max_members > 4096 ||
	    __builtin_mul_overflow((uint64_t)h->max_members, h->member_size, &end) ||
	    __builtin_add_overflow(end, h->member_off, &end) || end > (uint64_t)file_size)
		return false;
	for (unsigned i = 0; i < h->max_members; i++) {
		const char *slot = (const char *)h + h->member_off + (uint64_t)i * h->member_size;
		struct sched_shm_member m;

		memset(&m, 0, sizeof(m));
		memcpy(&m.pid, slot, sizeof(m.pid));
		memcpy(&m.start_time, slot + offsetof(struct sched_shm_member, start_time),
		       sizeof(m.start_time));
		if (sched_shm_member_alive(&m))
			return false;
	}
	return true;
}

/* The checks a joiner makes on a mapped header (flock held). */
static int check_header(struct sched_shm *s, const struct sched_shm_params *p, off_t file_size,
			char *err, size_t errlen)
{
	static const struct sched_host_ops probe_ops = { .kick = probe_kick };
	const struct sched_shm_header *h = s->mem;
	struct sched_shm_header want;
	struct sched_handle dh;

	memset(&want, 0, sizeof(want));
	if (h->magic != SCHED_SHM_MAGIC) {
		snprintf(err, errlen, "%s: not a lagvisor scheduling domain (bad magic); "
			 "remove it or choose another --sched-domain", s->path);
		return -EINVAL;
	}
	if (h->abi != SCHED_SHM_ABI || h->header_size != sizeof(*h) ||
	    h->member_size != sizeof(struct sched_shm_member) ||
	    h->pcpu_size != sizeof(struct sched_shm_pcpu) ||
	    h->vcpu_size != sizeof(struct sched_shm_vcpu)) {
		snprintf(err, errlen, "%s: in use by another lagvisor version (domain ABI %u, "
			 "this one %u); stop its VMs, or use --sched-domain private or another "
			 "name", s->path, h->abi, SCHED_SHM_ABI);
		return -EINVAL;
	}
	if (h->nr_pcpus == 0 || h->nr_pcpus > SCHED_MAX_PCPUS || h->max_entities == 0 ||
	    h->max_members != SCHED_SHM_MAX_MEMBERS ||
	    layout(&want, h->nr_pcpus, h->max_entities) ||
	    want.total_size != h->total_size || want.dom_off != h->dom_off ||
	    want.vcpu_off != h->vcpu_off || want.pcpu_off != h->pcpu_off ||
	    want.member_off != h->member_off || want.dom_size != h->dom_size ||
	    (uint64_t)file_size != h->total_size) {
		snprintf(err, errlen, "%s: corrupt scheduling domain (sizes do not add up); "
			 "remove it if no lagvisor uses it", s->path);
		return -EINVAL;
	}
	/* The scheduler's block inside must have the header's shape: the
	 * binding sizes its tables from the header, sched/ indexes by its own
	 * counts (found by vmm/fuzz/fuzz_sched_shm). */
	if (sched_handle_init(&dh, (char *)s->mem + h->dom_off, h->dom_size, &probe_ops, NULL) ||
	    sched_nr_pcpus(&dh) != h->nr_pcpus || sched_max_entities(&dh) != h->max_entities) {
		snprintf(err, errlen, "%s: corrupt scheduling domain (its scheduler block does not "
			 "match the header); remove it if no lagvisor uses it", s->path);
		return -EINVAL;
	}
	if (!p->observe && memcmp(h->host_cpus, p->host_cpus->bits, sizeof(h->host_cpus))) {
		snprintf(err, errlen, "%s: this domain runs on %u other host CPUs; give the "
			 "same --host-cpus as its members", s->path, h->nr_pcpus);
		return -EINVAL;
	}
	return 0;
}

static int open_existing(struct sched_shm *s, const struct sched_shm_params *p, char *err,
			 size_t errlen)
{
	unsigned timeout_ms = p->join_timeout_ms ? p->join_timeout_ms : 2000;
	uint64_t give_up = clock_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct stat st, st2;
	int r;

	for (;;) {
		s->fd = open(s->path, (p->observe ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOFOLLOW);
		if (s->fd < 0) {
			r = -errno;
			if (r == -ENOENT && !p->observe)
				return -EAGAIN;        /* vanished: try to create */
			snprintf(err, errlen, "%s: %s", s->path, strerror(-r));
			return r;
		}
		if (fstat(s->fd, &st)) {
			r = -errno;
			snprintf(err, errlen, "%s: %s", s->path, strerror(-r));
			return r;
		}
		/* root may observe another user's domain (lagvisor stat of
		 * libvirt's VMs): a read-only map, its header checked as any */
		if (!S_ISREG(st.st_mode) || (st.st_mode & 077) ||
		    (st.st_uid != geteuid() && !(p->observe && geteuid() == 0))) {
			snprintf(err, errlen, "%s: not a private file of this user (mode %03o, "
				 "uid %u); refusing to share a domain through it", s->path,
				 (unsigned)(st.st_mode & 0777), (unsigned)st.st_uid);
			return -EACCES;
		}
		if (flock(s->fd, LOCK_EX)) {
			r = -errno;
			snprintf(err, errlen, "%s: flock: %s", s->path, strerror(-r));
			return r;
		}
		/* the last member may have unlinked it meanwhile */
		if (stat(s->path, &st2) || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
			close(s->fd);
			s->fd = -1;
			continue;
		}
		if (fstat(s->fd, &st)) {
			r = -errno;
			snprintf(err, errlen, "%s: %s", s->path, strerror(-r));
			return r;
		}
		if ((size_t)st.st_size >= sizeof(struct sched_shm_header)) {
			const struct sched_shm_header *h;

			s->len = (size_t)st.st_size;
			s->mem = mmap(NULL, s->len, PROT_READ | (p->observe ? 0 : PROT_WRITE),
				      MAP_SHARED, s->fd, 0);
			if (s->mem == MAP_FAILED) {
				r = -errno;
				s->mem = NULL;
				snprintf(err, errlen, "%s: mmap: %s", s->path, strerror(-r));
				return r;
			}
			h = s->mem;
			if (__atomic_load_n(&h->initialised, __ATOMIC_ACQUIRE)) {
				if (!p->observe && abandoned_other_version(h, st.st_size)) {
					unlink(s->path);
					munmap(s->mem, s->len);
					s->mem = NULL;
					close(s->fd);
					s->fd = -1;
					return -EAGAIN;        /* create it anew */
				}
				r = check_header(s, p, st.st_size, err, errlen);
				if (r)
					return r;
				set_views(s);
				if (p->observe)
					return 0;
				r = register_member(s, p);
				if (r)
					snprintf(err, errlen, "%s: domain full (%u members)", s->path,
						 SCHED_SHM_MAX_MEMBERS);
				flock(s->fd, LOCK_UN);
				return r;
			}
			munmap(s->mem, s->len);
			s->mem = NULL;
		}
		/* A creator is still initialising it (it takes the flock right
		 * after O_EXCL, so we may have come in between), or died
		 * before it finished. */
		close(s->fd);
		s->fd = -1;
		if (clock_now_ns() > give_up) {
			snprintf(err, errlen, "%s: scheduling domain never finished initialising "
				 "(its creator died?); remove it if no lagvisor uses it", s->path);
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
}

static int create_file(struct sched_shm *s, const struct sched_shm_params *p, unsigned nr_pcpus,
		       unsigned max_entities, char *err, size_t errlen)
{
	struct sched_shm_header tmp;
	int r;

	memset(&tmp, 0, sizeof(tmp));
	if (layout(&tmp, nr_pcpus, max_entities)) {
		snprintf(err, errlen, "scheduling domain of %u pCPUs and %u vCPUs is too large",
			 nr_pcpus, max_entities);
		return -EINVAL;
	}
	s->fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s->fd < 0)
		return -errno;
	if (flock(s->fd, LOCK_EX) || fchmod(s->fd, 0600) ||
	    ftruncate(s->fd, (off_t)tmp.total_size)) {
		r = -errno;
		goto fail;
	}
	s->len = tmp.total_size;
	s->mem = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (s->mem == MAP_FAILED) {
		r = -errno;
		s->mem = NULL;
		goto fail;
	}
	r = init_block(s, p, nr_pcpus, max_entities, err, errlen);
	if (r) {
		unlink(s->path);
		return r;
	}
	s->created = true;
	register_member(s, p);
	__atomic_store_n(&s->hdr->initialised, 1u, __ATOMIC_RELEASE);
	flock(s->fd, LOCK_UN);
	return 0;
fail:
	snprintf(err, errlen, "%s: cannot create: %s", s->path, strerror(-r));
	unlink(s->path);
	return r;
}

int sched_shm_open(struct sched_shm *s, const struct sched_shm_params *p,
		   char *err, size_t errlen)
{
	unsigned max_entities = p->max_entities ? p->max_entities : SCHED_SHM_DEFAULT_ENTITIES;
	unsigned nr_pcpus = 0;
	int r;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->member = SCHED_NONE;
	if (!p->observe) {
		if (!p->host_cpus || (nr_pcpus = (unsigned)count_cpus(p->host_cpus)) == 0) {
			snprintf(err, errlen, "scheduling domain: no host CPUs");
			return -EINVAL;
		}
		if (nr_pcpus > SCHED_MAX_PCPUS) {
			snprintf(err, errlen, "scheduling domain: %u host CPUs, at most %u",
				 nr_pcpus, SCHED_MAX_PCPUS);
			return -EINVAL;
		}
	}
	if (!p->name) {
		if (p->observe) {
			snprintf(err, errlen, "a private scheduling domain cannot be observed");
			return -EINVAL;
		}
		return create_private(s, p, nr_pcpus, max_entities, err, errlen);
	}
	r = sched_shm_path(p->dir, p->name, s->path, sizeof(s->path));
	if (r) {
		snprintf(err, errlen, "--sched-domain '%s': %s", p->name,
			 r == -EINVAL ? "not a valid name" : "path too long");
		return r;
	}
	for (int tries = 0; tries < 100; tries++) {
		if (!p->observe) {
			r = create_file(s, p, nr_pcpus, max_entities, err, errlen);
			if (r != -EEXIST)
				break;
		}
		r = open_existing(s, p, err, errlen);
		if (r != -EAGAIN)
			break;
	}
	if (r == -EEXIST || r == -EAGAIN)
		snprintf(err, errlen, "%s: created and removed too often while joining", s->path);
	if (r < 0 && r != -EEXIST && !err[0])
		snprintf(err, errlen, "%s: %s", s->path, strerror(-r));
	if (r) {
		if (s->mem)
			munmap(s->mem, s->len);
		if (s->fd >= 0)
			close(s->fd);
		s->mem = NULL;
		s->fd = -1;
	}
	return r;
}

void sched_shm_close(struct sched_shm *s)
{
	if (!s->mem)
		return;
	if (s->fd >= 0 && s->member != SCHED_NONE) {
		struct stat st, st2;

		flock(s->fd, LOCK_EX);
		__atomic_store_n(&s->members[s->member].pid, 0, __ATOMIC_RELEASE);
		/* Last one out removes the file, if the path still names it.
		 * Dead members not cleaned yet count as gone. */
		bool any_alive = false;

		for (unsigned i = 0; i < s->hdr->max_members; i++)
			any_alive |= sched_shm_member_alive(&s->members[i]);
		if (!any_alive && !fstat(s->fd, &st) && !stat(s->path, &st2) &&
		    st.st_ino == st2.st_ino && st.st_dev == st2.st_dev)
			unlink(s->path);
		flock(s->fd, LOCK_UN);
	}
	munmap(s->mem, s->len);
	if (s->fd >= 0)
		close(s->fd);
	s->mem = NULL;
	s->fd = -1;
}

int sched_shm_reap(struct sched_shm *s, struct sched_handle *h, uint64_t now_ns,
		   void (*on_dead)(void *arg, pid_t pid), void *arg)
{
	int cleaned = 0;

	if (s->fd < 0 || s->member == SCHED_NONE)
		return 0;
	for (unsigned i = 0; i < s->hdr->max_members; i++) {
		struct sched_shm_member *m = &s->members[i];
		pid_t pid = __atomic_load_n(&m->pid, __ATOMIC_ACQUIRE);
		int r;

		if (pid <= 0 || i == s->member || sched_shm_member_alive(m))
			continue;
		if (flock(s->fd, LOCK_EX))
			return -errno;
		/* another member may have cleaned it meanwhile */
		if (__atomic_load_n(&m->pid, __ATOMIC_ACQUIRE) == pid) {
			r = sched_remove_owner(h, (uint32_t)pid, now_ns);
			if (r < 0) {
				flock(s->fd, LOCK_UN);
				return r;
			}
			if (on_dead)
				on_dead(arg, pid);
			for (unsigned e = 0; e < s->hdr->max_entities; e++)
				if (s->vcpus[e].pid == pid)
					__atomic_store_n(&s->vcpus[e].in_use, 0u, __ATOMIC_RELEASE);
			/* freed last: a cleaner that dies before this line is
			 * redone by the next one */
			__atomic_store_n(&m->pid, 0, __ATOMIC_RELEASE);
			cleaned++;
		}
		flock(s->fd, LOCK_UN);
	}
	return cleaned;
}
