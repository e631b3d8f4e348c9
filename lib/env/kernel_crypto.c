// SPDX-License-Identifier: MIT
/*
 * kernel_crypto.c - the core's cryptography in the kernel module:
 * ChaCha20-Poly1305 from lib/crypto's chacha20poly1305 (what WireGuard
 * links; the module depends on libchacha20poly1305.ko) and keyed BLAKE2s
 * from lib/crypto's blake2s (built into the kernel), for gn_deps.h's
 * gn_aead_seal(), gn_aead_open() and gn_kdf().
 *
 * The library takes the 64-bit counter and builds the RFC 8439 nonce
 * 0^32 || le64(counter) itself, the layout the wire uses. It picks its
 * SIMD code per call: in the module's worker (a kernel thread, process
 * context) may_use_simd() holds, so ChaCha20 and Poly1305 run with
 * AVX2 or AVX-512 in kernel_fpu_begin() sections of at most 4 KiB each,
 * which it opens and closes itself. Inside a section of ours it would
 * fall back to the generic code, so the core never calls it there.
 */
#include <linux/errno.h>
#include <linux/string.h>
#include <crypto/blake2s.h>
#include <crypto/chacha20poly1305.h>

#include "gn_deps.h"

static_assert(CHACHA20POLY1305_AUTHTAG_SIZE == 16, "the wire's tag");
static_assert(CHACHA20POLY1305_KEY_SIZE == 32, "GN_SEAL_KEY_LEN");

int gn_aead_seal(const u8 *key, u64 nonce, const u8 *ad, size_t ad_len,
		 u8 *body, size_t len)
{
	chacha20poly1305_encrypt(body, body, len, ad, ad_len, nonce, key);
	return 0;
}

int gn_aead_open(const u8 *key, u64 nonce, const u8 *ad, size_t ad_len,
		 u8 *body, size_t len)
{
	bool ok = chacha20poly1305_decrypt(body, body,
					   len + CHACHA20POLY1305_AUTHTAG_SIZE,
					   ad, ad_len, nonce, key);

	return ok ? 0 : -EBADMSG;
}

int gn_kdf(u8 *out, const u8 *key, size_t key_len, const u8 *a, size_t a_len,
	   const u8 *b, size_t b_len)
{
	struct blake2s_state s;

	if (!key_len || key_len > BLAKE2S_KEY_SIZE)
		return -EINVAL;
	blake2s_init_key(&s, BLAKE2S_HASH_SIZE, key, key_len);
	blake2s_update(&s, a, a_len);
	blake2s_update(&s, b, b_len);
	blake2s_final(&s, out);
	memzero_explicit(&s, sizeof(s));
	return 0;
}
