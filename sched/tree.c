/*
 * The timeline: an AVL tree of entity indices ordered by deadline (wrap-safe
 * signed difference), ties broken by index so the order, and with it every
 * pick, is deterministic. Each node also carries, for its subtree, the
 * smallest vruntime (so pick can skip subtrees with no eligible entity,
 * sched/README.md §2.5 step 5) and the smallest/largest slice (slice
 * protection and the lag clamp). Rotations recompute all three for both
 * nodes they touch.
 * Recursive insert/remove: depth <= 1.44 log2(n) (< 36 for 2^24 entities).
 */
#include "sched/internal.h"

#define NIL SCHED_NONE

static int32_t height(const struct sched_ent *ents, uint32_t n)
{
	return n == NIL ? 0 : ents[n].height;
}

static bool less(const struct sched_ent *ents, uint32_t a, uint32_t b)
{
	int64_t dd = (int64_t)(ents[a].deadline - ents[b].deadline);

	return dd < 0 || (dd == 0 && a < b);
}

void sched_tree_update(struct sched_ent *ents, uint32_t n)
{
	struct sched_ent *e = &ents[n];
	int32_t hl = height(ents, e->left), hr = height(ents, e->right);

	e->height = 1 + (hl > hr ? hl : hr);
	e->min_vruntime = e->vruntime;
	e->min_slice = e->max_slice = e->slice_ns;
	for (int i = 0; i < 2; i++) {
		uint32_t c = i ? e->right : e->left;

		if (c == NIL)
			continue;
		e->min_vruntime = vt_min(e->min_vruntime, ents[c].min_vruntime);
		if (ents[c].min_slice < e->min_slice)
			e->min_slice = ents[c].min_slice;
		if (ents[c].max_slice > e->max_slice)
			e->max_slice = ents[c].max_slice;
	}
}

static uint32_t rotate_right(struct sched_ent *ents, uint32_t n)
{
	uint32_t l = ents[n].left;

	ents[n].left = ents[l].right;
	ents[l].right = n;
	sched_tree_update(ents, n);
	sched_tree_update(ents, l);
	return l;
}

static uint32_t rotate_left(struct sched_ent *ents, uint32_t n)
{
	uint32_t r = ents[n].right;

	ents[n].right = ents[r].left;
	ents[r].left = n;
	sched_tree_update(ents, n);
	sched_tree_update(ents, r);
	return r;
}

static uint32_t rebalance(struct sched_ent *ents, uint32_t n)
{
	int32_t bal;

	sched_tree_update(ents, n);
	bal = height(ents, ents[n].left) - height(ents, ents[n].right);
	if (bal > 1) {
		uint32_t l = ents[n].left;
		if (height(ents, ents[l].left) < height(ents, ents[l].right))
			ents[n].left = rotate_left(ents, l);
		return rotate_right(ents, n);
	}
	if (bal < -1) {
		uint32_t r = ents[n].right;
		if (height(ents, ents[r].right) < height(ents, ents[r].left))
			ents[n].right = rotate_right(ents, r);
		return rotate_left(ents, n);
	}
	return n;
}

static uint32_t insert(struct sched_ent *ents, uint32_t n, uint32_t id)
{
	if (n == NIL) {
		ents[id].left = ents[id].right = NIL;
		sched_tree_update(ents, id);
		return id;
	}
	if (less(ents, id, n))
		ents[n].left = insert(ents, ents[n].left, id);
	else
		ents[n].right = insert(ents, ents[n].right, id);
	return rebalance(ents, n);
}

void sched_tree_insert(struct sched_ent *ents, uint32_t *root, uint32_t id)
{
	*root = insert(ents, *root, id);
}

/* Detach the smallest node of subtree n into *min; returns the new subtree. */
static uint32_t remove_min(struct sched_ent *ents, uint32_t n, uint32_t *min)
{
	if (ents[n].left == NIL) {
		*min = n;
		return ents[n].right;
	}
	ents[n].left = remove_min(ents, ents[n].left, min);
	return rebalance(ents, n);
}

static uint32_t remove(struct sched_ent *ents, uint32_t n, uint32_t id)
{
	if (n == NIL)
		return NIL;                    /* not present: caller's bug, keep tree */
	if (n == id) {
		uint32_t l = ents[n].left, r = ents[n].right, m;

		if (r == NIL)
			return l;
		r = remove_min(ents, r, &m);
		ents[m].left = l;
		ents[m].right = r;
		return rebalance(ents, m);
	}
	if (less(ents, id, n))
		ents[n].left = remove(ents, ents[n].left, id);
	else
		ents[n].right = remove(ents, ents[n].right, id);
	return rebalance(ents, n);
}

void sched_tree_remove(struct sched_ent *ents, uint32_t *root, uint32_t id)
{
	*root = remove(ents, *root, id);
	ents[id].left = ents[id].right = NIL;
}

uint32_t sched_tree_first(const struct sched_ent *ents, uint32_t n)
{
	if (n == NIL)
		return NIL;
	while (ents[n].left != NIL)
		n = ents[n].left;
	return n;
}

/* Nodes with a deadline before dl are n and its left subtree whenever n's
 * is (the rest of the path goes right), so one root-to-leaf walk sees each
 * qualifying subtree's min_vruntime once. O(log n). */
bool sched_tree_min_vruntime_before(const struct sched_ent *ents, uint32_t n, uint64_t dl,
				    uint64_t *v)
{
	bool found = false;

	while (n != NIL) {
		if (!vt_before(ents[n].deadline, dl)) {
			n = ents[n].left;
			continue;
		}
		uint64_t m = ents[n].vruntime;

		if (ents[n].left != NIL)
			m = vt_min(m, ents[ents[n].left].min_vruntime);
		*v = found ? vt_min(*v, m) : m;
		found = true;
		n = ents[n].right;
	}
	return found;
}

uint32_t sched_tree_find(const struct sched_ent *ents, uint32_t root, bool reverse,
			 bool (*fn)(const struct sched_ent *e, uint32_t id, void *arg), void *arg)
{
	uint32_t stack[64];
	unsigned sp = 0;
	uint32_t n = root;

	while (n != NIL || sp) {
		while (n != NIL) {
			stack[sp++] = n;
			n = reverse ? ents[n].right : ents[n].left;
		}
		n = stack[--sp];
		if (fn(&ents[n], n, arg))
			return n;
		n = reverse ? ents[n].left : ents[n].right;
	}
	return NIL;
}
