/*
 * libFuzzer target: the shared scheduling domain's file opener
 * (vmm/sched/sched_shm.c) given a corrupt or hostile file. At start the real
 * opener creates a domain in a private directory and a member adds and
 * wakes a few vCPUs, as sched_host_open and the binding do; that file's
 * bytes are the template. Each input patches a copy (any bytes, the
 * domain block, member slots), may resize it or open its mode, writes it
 * back as the domain's file and opens it as a joining lagvisor (or as
 * `lagvisor stat`), then does what those do next without the file's
 * locks: attach the scheduler (sched_handle_init, the binding's
 * per-entity table sized from the header), count members, look up pCPUs,
 * print the statistics, leave.
 *
 * Beyond ASan/UBSan and leaks: the opener either refuses with one line
 * naming the file or hands out views that lie inside the mapping, with a
 * domain block the scheduler attaches to and whose shape (pCPUs,
 * entities) is the header's.
 *
 * Not covered: the run queues' state and locks inside the block, which
 * live members change while anyone may join; the file is the user's own
 * (mode 0600, owner checked), as trusted as its other members.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fuzz_target.h"
#include "vmm/sched/sched_shm.h"
#include "vmm/sched/stat.h"
#include "vmm/fuzz/sched_shm_ops.h"

#define MAX_ENTITIES 16

static char dir[64] = "/dev/shm/lagvisor-fuzz-shm-XXXXXX";
static char path[PATH_MAX];
static uint8_t *tmpl;
static size_t tmpl_len;
static uint64_t tmpl_dom_off;
static struct host_cpu_list cpus;
static FILE *devnull;

static void kick_nop(void *o, unsigned p)
{
	(void)o;
	(void)p;
}
static const struct sched_host_ops ops = { .kick = kick_nop };

static struct sched_shm_params params(bool observe)
{
	return (struct sched_shm_params){ .name = "fz", .dir = dir, .host_cpus = &cpus,
					  .max_entities = MAX_ENTITIES, .join_timeout_ms = 1,
					  .observe = observe };
}

/* The template: a live domain with three vCPUs of one member. */
static void make_template(void)
{
	struct sched_shm_params p = params(false);
	struct sched_handle h;
	struct sched_shm s;
	char err[512];

	if (!mkdtemp(dir)) {            /* no /dev/shm: any directory will do */
		strcpy(dir, "/tmp/lagvisor-fuzz-shm-XXXXXX");
		FZ_ASSERT(mkdtemp(dir));
	}
	FZ_ASSERT(sched_opts_parse_cpulist("0-1", &cpus) == 0);
	FZ_ASSERT(sched_shm_path(dir, "fz", path, sizeof(path)) == 0);
	if (sched_shm_open(&s, &p, err, sizeof(err))) {
		fprintf(stderr, "fuzz_sched_shm: %s\n", err);
		abort();
	}
	FZ_ASSERT(sched_handle_init(&h, s.dom, s.dom_len, &ops, NULL) == 0);
	for (unsigned i = 0; i < 3; i++) {
		struct sched_entity_params ep = { .owner = (uint32_t)getpid(), .create_pcpu = i % 2 };
		struct sched_wake_result res;
		unsigned id;

		FZ_ASSERT(sched_entity_add(&h, &ep, 1000, &id) == 0);
		s.vcpus[id].pid = getpid();
		s.vcpus[id].vcpu_index = i;
		s.vcpus[id].in_use = 1;
		s.vcpus[id].lat_hist[i + 3] = 5;
		if (i < 2)
			(void)sched_wake(&h, id, 2000, i, &res);
	}
	tmpl_len = s.len;
	tmpl = malloc(tmpl_len);
	memcpy(tmpl, s.mem, tmpl_len);
	tmpl_dom_off = s.hdr->dom_off;
	sched_shm_close(&s);
	unlink(path);
}

static void write_file(const uint8_t *p, size_t n, bool open_mode)
{
	int fd;

	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	FZ_ASSERT(fd >= 0);
	FZ_ASSERT(write(fd, p, n) == (ssize_t)n);
	if (open_mode)
		FZ_ASSERT(fchmod(fd, 0640) == 0);
	close(fd);
}

static bool inside(const struct sched_shm *s, const void *p, uint64_t n)
{
	const uint8_t *b = s->mem, *q = p;

	return q >= b && (uint64_t)(q - b) <= s->len && n <= s->len - (uint64_t)(q - b);
}

static void check_open(struct sched_shm *s, bool observe)
{
	const struct sched_shm_header *h = s->hdr;
	struct sched_handle sh;
	struct stat_prev prev;
	void *local;

	FZ_ASSERT(s->mem && (void *)h == s->mem && s->len >= sizeof(*h));
	FZ_ASSERT(inside(s, s->members, (uint64_t)h->max_members * sizeof(*s->members)));
	FZ_ASSERT(inside(s, s->pcpus, (uint64_t)h->nr_pcpus * sizeof(*s->pcpus)));
	FZ_ASSERT(inside(s, s->vcpus, (uint64_t)h->max_entities * sizeof(*s->vcpus)));
	FZ_ASSERT(inside(s, s->dom, s->dom_len));
	FZ_ASSERT(h->nr_pcpus >= 1 && h->nr_pcpus <= SCHED_MAX_PCPUS && h->max_entities >= 1);
	FZ_ASSERT(observe ? s->member == SCHED_NONE : s->member < h->max_members);

	/* sched_bind_init: the scheduler's view must be the header's */
	FZ_ASSERT(sched_handle_init(&sh, s->dom, s->dom_len, &ops, NULL) == 0);
	FZ_ASSERT(sched_nr_pcpus(&sh) == h->nr_pcpus);
	FZ_ASSERT(sched_max_entities(&sh) == h->max_entities);
	local = calloc(h->max_entities, 64);
	FZ_ASSERT(local);
	free(local);

	FZ_ASSERT(sched_shm_nr_members(s) <= h->max_members);
	for (int c = -1; c < 4; c++) {
		unsigned p = sched_shm_pcpu_of_host_cpu(s, c);

		FZ_ASSERT(p == SCHED_NONE || p < h->nr_pcpus);
	}
	memset(&prev, 0, sizeof(prev));
	stat_print(devnull, s, false, &prev);
	stat_print(devnull, s, true, &prev);
}

static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

void fz_setup(void)
{
	devnull = fopen("/dev/null", "w");
	FZ_ASSERT(devnull);
	make_template();
	atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *img;
	static size_t img_cap;
	struct fz_in in = { data, size };
	uint8_t flags = fz_u8(&in);
	size_t len = tmpl_len;
	struct sched_shm_params p;
	struct sched_shm s;
	char err[512];
	unsigned ops = 0;
	bool other_abi;
	int r;

	if (flags & SHM_FLAG_RESIZE)
		len = fz_u32(&in) % (tmpl_len * 2 + 1);
	if (img_cap < tmpl_len * 2 + 1) {
		img_cap = tmpl_len * 2 + 1;
		img = realloc(img, img_cap);
	}
	memset(img, 0, img_cap);
	memcpy(img, tmpl, tmpl_len);
	while (!fz_done(&in) && ops++ < 256) {
		uint8_t op = fz_u8(&in);

		switch (op % SHM_OP_COUNT) {
		case SHM_OP_PATCH:
		case SHM_OP_PATCH_DOM: {
			uint64_t off = fz_u32(&in) + (op % SHM_OP_COUNT == SHM_OP_PATCH_DOM
						      ? tmpl_dom_off : 0);
			size_t n, got;
			const uint8_t *b;

			n = fz_u8(&in);
			b = fz_bytes(&in, n, &got);
			off %= len ? len : 1;
			if (got > len - off)
				got = len - off;
			memcpy(img + off, b, got);
			break;
		}
		case SHM_OP_MEMBER: {
			unsigned slot = fz_u8(&in) % SCHED_SHM_MAX_MEMBERS;
			uint64_t off = ((struct sched_shm_header *)tmpl)->member_off +
				       slot * sizeof(struct sched_shm_member);
			struct sched_shm_member m = { .pid = (int32_t)fz_u32(&in) };

			m.start_time = fz_u64(&in);
			if (off + sizeof(m) <= len)
				memcpy(img + off, &m, sizeof(m));
			break;
		}
		default:
			break;
		}
	}
	other_abi = len >= sizeof(struct sched_shm_header) &&
		    ((struct sched_shm_header *)img)->magic == SCHED_SHM_MAGIC &&
		    ((struct sched_shm_header *)img)->abi != SCHED_SHM_ABI;
	write_file(img, len, flags & SHM_FLAG_MODE);

	p = params(flags & SHM_FLAG_OBSERVE);
	err[0] = 0;
	r = sched_shm_open(&s, &p, err, sizeof(err));
	if (r) {
		FZ_ASSERT(r < 0);
		FZ_ASSERT(err[0] && !strchr(err, '\n'));
		/* a refusal names the file (or the domain) */
		FZ_ASSERT(strstr(err, path) || strstr(err, "fz"));
		FZ_ASSERT(!s.mem && s.fd == -1);
	} else {
		/* A joiner creates only in place of another version's file
		 * none of whose members lives (sched_shm.c), and then a
		 * domain of this version. */
		FZ_ASSERT(!s.created || (other_abi && !(flags & SHM_FLAG_OBSERVE) &&
					 s.hdr->abi == SCHED_SHM_ABI));
		check_open(&s, flags & SHM_FLAG_OBSERVE);
		sched_shm_close(&s);
	}
	unlink(path);
	return 0;
}
