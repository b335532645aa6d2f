/*
 * Scheduler feature flags, one X-macro list: SCHED_FEATURE(NAME, default).
 * Every behaviour a seed thread argues about is a flag, so each A/B experiment
 * is one `--sched-feature NO_NAME` away. Flags are per domain and may change
 * at run time (sched_feature_set); code reads them once per operation.
 */
#ifndef LAGVISOR_SCHED_FEATURES_H
#define LAGVISOR_SCHED_FEATURES_H

#define SCHED_FEATURES(F)                                                     \
	/* Place a waking entity at V - lag (its saved lag, inflated by         \
	 * (W+w)/W so the lag survives the insertion; seed 004). Off: every    \
	 * enqueue lands exactly at V and lag is forgotten. */                 \
	F(PLACE_LAG, 1)                                                       \
	/* Old CFS sleeper credit, for A/B only (seed 004): a waking entity    \
	 * gets at least one base slice of virtual credit (lag >= base slice). \
	 * Overrides the saved lag when that is smaller. */                    \
	F(FAIR_SLEEPERS, 0)                                                   \
	/* A new entity's first deadline is half a slice away, so a freshly   \
	 * started vCPU runs soon (seed 001). */                               \
	F(PLACE_DEADLINE_INITIAL, 1)                                          \
	/* Place a new entity at its first enqueue, on the queue it will run  \
	 * on (seeds 000/001). Off: place at creation on the creating pCPU and \
	 * re-place at the first enqueue, which loses the initial deadline    \
	 * (the "before" of both seeds). */                                    \
	F(PLACE_FIRST_ENQUEUE, 1)                                             \
	/* Keep d - v across a migration so moving an entity does not hand   \
	 * it a fresh (possibly much later or earlier) deadline. (A reweight  \
	 * always keeps its deadline relative to V, flag or not.) */          \
	F(PLACE_REL_DEADLINE, 1)                                              \
	/* Once picked, curr runs until it reaches the smallest queued slice  \
	 * (or its deadline) even if another entity becomes eligible with an  \
	 * earlier deadline: fewer switches, bounded extra latency. */          \
	F(RUN_TO_PARITY, 1)                                                   \
	/* A wakee with a shorter slice than curr may cut curr's protection:  \
	 * latency-sensitive vCPUs (small --slice) get in quickly. */          \
	F(PREEMPT_SHORT, 1)                                                   \
	/* Let a wakeup preempt curr when the wakee would be picked now.      \
	 * Off: wakees wait for the next tick/slice end. */                    \
	F(WAKEUP_PREEMPTION, 1)                                               \
	/* Idle-class entities get no sleeper credit: placed at lag <= 0, so  \
	 * they cannot preempt normal vCPUs every wakeup (seed 003). */        \
	F(IDLE_NO_COMPENSATION, 1)                                            \
	/* Count a wakeup in flight to a pCPU (ttwu_pending) so concurrent    \
	 * wakers do not all see it idle and stack vCPUs on it (seed 002).     \
	 * Off: wakers always enqueue directly on the chosen pCPU. */          \
	F(TTWU_PENDING, 1)                                                    \
	/* Reproduce the pre-2022 bug: clear ttwu_pending before the listed   \
	 * vCPUs are enqueued, opening the window of seed 002. A/B only. */    \
	F(TTWU_PENDING_EARLY_CLEAR, 0)                                        \
	/* Keep a non-eligible sleeper queued (still counted in V) until it   \
	 * would be picked: it pays off its negative lag in the queue instead \
	 * of carrying it through the sleep, then leaves with lag 0. A wake   \
	 * before that requeues it in place. Else a vCPU that ran 50 us past \
	 * its share before a halt waits at its next wakeup until a hog's    \
	 * run has paid that back: a slice at worst (Linux >= 6.12 has it). */\
	F(DELAY_DEQUEUE, 1)                                                   \
	/* With DELAY_DEQUEUE: the sleeper leaves with lag min(lag, 0) when   \
	 * its delayed dequeue completes, and one woken while still queued    \
	 * but already eligible is placed anew at lag 0: sleeping earns no    \
	 * credit either way (Linux's DELAY_ZERO). Off: the lag it had at the \
	 * moment it left is kept, positive too. */                          \
	F(DELAY_ZERO, 1)                                                      \
	/* The slice timer also fires when the first queued entity with an   \
	 * earlier deadline than curr becomes eligible (V reaches its v), so  \
	 * it preempts then, not at curr's deadline: lagvisor is tickless and \
	 * nothing else would look. Protection still holds unless the entity \
	 * has a shorter slice (PREEMPT_SHORT). */                            \
	F(PREEMPT_ELIGIBLE, 1)                                                \
	/* A wake the waker marks SCHED_WAKE_SYNC (a vCPU that IPIs a vCPU   \
	 * of its own VM and then halts: schbench's message/worker pattern)  \
	 * that finds no idle pCPU goes to the waker's pCPU: it preempts or   \
	 * follows the waker there, where the switch needs no kick, instead   \
	 * of queueing behind a neighbour's vCPU on its previous pCPU. */     \
	F(IPI_HANDOFF, 1)                                                     \
	/* A wakee that finds no idle pCPU goes, among up to 16 allowed pCPUs \
	 * from its previous one, to the one whose curr has the weakest claim \
	 * (idle class; then protection over; then a longer slice than the   \
	 * wakee's; fewer runnable; most of its request left), not always to  \
	 * the previous one. Lock-free reads: a stale one costs a worse      \
	 * choice, never consistency. */                                      \
	F(WAKE_VICTIM, 0)                                                     \
	/* sched_entity_get_info reports "preempted" for a runnable vCPU     \
	 * waiting in a queue. (The binding sets the guest's steal-time       \
	 * preempted byte whenever a runnable vCPU's thread parks, without    \
	 * reading this flag.) */                                             \
	F(PV_PREEMPTED, 1)                                                    \
	/* For the binding, not read by sched/: a vCPU that blocks with its  \
	 * own timer armed publishes the deadline, and the holder of the     \
	 * pCPU it left wakes it then (vmm/sched_bind_sleepers.c), as a      \
	 * host's timer interrupt wakes a task whatever runs. Off: only the  \
	 * sleeper's own thread wakes it, once the host runs that thread on  \
	 * a host CPU the holder keeps busy (seconds beside a busy VM in     \
	 * another autogroup). */                                            \
	F(HOLDER_WAKE, 1)

enum sched_feature {
#define SCHED_FEATURE_ENUM(name, def) SCHED_FEAT_##name,
	SCHED_FEATURES(SCHED_FEATURE_ENUM)
#undef SCHED_FEATURE_ENUM
	SCHED_FEAT_COUNT
};

#endif
