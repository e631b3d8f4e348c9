/* SPDX-License-Identifier: MIT */
/*
 * gradnet/codec.h - gradnet's compressors, specified: 3LC (three-value
 * quantization with sparsity multiplication and error feedback, quartic
 * encoding and zero-run encoding), QSGD, top-k with its index and value
 * codecs, CLT-k (with its index round), the generator the stochastic ones
 * draw from, the model-updating step (DORE and 3LC's push/pull) that
 * compresses both directions, and the entropy stage any codec may have.
 * The functions below are 3LC's; every codec is reached through the
 * registry (lib/codec/codec.h). Freestanding: the same code runs in
 * libgradnet, the DPDK path and the kernel module.
 *
 * In every specification here the scalar implementation is the reference;
 * every SIMD version produces identical bytes and identical floats. Float
 * arithmetic is IEEE binary32 (binary64 where it says so), round to
 * nearest, no fused multiply-add, denormals kept. All integers on the
 * wire are little-endian.
 *
 * ==== 3LC ====
 *
 * A chunk is n float32 values x[0..n), with an error-feedback buffer e[0..n)
 * and a sparsity multiplier s, 1 <= s < 2.
 *
 * Quantize. t_i = x_i + e_i (float32 add, round to nearest, denormals kept).
 *   maxabs = max |t_i| (0 for n = 0). M = s * maxabs, in float32.
 *   h = 0.5f * M, in float32. q_i = +1 if t_i > h, -1 if t_i < -h, else 0.
 *   Then e_i = t_i - q_i*M, where q_i*M is M, -M or +0.
 *   If any t_i is NaN or infinite, or M overflows to infinity, the call
 *   returns -EDOM and e is left unchanged. s outside [1, 2) is -EINVAL.
 *
 * Quartic encoding. g = ceil(n/5) groups. Partition k (0..4) holds elements
 *   [k*g, (k+1)*g); an element at index >= n counts as q = 0. Group j is the
 *   byte 81(q_j+1) + 27(q_{g+j}+1) + 9(q_{2g+j}+1) + 3(q_{3g+j}+1)
 *   + (q_{4g+j}+1), a value in 0..242. A group of five zeros is 121.
 *
 * Zero-run encoding. Each maximal run of r consecutive 121 bytes becomes:
 *   for r = 1 the byte 121; for r >= 2, floor(r/14) bytes 255, then for
 *   rem = r mod 14 nothing if rem = 0, 121 if rem = 1, 241 + rem if rem >= 2.
 *   Bytes 0..242 are literal groups, 243..255 are runs of 2..14 zero groups.
 *
 * Chunk stream. M as float32 little-endian (4 bytes), then the zero-run
 *   encoded groups 0..g-1. gn_tlc_encode_bound(n) = 4 + g bytes.
 *
 * Decode-accumulate. acc_i += q_i*M for the nonzero q_i only (acc_i + M or
 *   acc_i - M); zero groups and runs advance without touching acc. A stream
 *   is malformed, and the call returns -EBADMSG with acc untouched, if
 *   its groups do not add up to exactly the expected count (it ends early or
 *   has trailing bytes), if M is not finite or has its sign bit set, or if
 *   a group gives a nonzero trit to an element at index >= n (the encoder
 *   never does either). Whatever the bytes, a decoder never reads past its
 *   input and never writes outside acc[0..n).
 *
 * Packets. A chunk's groups may be carried in several pieces ("slices"):
 *   a slice is the zero-run encoding of groups [j0, j0 + count) on its own,
 *   runs cut at the slice boundary. gn_zre_encode() cuts slices greedily to
 *   a byte budget; gn_tlc_decode_slice() decodes one given j0, count and M.
 *
 * ==== Dense (codec "none") ====
 *
 * The values as they are, float32: units are values, a slice is the
 * count values [first, first + count) of its chunk, back to back, and the
 * chunk's word is 0. The owner adds the others' values to its own share in
 * rank order and sends the sum; an averaged result is the sum / (float)W
 * on every rank. A slice is refused if its word is not 0, its body is not
 * 4 count bytes, or a value is not finite (no rank sends one: a rank
 * checks its gradient, an owner its sum).
 *
 * ==== The generator (every stochastic codec) ====
 *
 * mix(z): z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27;
 *	   z *= 0x94d049bb133111eb; return z ^ z >> 31	(all mod 2^64)
 * seed = mix(mix(job << 32 | tensor) ^ (step << 32 | rank << 8 | phase)),
 *	rank the sender's (the owner's for a result), phase 0 for
 *	contributions and 1 for results (gradnet-codec --seed gives seed);
 * key = mix(seed ^ chunk_off * G), G = 0x9e3779b97f4a7c15, chunk_off the
 *	chunk's first element in the tensor (0 for a gradnet-codec stream);
 * u(c) = mix(key + (c + 1) * G) >> 40: a uniform integer in [0, 2^24) for
 *	counter c, and U(c) = u(c) * 2^-24 exactly as a float32.
 *
 * ==== QSGD (codec "qsgd", and top-k's values) ====
 *
 * Parameters: bits (2, 4 or 8, default 4), bucket (values per bucket, 16
 * to 65536; 0, the default, is 512, or 128 at 2 bits), norm (l2, the
 * default, or max). s = 2^(bits-1) - 1 levels (1, 7, 127).
 *
 * A sequence v[0..m) (a chunk's values, or a sparse stream's values) is cut
 * into buckets of B values, the last shorter. Bucket b, with values
 * w = v[bB, bB + m_b):
 *   norm: max: max |w_j|, exactly. l2: in binary64, lane i (0..7) sums
 *	(double)w_j * (double)w_j over the j = i mod 8 in order of j; then
 *	a_i = l_i + l_{i+4}, b_i = a_i + a_{i+2}, sum = b_0 + b_1; norm =
 *	(float)sqrt(sum). A norm that is not finite is -EDOM.
 *   level of w_j (norm > 0): r = ((float)s * |w_j|) / norm; l = floor(r),
 *	at most s; p = r - l; q = l + 1 if U(c) < p and l < s, else l;
 *	c is the value's counter: its index in the sequence (the chunk's
 *	value index; for sparse values the entry's index in the chunk's
 *	stream). norm = 0: every q is 0.
 *   code: q | sign << (bits - 1), sign = 1 for w_j < 0 and q > 0, else 0
 *	(a zero level never carries a sign).
 *   value: v = norm * ((float)q / (float)s), negated when sign is set;
 *	for an averaged result, v / (float)W on every rank, the owner's too.
 * A bucket on the wire: its norm (float32), then its m_b codes packed
 * bits each, least significant first, into ceil(m_b * bits / 8) bytes,
 * unused bits 0. Unbiased: E[value] = w_j for a fixed norm. A bucket is
 * refused if its norm is not finite or has its sign bit set, a code has a
 * sign with level 0 or any level under a norm of +0, or an unused bit is
 * set; a "qsgd" slice also if it does not start and end on buckets as
 * below, its body is not exactly its buckets, or its word is not 0.
 *
 * Codec "qsgd": a dense compressor of its own, no error feedback. A
 * contribution is its chunk quantized; the owner adds its own share as it
 * is and the others' values in rank order, quantizes the sum with its own
 * key (phase 1) and every rank, the owner included, takes that result. Its
 * units are values; a slice holds whole buckets [first, first + count)
 * (first a multiple of B, count too unless the slice ends the chunk), back
 * to back; the chunk's word is 0. A bucket must fit one packet.
 *
 * ==== Top-k with error feedback (codec "topk", SparCML) ====
 *
 * Parameters: density (0 < d <= 1, default 0.01), block (0: the chunk is
 * one block, the default; else blocks of this many values, 64 to 65536,
 * as SparCML's 512), bits (0: none, the default; 2, 4 or 8: QSGD values),
 * bucket and norm (QSGD's, for its values; here bucket 0, the default, is
 * 128 values and the default norm is max: a sparse stream's values are a
 * tensor's largest, and under the l2 norm of 512 of them most would round
 * to level 0), idx (the index codec: varint,
 * the default, bitmap, rle, bloom, bloom-p1, bloom-p2, or auto; below),
 * fpr (the Bloom filter's false-positive rate: 0, the default, stands for
 * 0.001; else 1e-6 to 0.5; only with a Bloom idx) and val (the value
 * codec: f32, the default, f16, qsgd or fit). bits given alone makes the
 * values QSGD's; val=qsgd without bits takes 4. bits with val=f16 or fit
 * is refused, so is bucket without QSGD or fitted values (for fit, bucket
 * is the values a curve covers: 0 stands for 256, else 16 to 65536), and
 * a Bloom idx at an MTU whose DATA body holds fewer than 448 bytes.
 *
 * Encode a chunk of n values x with error feedback e: a_i = x_i + e_i
 * (float32; any a_i not finite is -EDOM, e untouched). In each block of m
 * values, select k = ceil(d * m) entries exactly (the real product of d's
 * float32 value and m, rounded up; at least 1): those with the largest
 * |a_i|, ties to the lower index. The chunk's entries are the selected
 * indices in increasing order with their values a_i. The values the
 * stream carries (its "values", below) are at the entries, except under a
 * Bloom index codec, which chooses them (Bloom groups). Then e_i = a_i at
 * every position that carries no value, and at a position i that does,
 * e_i = a_i - v_i for float16 and fitted values (v_i what a receiver
 * decodes), else +0 (float32 is exact; QSGD's rounding is unbiased and not
 * fed back).
 *
 * The owner adds the contributions exactly: its own share as what its own
 * stream stands for, then the others' in rank order, into a sum of the
 * chunk that is 0 elsewhere. The result's entries are the sum's nonzero
 * values (bit pattern not 0: -0 counts), every index once: SparCML's
 * exact sparse merge, no re-selection; coded with the same codecs (a
 * Bloom policy may leave entries out: they decode as +0, and a value at
 * a position that is no entry is the sum's +0 there).
 *
 * Dynamic switch. A stream is sent sparse when its sparse form is smaller
 * than its dense form, else dense: sparse bytes = the body of one sparse
 * slice holding every value of the chunk (from position 0, e0 = 0); dense
 * bytes = the body of one dense slice of all n positions (a position that
 * is not an entry is 0): 4 n (f32, fit), 2 n (f16) or the QSGD buckets
 * of n values. idx=auto takes, per chunk, the smallest sparse body of varint,
 * bitmap and rle (ties to the first in that order). The QSGD values are
 * drawn for the form that is sent, the stream's values' with counters
 * their indices in the stream, the dense form's with positions.
 *
 * The chunk's word (aux): byte 0 the form, 0 sparse or 1 dense; byte 1 a
 * sparse stream's index codec, 0 varint, 1 bitmap, 2 rle, 3 bloom (P0),
 * 4 bloom-p1, 5 bloom-p2 (one idx allows, or for auto one of 0..2);
 * bytes 2-3 (bits 16..31) a Bloom stream's salt, else 0. A dense word is
 * exactly 1. The salt is u(2^32) of the chunk's key taken whole: mix(key
 * + (2^32 + 1) G) >> 48.
 *
 * Units are values. A sparse slice covers the positions [first, first +
 * count); the slices of a message cover the chunk, each starting at its
 * first value's position (a Bloom slice: its first group's; the first
 * slice at 0), except that a bitmap whose first value lies too far for
 * one packet sends the positions before it as a slice of no values. Its
 * body:
 *	varint nnz: values in the slice
 *	(QSGD, fit) varint e0: the index of its first value among the chunk's
 *	index part, by the word's index codec (below)
 *	values: nnz float32, or nnz float16 (binary16, little-endian), or
 *	    (QSGD) the norms of the buckets that the values e0 .. e0 + nnz
 *	    - 1 touch (buckets of B values of the chunk's value sequence),
 *	    then the nnz codes packed as a bucket's, or (fit) the headers of
 *	    the buckets they touch, then their codes (Fit values)
 * (varint: LEB128, 7 bits a byte, least significant first, at most 5
 * bytes, no superfluous final 0 byte). A dense slice covers positions
 * [first, first + count): count float32 (f32, fit) or float16 values, or
 * the QSGD buckets of those positions (first a multiple of B, count too unless at
 * the end), as codec "qsgd". Decoding a result slice sets its positions:
 * 0 where it has no value, else the value (divided by W for an average).
 *
 * Float16: binary16 of a float32 rounded to nearest, ties to even, on the
 * bits (a magnitude at or above 2^16, or one that rounds past 65504, is
 * 65504; below 2^-25 it is 0, 2^-25 itself ties to 0); decoded exactly.
 *
 * Fit values. The chunk's value sequence is cut into buckets of F values
 * (bucket; the last shorter). Bucket b's m values w_j (float32) have
 * magnitudes y_j = |w_j| and signs s_j (bit 31 of w_j). Their ranks order
 * them by y descending, ties to the lower j; Y_t is the magnitude of rank
 * t. Knots: k_0 = 0; with a = the last knot, while fewer than 4 segments
 * and m - a >= 32: for t from a + 16 to m - 16, d_t = |Y_t - (Y_a +
 * (Y_{m-1} - Y_a) * ((t - a) / (m - 1 - a)))| in binary64 (that order);
 * the first t of the largest d_t > 0 is the next knot, else stop. Segment
 * s covers ranks [k_s, k_{s+1}) (k_S = m), L = k_{s+1} - k_s of them. Its
 * six control points c_0..c_5: for L >= 6 the least-squares fit of Y_{k_s
 * + t}, t = 0..L-1, by sum_i c_i B_i(t / (L - 1)), in binary64: u = t /
 * (L - 1), v = 1 - u, u2 = u u, u3 = u2 u, u4 = u3 u, v2 = v v, v3 = v2 v,
 * v4 = v3 v, B_0 = v4 v, B_1 = 5 (u v4), B_2 = 10 (u2 v3), B_3 = 10 (u3 v2),
 * B_4 = 5 (u4 v), B_5 = u4 u; A_ij (i <= j) and r_i summed in order of t
 * from 0 (A_ij = A_ij + B_i B_j, r_i = r_i + B_i Y), A_ji = A_ij; for p =
 * 0..5, for i = p+1..5: f = A_ip / A_pp, A_ij = A_ij - f A_pj (j = p..5),
 * r_i = r_i - f r_p; then for i = 5 down to 0: x = r_i, x = x - A_ij c_j
 * for j = i+1..5 in turn, c_i = x / A_ii. For L < 6, c_i = Y_{k_s +
 * floor(i (L - 1) / 5)}. Each c_i is then rounded to float32 and clamped:
 * not >= 0 (NaN too) gives +0, above T gives T, T = min(Y_{k_s},
 * 0x1.fffffep126). A value decodes to its rank r's curve: u = (float)(r -
 * k_s) / (float)(L - 1) (0 for L = 1), in float32 de Casteljau: b_i = c_i,
 * then for l = 1..5, for i = 0..5-l: b_i = (1 - u) b_i + u b_{i+1}; the
 * value is b_0, negated if its sign bit was set. On the wire a bucket's
 * header is u16 m - 1, a byte S (segments), S - 1 u16 knots k_1..k_{S-1},
 * then 6 S float32 control points, segment after segment; a value's code
 * is its rank at ceil(log2 m) bits then its sign bit, the slice's codes
 * packed least significant first, padding 0. A slice's fitted values are
 * refused if a header is cut short, has m > F, S = 0 or S > 4, knots that
 * do not increase strictly inside (0, m), or a control point whose bits
 * are above 0x7effffff (negative, -0, 2^127 and beyond, infinite, NaN); if
 * a bucket its values pass beyond holds fewer than F values, its last
 * value lies past its bucket's m, a rank is m or more, or the codes'
 * bytes are not exactly ceil(sum of their widths / 8).
 *
 * Index codecs. Positions p_0 < p_1 < ... of a slice's values:
 *   varint: nnz varints, p_0 - first, then p_j - p_{j-1} - 1.
 *   bitmap: varint b, then b bytes: bit k (byte k / 8, bit k mod 8, least
 *	significant first) is set iff first + k carries a value. The sender
 *	writes b = floor((p_last - first) / 8) + 1 (0 with no value).
 *   rle: the maximal runs of consecutive positions: varint K (runs); if
 *	K > 0, a byte wg and a byte wo (bit widths, 0..32), then per run
 *	its gap at wg bits and its length - 1 at wo bits, packed least
 *	significant first from bit 0 of the next byte, padding bits 0. The
 *	gap of run 0 is its start - first, of run j > 0 its start - the end
 *	of run j - 1 - 2 (runs are maximal). The sender's widths are the
 *	bit lengths of the largest gap and length - 1 (0 for 0).
 *   bloom: varint G (groups), then per group varint skip, varint r, varint
 *	span and the group's filter of M(r) bytes. Group g covers the
 *	positions [s_g, s_g + span), s_0 = first + skip_0, s_g = s_{g-1} +
 *	span_{g-1} + skip_g; its values are at the positions its policy
 *	chooses (Bloom groups), in increasing order, group after group.
 *
 * Bloom groups. From fpr's float32 value eps = M 2^(E - 150) (E its
 * exponent field, M its 24-bit significand): y = M * 2^7 (Q1.30), f = 0;
 * for i = 15 down to 0: y = floor(y^2 / 2^30), and if y >= 2^31, y =
 * floor(y / 2) and f += 2^i. L = (127 - E) * 2^16 - f (log2(1/eps) in
 * Q16); h = max(1, floor((L + 2^15) / 2^16)) hash functions (at most 20);
 * a filter for r entries has M(r) = ceil(r * L * 94548 / 2^35) bytes, m =
 * 8 M(r) bits (94548 = floor(2^16 / ln 2): m = r log2(1/eps) / ln 2). A
 * group holds at most gmax entries: the largest r <= 64 with M(r) <= 128.
 * The chunk's key is H = mix(salt + G) (salt from the word). Position q
 * (in the chunk) has z = mix(H + (q + 1) G), x_j = (lo32(z) + j * (hi32(z)
 * | 1)) mod 2^32 for j = 0..h-1, and probes bits floor(x_j * m / 2^32); a
 * filter sets the probed bits of its entries, and q is a positive of a
 * group if q lies in its span and every probed bit is set. A group's draws
 * are w(c) = mix(D + (c + 1) G) >> 32 with D = mix(H ^ s_g * G) (all mod
 * 2^64). Selection sampling of k among N candidates visited in order
 * takes a candidate, with `need` still to take and `left` candidates not
 * yet visited (this one included), iff need > 0 and floor(w(c) * left /
 * 2^32) < need, c being its counter.
 *   P0 (bloom): every positive.
 *   P1 (bloom-p1): r of the P positives by selection sampling, counter =
 *	the positive's index among them.
 *   P2 (bloom-p2): conflict sets. The bits of a positive are its distinct
 *	probed bits; a bit's conflict set is the positives that have it. A
 *	sure hit is a positive alone in one of its conflict sets. If there
 *	are S >= r sure hits: r of them by selection sampling (counters their
 *	indices among the sure hits). Else every sure hit is taken, and the
 *	positives are visited from index t0 = floor(w(2^32) * P / 2^32) to
 *	the last, then from the first to t0 - 1: one that is no sure hit,
 *	while fewer than r are taken, is taken if one of its bits is in no
 *	taken positive's bits. The rest, r - taken, come from the positives
 *	not taken yet, in order, by selection sampling with counters 2^33 +
 *	their index among those.
 * The sender cuts its entries into groups in order: a group takes the next
 * min(gmax, entries left) entries; while it holds more than one and its
 * body as a slice of its own (skip 0, from its first entry, e0 its first
 * value's index in the stream; fitted values counted with every header
 * at 4 segments and ranks at ceil(log2 F) bits) would exceed 224 bytes,
 * it keeps the first ceil(r / 2) of them. Its span runs from its first entry to its last; the
 * filter and key as above (a group is never empty).
 *
 * A slice is refused (-EBADMSG, nothing touched) if its word is not one
 * the parameters allow, a varint is malformed, a position falls outside
 * [first, first + count), nnz exceeds count, e0 + nnz exceeds the chunk's
 * length, the body has bytes left over or too few, a norm is not finite
 * or has its sign bit set, a code has a sign with level 0 or a level under
 * a norm of +0, padding bits are not 0, a float32 or float16 value is not
 * finite; a bitmap of more than ceil(count / 8) bytes, a set bit at or
 * past count, or fewer or more set bits than nnz; rle widths over 32,
 * K > nnz, K = 0 with values, or lengths not adding up to nnz; more
 * groups than a quarter of the bytes left, a group with r = 0, r > gmax,
 * span < r, or (P1, P2) fewer than r positives, or groups whose values do
 * not add up to nnz.
 *
 * ==== CLT-k: cyclic local top-k (codec "cltk", ScaleCom) ====
 *
 * Parameters: density (0 < d <= 1, default 0.01), beta (0 < beta <= 1,
 * default 1), warmup (steps, default 0), bits (0: float32 values, the
 * default; 2, 4 or 8: QSGD values), bucket and norm (QSGD's, for its
 * values, with top-k's defaults: 128 values, max). Ranks that disagree
 * on any of them refuse the tensor.
 *
 * Step and chunks. s counts the steps of the tensor's registration
 * before this one: 0 for its first step (the generator's step, above, is
 * the wire's, which counts from 1 and goes on across registrations).
 * The tensor's chunks are numbered g = 0, 1, ... in the tensor's order
 * (shard 0's chunks first). A chunk of n values has a set of k entries:
 * k = n while s < warmup, else k = ceil(d * n) exactly as top-k's (at
 * least 1). While k = n the set is the whole chunk, in order, and there
 * is no index round; the rest holds with I_j = j.
 *
 * The leader of chunk g at step s is rank (s + g) mod W. With a memory m
 * (its error feedback) of its own, zeros at registration, every rank i
 * forms p = x + m (float32; any p of the chunk not finite is -EDOM, the
 * step skipped on every rank and m left as it was). The leader selects
 * I = the k entries of largest |p|, ties to the lower index (top-k's
 * selection, one block), in increasing position order, and sends I to
 * every rank (the index round, below). Then every rank, the leader too:
 *   values v_j = p[I_j], j = 0 .. k-1;
 *   r = p, except +0 at the positions of I;
 *   m = r if beta = 1, else c * m + beta * r with c = 1 - beta, each in
 *	float32: c first, then the two products, then their sum (a new m
 *	that is not finite is -EDOM, as above).
 * With bits > 0 the values are QSGD's sequence of k values, drawn under
 * the rank's key (phase 0) at the chunk's offset, counter j for v_j; the
 * memory does not see QSGD's rounding (it is unbiased).
 *
 * The owner adds the contributions exactly: its own share as what its
 * values stand for (v_j, or their QSGD values) at I_j and 0 elsewhere,
 * then the others' values in rank order, acc[I_j] += value_j. Every
 * contribution has the same support, so the sum needs no selection: its
 * values at I, s_j = acc[I_j], are the result (with bits > 0 drawn anew
 * as a QSGD sequence under the owner's key, phase 1, at the chunk's
 * offset), and every rank, the owner included, sets the chunk to value_j
 * at I_j (divided by (float)W for an average) and +0 elsewhere. A sum
 * that is not finite anywhere in the chunk is -EDOM.
 *
 * Values streams (contributions and results). The chunk's word is k.
 * Units are the set's entries: a slice covers entries [first, first +
 * count) and holds their values, count float32, or (QSGD) the buckets of
 * B entries of the sequence of k values as codec "qsgd" holds buckets of
 * n (first a multiple of B, count too unless first + count = k). A
 * message goes as WHOLE packets only when k = n (a WHOLE packet's count
 * is the chunk's values). Decoding a result slice sets the positions from
 * I_{first-1} + 1 (0 for first = 0) through I_{first+count-1} (through
 * n - 1 when first + count = k): the entries' values there, 0 between.
 * A slice is refused if k is 0 or above n, first + count exceeds k, the
 * body is not exactly its values, a float32 value is not finite or a
 * QSGD bucket is refused as "qsgd"'s are; a receiver also refuses a
 * slice whose word is not its chunk's k at that step.
 *
 * The index round (any codec with an index round, GN_PHASE_INDEX). The
 * leader sends I to every rank as DATA packets of phase 2 (never WHOLE)
 * whose word is k and whose slices cover entries [first, first + count)
 * of I: the body is count varints, I_first, then I_j - I_{j-1} - 1 for
 * the next ones (varints as top-k's). A slice is refused if a varint is
 * malformed or a position reaches n, first + count exceeds k, the body
 * has bytes left over, the sender is not the chunk's leader at that step,
 * the chunk has no round at that step, or the word is not k. A rank takes
 * I only whole: a set whose slices do not cover every entry once or whose
 * positions do not increase across slices fails the step (-EBADMSG,
 * naming the leader). A rank sends its values only once it has I, and an
 * owner adds a share only once it has I; a set that never comes fails
 * the step at the step timeout, naming the leader.
 *
 * One-chunk stream (gradnet-codec; the encoder leads the chunk, its step
 * s is --step): the word k (u32), then, when k < n, one index slice of
 * all k entries, then one values slice of all k entries.
 *
 * ==== The model-updating step (model tensors: DORE, 3LC's push/pull) ====
 *
 * A model tensor (gn_model_register()) holds n parameters x, equal on
 * every rank, sharded and chunked as an allreduce's tensor is: rank j
 * owns [lo_j, lo_{j+1}), lo_j = floor(n j / W), cut into chunks of the
 * job's chunk size from the shard's start. Two codecs, each any codec
 * above with its parameters: U for the gradients (contributions), D for
 * the model's changes (results). Its optimizer: momentum mu, weight decay
 * lambda; with DORE also alpha, beta and eta. Without DORE, alpha = eta =
 * 0 and beta = 1 below, and the terms in h and e are left out. Every
 * value is float32; an operation rounds to nearest before the next one.
 *
 * Q_U(v) and Q_D(v), for a chunk v at offset o: encode v as a
 * contribution of the codec (its "Encode" above; top-k selects, QSGD
 * draws) and take the values its stream stands for, as the codec's
 * decode of it gives them (not divided by W). A codec that keeps error
 * feedback (3lc, topk) is given its error buffer: without DORE its own,
 * kept per direction (rank i's for U over the whole tensor, owner j's for
 * D over its shard), updated as the codec says; with DORE, whose h and e
 * take that role, a buffer of zeros, and what it writes is dropped. The
 * key of U's draws is key(seed(job, tensor, t, i, 0), o) for rank i, and
 * of D's key(seed(job, tensor, t, j, 1), o) for owner j. t is the
 * step's number, as an allreduce's: 1, 2, ... from the tensor's first
 * registration, failed steps included; a registration after
 * gn_tensor_unregister() numbers its steps from the last one's + 2.
 *
 * State, zero at registration (and at a registration after
 * gn_tensor_unregister()): with DORE h_i[0..n) on every rank i and h, e
 * on the owner of each shard (its values only); with mu > 0 the owner's
 * m; the codecs' error feedback as above.
 *
 * Step t with learning rate gamma and rank i's gradient g_i:
 *  1. Every rank i, every chunk c of every shard (its own too):
 *	u = g_i - h_i (DORE), else u = g_i; q_i = Q_U(u); with DORE
 *	h_i <- h_i + alpha * q_i.
 *  2. The owner j of chunk c sums the q_i: S starts as q_j and takes the
 *	others' in increasing rank order as U's decoder adds them
 *	(acc + value for every value of none and qsgd; for 3lc only its
 *	nonzero trits; for topk only the entries of a sparse stream, every
 *	value of a dense one).
 *  3. For each value k of the chunk, with x = x[k]:
 *	d = S[k] / (float)W;
 *	DORE: h' = h[k] + alpha * d, d = h[k] + d, h[k] <- h';
 *	lambda > 0: d = d + lambda * x;
 *	mu > 0: d = mu * m[k] + d, m[k] <- d;
 *	v[k] = (x - gamma * d) - x;
 *	DORE: v[k] = v[k] + eta * e[k].
 *	Then p = Q_D(v), and with DORE e <- v - p (each value). The owner
 *	sends D's stream of v to every rank.
 *  4. When the step has every chunk's p, every rank (the owner included,
 *	with the very values it sent) sets x <- x + beta * p, every value.
 * So the parameters are bit-identical on every rank. A step fails on
 * every rank, -EDOM, if some u or v holds a value that is not finite (a
 * NaN in a gradient, or an overflow), and then x and every state above
 * are as they were before it; gamma must be finite and >= 0.
 *
 * DORE's blockwise stochastic ternary quantizer (Q(v)_j = ||v||_inf *
 * sign(v_j) * b_j, b_j ~ Bernoulli(|v_j| / ||v||_inf), blocks of 256) is
 * QSGD at 2 bits with the max norm and buckets of 256:
 * "qsgd:bits=2,bucket=256,norm=max" (s = 1: l = 0, p = r = |v_j| / norm,
 * and |v_j| = norm gives l = 1), bit for bit, 2 bits a value and a norm a
 * block on the wire. So DORE is a mode of the model-updating step, not a
 * codec: it takes no codec id, and its quantizer is what a DORE tensor
 * with GN_CODEC_DEFAULT uses in a direction.
 *
 * On the wire a model tensor's DATA packets are an allreduce's, the
 * contributions in U's codec byte and stream, the results in D's; its
 * descriptor (CTRL TENSOR) carries U and its parameters, and flags bit
 * 0x80 with a 24-bit digest of the rest (D's id and parameters, its
 * entropy stage, the DORE flag, mu, lambda, alpha, beta and eta) in bits
 * 40-63 of the value,
 * where a bucket has its layout hash: ranks that registered it otherwise
 * refuse each other (-EPROTO).
 *
 * ==== The entropy stage (every codec) ====
 *
 * Parameters, after every codec's own: entropy (none or zstd, default
 * none) and entropy_level (zstd's level, 1..19, default 1; another level
 * with entropy=none is refused). They are part of the tensor's block that
 * ranks compare (CTRL TENSOR's extra word: coder in bits 0-7, level in
 * bits 8-15), and the codec's stream, values and error feedback do not
 * depend on them: the stage is lossless, so a reference of the values
 * models it as the identity.
 *
 * With entropy=zstd each packet's body is either the codec's slice as it
 * is, or one zstd frame (RFC 8878; content size in the frame header, no
 * checksum, no dictionary) that decodes to the codec's slice; bit 7 of the
 * header's codec byte says which (<gradnet/wire.h>). A frame spans one
 * packet only: a packet decodes alone. The sender codes a packet only
 * when the frame is shorter than the slice and the slice has at least
 * GN_ENTROPY_MIN (256) bytes, and cuts slices to what fits
 * once coded (compress-then-cut): it asks the codec for the slice from
 * the packet's first unit within a raw budget of at most GN_ENTROPY_SPAN
 * (4) bodies of a WHOLE packet, compresses, and shrinks the budget by the
 * ratio it saw until the frame fits the packet (at most four tries, then
 * the codec's own cut at the packet's size); a packet never carries fewer
 * units than the codec's own cut at that size would put in it, so a
 * message never has more packets than the codec's pkts_max. A message
 * that comes out as one packet is sent WHOLE. An index round's sets
 * (phase 2) are never coded, and a coded one is refused; the
 * contributions of a codec with an index round are sent uncoded. A model
 * tensor's packets take the stage of their own codec's parameters: its
 * contributions are coded when U's have it, its results when D's have it
 * (entropy and entropy_level of D, which the descriptor's digest covers),
 * each direction at its own level.
 *
 * Receive. A coded body is decompressed into at most min(4 WHOLE
 * bodies, the bound of a chunk of chunk_len values of the phase's codec)
 * bytes; a frame that is malformed, decodes to more, or decodes to no
 * more bytes than it has itself is refused (-EBADMSG), and so is a coded
 * body of a phase whose codec's parameters do not have the stage. What it decodes to is then checked by the
 * codec's slice check like any body, before the packet counts.
 *
 * The coded bytes are zstd's: libzstd's in userspace and on the DPDK
 * path, the kernel's lib/zstd in the module. They may differ between
 * versions of zstd (and so between paths), which changes packet sizes and
 * cuts, never a value: every rank decodes the same slices to the same
 * floats. Nothing compares coded bytes across paths.
 *
 * Return values: a byte or element count, or a negative errno.
 */
#ifndef GRADNET_CODEC_H
#define GRADNET_CODEC_H

#include <stddef.h>
#include <stdint.h>

#ifndef GN_EXPORT
#define GN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Elements per quartic group, and the byte of an all-zero group. */
#define GN_TLC_GROUP 5
#define GN_TLC_ZERO 121
/* Bytes of the scale M in front of a chunk stream. */
#define GN_TLC_SCALE_BYTES 4
/* Zero groups covered by one run byte b >= GN_ZRE_RUN_MIN: b - 241. */
#define GN_ZRE_RUN_MIN 243
#define GN_ZRE_RUN_MAX_LEN 14

/**
 * gn_tlc_groups() - number of quartic groups of an n-element chunk
 * @n: elements in the chunk
 *
 * Return: ceil(n / 5).
 */
static inline size_t gn_tlc_groups(size_t n)
{
	return n / GN_TLC_GROUP + (n % GN_TLC_GROUP != 0);
}

/**
 * gn_tlc_encode_bound() - worst-case size of a chunk stream
 * @n: elements in the chunk
 *
 * Zero-run encoding never makes a group sequence longer, so the bound is
 * the scale plus one byte per group.
 *
 * Return: 4 + ceil(n / 5).
 */
static inline size_t gn_tlc_encode_bound(size_t n)
{
	return GN_TLC_SCALE_BYTES + gn_tlc_groups(n);
}

/**
 * gn_tlc_quantize() - error feedback, quantization and quartic encoding
 * @x: n input values
 * @e: n error-feedback values, updated in place
 * @n: elements
 * @s: sparsity multiplier, 1 <= s < 2
 * @quartic: out, gn_tlc_groups(n) bytes, one per group
 * @m: out, the scale M
 *
 * Return: 0; -EINVAL for a bad @s; -EDOM if some x_i + e_i is not finite
 * or M overflows (then @e, @quartic and @m are untouched).
 */
GN_EXPORT int gn_tlc_quantize(const float *x, float *e, size_t n, float s,
			      uint8_t *quartic, float *m);

/**
 * gn_tlc_chunk_count() - chunks of at most @chunk values in @n values
 * @n: values in the tensor
 * @chunk: values per chunk, > 0
 *
 * Return: ceil(n / chunk).
 */
static inline size_t gn_tlc_chunk_count(size_t n, size_t chunk)
{
	return n / chunk + (n % chunk != 0);
}

/**
 * gn_tlc_chunks_groups() - group bytes gn_tlc_quantize_chunks() writes
 * @n: values in the tensor
 * @chunk: values per chunk, > 0
 *
 * Chunk c's groups start at c * gn_tlc_groups(@chunk).
 *
 * Return: the total.
 */
static inline size_t gn_tlc_chunks_groups(size_t n, size_t chunk)
{
	return n / chunk * gn_tlc_groups(chunk) + gn_tlc_groups(n % chunk);
}

/**
 * gn_tlc_quantize_chunks() - quantize a tensor as consecutive chunks
 * @x: n input values
 * @e_in: n error-feedback values
 * @e_out: n new error-feedback values; may be @e_in, else must not overlap
 * @n: values in the tensor
 * @chunk: values per chunk (the last one may be shorter), > 0
 * @s: sparsity multiplier, 1 <= s < 2
 * @quartic: out, gn_tlc_chunks_groups(@n, @chunk) bytes
 * @m: out, gn_tlc_chunk_count(@n, @chunk) scales
 *
 * The same results as gn_tlc_quantize() on each chunk in turn, in one call.
 * Each chunk is read twice (its maximum first), so chunks that fit in the
 * L2 cache (the default 65536 values do) read memory only once. With
 * @e_out != @e_in, @e_in is never written, so a caller can drop a failed
 * step by keeping @e_in; from GN_TLC_NT_MIN values on, @e_out is then
 * written with non-temporal stores (see GN_TLC_NT). A caller that
 * quantizes a large tensor a few chunks per call asks for them with
 * gn_tlc_quantize_chunks_ex().
 *
 * Return: 0; -EINVAL for a bad @s or @chunk; -EDOM if a chunk holds a
 * value that is not finite (chunks before it have been quantized; nothing
 * of that chunk or later ones is written).
 */
GN_EXPORT int gn_tlc_quantize_chunks(const float *x, const float *e_in,
				     float *e_out, size_t n, size_t chunk,
				     float s, uint8_t *quartic, float *m);

/*
 * Flags of gn_tlc_quantize_chunks_ex(). GN_TLC_NT: write @e_out with
 * non-temporal stores where its alignment allows, so that it is left out
 * of the caches and its old contents are never read (no read for
 * ownership). For an error buffer that the next step reads only after the
 * whole tensor has gone through the caches, that is: from about
 * GN_TLC_NT_MIN values (16 MiB of float32) on.
 */
#define GN_TLC_NT 1u
#define GN_TLC_NT_MIN ((size_t)1 << 22)

/**
 * gn_tlc_nt_flags() - the flags for a double-buffered error buffer
 * @n: values in the whole buffer (the tensor), not in one call
 *
 * Return: GN_TLC_NT from GN_TLC_NT_MIN values on, else 0.
 */
static inline unsigned int gn_tlc_nt_flags(size_t n)
{
	return n >= GN_TLC_NT_MIN ? GN_TLC_NT : 0;
}

/**
 * gn_tlc_quantize_chunks_ex() - gn_tlc_quantize_chunks() with an explicit
 * instruction set and flags
 * @isa: a GN_ISA_* value, or GN_ISA_BEST
 * @flags: 0 or GN_TLC_NT (which needs @e_out != @e_in); the size rule of
 * gn_tlc_quantize_chunks() does not apply: the flags alone decide
 *
 * Return: as gn_tlc_quantize_chunks(); -EINVAL for an unknown flag or
 * GN_TLC_NT in place; -EOPNOTSUPP for an instruction set the CPU lacks.
 */
GN_EXPORT int gn_tlc_quantize_chunks_ex(int isa, const float *x,
					const float *e_in, float *e_out,
					size_t n, size_t chunk, float s,
					unsigned int flags, uint8_t *quartic,
					float *m);

/**
 * gn_zre_encode() - zero-run encode groups, up to a byte budget
 * @quartic: groups, values 0..242
 * @count: number of groups
 * @dst: out
 * @cap: bytes available at @dst
 * @consumed: out, groups encoded
 *
 * Encodes the longest prefix of @quartic whose encoding fits @cap bytes,
 * with runs cut at the end of that prefix, so each call's output decodes on
 * its own (a packet slice). With @cap >= @count it encodes all groups.
 *
 * Return: bytes written. -EINVAL if a group byte is above 242.
 */
GN_EXPORT long gn_zre_encode(const uint8_t *quartic, size_t count,
			     uint8_t *dst, size_t cap, size_t *consumed);

/**
 * gn_tlc_encode() - encode a whole chunk into a chunk stream
 * @x: n input values
 * @e: n error-feedback values, updated in place
 * @n: elements
 * @s: sparsity multiplier, 1 <= s < 2
 * @dst: out
 * @cap: bytes at @dst, at least gn_tlc_encode_bound(@n)
 *
 * Return: stream length; -ENOSPC if @cap is below the bound; -EINVAL,
 * -EDOM as gn_tlc_quantize(). On any error @e is untouched.
 */
GN_EXPORT long gn_tlc_encode(const float *x, float *e, size_t n, float s,
			     void *dst, size_t cap);

/**
 * gn_tlc_decode() - decode a chunk stream and accumulate it
 * @src: chunk stream
 * @len: its length in bytes
 * @acc: n accumulators; acc_i += q_i*M for the nonzero q_i
 * @n: elements of the chunk
 *
 * Return: 0; -EBADMSG for a malformed stream, with @acc untouched.
 */
GN_EXPORT int gn_tlc_decode(const void *src, size_t len, float *acc, size_t n);

/**
 * gn_tlc_decode_slice() - decode one slice of a chunk and accumulate it
 * @src: zero-run encoded groups [@j0, @j0 + @count) of the chunk
 * @len: bytes at @src
 * @m: the chunk's scale M
 * @acc: the chunk's n accumulators (the whole chunk, not the slice)
 * @n: elements of the chunk
 * @j0: first group of the slice
 * @count: groups in the slice
 *
 * Return: 0; -EBADMSG if the slice does not lie inside the chunk's
 * ceil(n/5) groups or is malformed, with @acc untouched.
 */
GN_EXPORT int gn_tlc_decode_slice(const uint8_t *src, size_t len, float m,
				  float *acc, size_t n, size_t j0, size_t count);

/**
 * gn_zre_check() - validate a slice without decoding it
 * @src, @len, @n, @j0, @count: as gn_tlc_decode_slice()
 *
 * Checks the group count and that no nonzero trit lands at an index >= @n.
 * Used by receive paths that must reject a packet before touching a tensor.
 *
 * Return: 0 or -EBADMSG.
 */
GN_EXPORT int gn_zre_check(const uint8_t *src, size_t len, size_t n,
			   size_t j0, size_t count);

/* Instruction sets the codec has kernels for. */
enum gn_isa {
	GN_ISA_SCALAR = 0,
	GN_ISA_AVX2 = 1,
	GN_ISA_AVX512 = 2,
	GN_ISA_COUNT,
	GN_ISA_BEST = -1,
};

/**
 * gn_codec_isa_name() - printable name of an instruction set
 * @isa: one of enum gn_isa
 *
 * Return: "scalar", "avx2", "avx512" or "?".
 */
GN_EXPORT const char *gn_codec_isa_name(int isa);

/**
 * gn_codec_isa_supported() - can this CPU run the kernels of @isa?
 * @isa: one of enum gn_isa
 *
 * AVX-512 kernels need F, BW, VL, VBMI (byte permutes) and VBMI2 (byte
 * compression): Ice Lake and later, Zen 4 and later; AVX2
 * kernels need AVX2 and BMI2.
 *
 * Return: 1 if yes, 0 if not.
 */
GN_EXPORT int gn_codec_isa_supported(int isa);

/**
 * gn_codec_isa_best() - the widest instruction set this CPU can run
 *
 * Return: the widest supported enum gn_isa value.
 */
GN_EXPORT int gn_codec_isa_best(void);

/**
 * gn_codec_isa_parse() - an instruction set from its name
 * @name: "scalar", "avx2", "avx512" or "best"
 *
 * Return: the enum gn_isa value (GN_ISA_BEST for "best"), or -EINVAL for
 * NULL or any other name.
 */
GN_EXPORT int gn_codec_isa_parse(const char *name);

/**
 * gn_codec_isa_set_default() - choose the kernels the default entry points use
 * @isa: one of enum gn_isa, or GN_ISA_BEST for the widest the CPU has
 *
 * The choice is process-wide (libgradnet makes it from GN_CODEC_ISA when a
 * context opens); make it before encoding or decoding on other threads.
 * Every instruction set gives the same bytes and floats, so this changes
 * speed only; tests use it to run whole jobs on each kernel set.
 *
 * Return: 0, -EOPNOTSUPP if the CPU lacks @isa, -EINVAL if @isa is no
 * instruction set.
 */
GN_EXPORT int gn_codec_isa_set_default(int isa);

/**
 * gn_codec_isa_select() - gn_codec_isa_set_default() by name
 * @name: as gn_codec_isa_parse() takes it (GN_CODEC_ISA's value), or
 *	NULL to leave the choice as it is
 *
 * Return: 0, -EINVAL for an unknown name, -EOPNOTSUPP if the CPU lacks it.
 */
GN_EXPORT int gn_codec_isa_select(const char *name);

/**
 * gn_codec_isa_default() - the instruction set the default entry points use
 *
 * Return: the one chosen by gn_codec_isa_set_default(), else the widest
 * the CPU has.
 */
GN_EXPORT int gn_codec_isa_default(void);

/*
 * The same operations with an explicit instruction set, for tests that
 * compare implementations and for benchmarks. @isa must be supported
 * (gn_codec_isa_supported()), else they return -EOPNOTSUPP.
 */
GN_EXPORT int gn_tlc_quantize_isa(int isa, const float *x, float *e, size_t n,
				  float s, uint8_t *quartic, float *m);
GN_EXPORT int gn_tlc_quantize_chunks_isa(int isa, const float *x,
					 const float *e_in, float *e_out,
					 size_t n, size_t chunk, float s,
					 uint8_t *quartic, float *m);
GN_EXPORT long gn_zre_encode_isa(int isa, const uint8_t *quartic, size_t count,
				 uint8_t *dst, size_t cap, size_t *consumed);
GN_EXPORT long gn_tlc_encode_isa(int isa, const float *x, float *e, size_t n,
				 float s, void *dst, size_t cap);
GN_EXPORT int gn_tlc_decode_isa(int isa, const void *src, size_t len,
				float *acc, size_t n);
GN_EXPORT int gn_tlc_decode_slice_isa(int isa, const uint8_t *src, size_t len,
				      float m, float *acc, size_t n, size_t j0,
				      size_t count);

#ifdef __cplusplus
}
#endif

#endif /* GRADNET_CODEC_H */
