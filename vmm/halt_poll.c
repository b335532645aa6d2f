/* Adaptive halt polling (see halt_poll.h). */
#include "vmm/halt_poll.h"

#include "common/clock.h"

void halt_poll_init(struct halt_poll *h, uint64_t max_ns)
{
	h->max_ns = max_ns;
	h->window_ns = 0;
	h->nr_ok = h->nr_missed = 0;
}

void halt_poll_update(struct halt_poll *h, uint64_t halted_ns, bool polled)
{
	if (polled)
		h->nr_ok++;
	else
		h->nr_missed++;
	if (!h->max_ns) {
		h->window_ns = 0;
		return;
	}
	/* The window covered this halt: it is right as it is. */
	if (halted_ns <= h->window_ns)
		return;
	if (halted_ns > h->max_ns) {
		/* A long sleep: polling would only have burnt the window. */
		h->window_ns /= 2;
		if (h->window_ns < HALT_POLL_GROW_START_NS)
			h->window_ns = 0;
	} else if (h->window_ns < h->max_ns) {
		/* A short sleep the window just missed: a longer one catches
		 * the next (doubling reaches any window below max in
		 * log2(max / start) halts, 5 for KVM's defaults). */
		h->window_ns = h->window_ns ? h->window_ns * 2 : HALT_POLL_GROW_START_NS;
		if (h->window_ns > h->max_ns)
			h->window_ns = h->max_ns;
	}
}

bool halt_poll_spin(const uint32_t *word, uint32_t seen, uint64_t end_ns,
		    bool (*stop)(void *arg), void *arg)
{
	for (;;) {
		if (__atomic_load_n(word, __ATOMIC_SEQ_CST) != seen)
			return true;
		if (clock_now_ns() >= end_ns || (stop && stop(arg)))
			return false;
		__builtin_ia32_pause();
	}
}
