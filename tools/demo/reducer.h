/* SPDX-License-Identifier: MIT */
/*
 * reducer.h - the one seam between the demo's training loop and the
 * gradient exchange: "replace this tensor's gradient by its mean over all
 * ranks". The in-process reducers below run the ranks as threads of one
 * process; a gradnet reducer implements the same hook with gn_allreduce()
 * on a tensor registered with GN_TENSOR_AVERAGE.
 */
#ifndef GN_DEMO_REDUCER_H
#define GN_DEMO_REDUCER_H

#include <stddef.h>
#include <stdint.h>

/*
 * struct demo_reducer - a rank's handle on the exchange.
 * @allreduce_avg: replace @grad, the values of tensor @t, by the mean of
 *	every rank's @grad for that tensor; every rank calls it for the same
 *	tensors in the same order and gets bit-identical values back.
 *	Return: 0 or a negative errno (then every rank fails the same step).
 * @allreduce_avg_all: if set, called instead, once per step for all
 *	tensors.
 */
struct demo_reducer {
	int (*allreduce_avg)(struct demo_reducer *red, unsigned int t,
			     float *grad);
	/*
	 * Optional: the same for every tensor of the model at once, @grad[t]
	 * for t < @tensors (a reducer that fuses them into one bucket).
	 */
	int (*allreduce_avg_all)(struct demo_reducer *red, float *const *grad,
				 unsigned int tensors);
};

struct local_group;

/* How the in-process group exchanges gradients. */
enum local_codec {
	LOCAL_DENSE,	/* exact float32 mean, the uncompressed baseline */
	LOCAL_TLC,	/* gradnet's 3LC allreduce, simulated with the codec */
};

/*
 * struct local_traffic - codec payload of the simulated 3LC exchange,
 * counted from a given step on; packet headers are not simulated.
 * @raw_bytes: 4 bytes per value of every stream sent to another rank
 * @wire_bytes: the streams' bytes
 */
struct local_traffic {
	uint64_t raw_bytes;
	uint64_t wire_bytes;
};

int local_group_create(struct local_group **gp, unsigned int world,
		       const size_t *elems, unsigned int tensors,
		       enum local_codec codec, float s, unsigned int count_from);
struct demo_reducer *local_group_reducer(struct local_group *g,
					 unsigned int rank);
void local_group_traffic(const struct local_group *g,
			 struct local_traffic *tr);
void local_group_destroy(struct local_group *g);

#endif /* GN_DEMO_REDUCER_H */
