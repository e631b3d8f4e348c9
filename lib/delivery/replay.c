// SPDX-License-Identifier: MIT
/*
 * replay.c - which packet numbers a peer's session packets came with, in
 * a sliding window of GN_REPLAY_BITS - 64 numbers below the highest, the
 * way RFC 6479 keeps it: a ring of 64-bit words, so that moving the
 * window clears whole words, at most all of them, whatever the jump, and
 * a number below the window is told apart by arithmetic alone.
 *
 * It runs after the tag is checked, so only the sender can move the
 * window: a forger has no number to offer, and a replay brings one that
 * is either in the window, and marked, or below it.
 */
#include "delivery.h"

/* From this far below the top on, a number's ring slot may hold newer ones. */
#define REPLAY_REACH (GN_REPLAY_BITS - 64)

enum gn_pn_seen gn_replay_note(struct gn_replay *w, u64 pn)
{
	u64 word = pn / 64, top_word = w->top / 64, bit = 1ull << (pn % 64);
	u64 *slot;

	if (pn > w->top) {
		u64 gap = word - top_word, i;

		/* The words between the old top's and the new: all unseen. */
		if (gap > GN_REPLAY_WORDS)
			gap = GN_REPLAY_WORDS;
		for (i = 1; i <= gap; i++)
			w->bits[(top_word + i) % GN_REPLAY_WORDS] = 0;
		w->top = pn;
	} else if (w->top - pn >= REPLAY_REACH) {
		return GN_PN_OLD;
	}
	slot = &w->bits[word % GN_REPLAY_WORDS];
	if (*slot & bit)
		return GN_PN_SEEN;
	*slot |= bit;
	return GN_PN_NEW;
}
