// SPDX-License-Identifier: MIT
/*
 * crypto.c - the core's cryptography in a process (libgradnet, and the
 * DPDK path, which links the same core): ChaCha20-Poly1305 and keyed
 * BLAKE2s-256 from OpenSSL's libcrypto, for gn_deps.h's gn_aead_seal(),
 * gn_aead_open() and gn_kdf().
 *
 * libcrypto rather than libsodium: on the machines measured it seals and
 * opens packets of 1472 bytes and up in about half the cycles (its
 * AVX-512 ChaCha20 and Poly1305; doc/perf/aead.md has the numbers), and
 * it has BLAKE2s, which the kernel's lib/crypto shares with it; libsodium
 * has neither. What its API costs: an EVP context must not be shared
 * between threads, and the core seals and opens on every codec worker,
 * so each thread keeps a context of its own, made on its first call and
 * freed when the thread exits.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "gn_deps.h"

#define TAG_LEN 16
#define KDF_LEN 32

struct crypto_thread {
	EVP_CIPHER_CTX *aead;
	EVP_MAC_CTX *kdf;
};

static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;
static pthread_key_t crypto_key;
static EVP_CIPHER *chacha;
static EVP_MAC *blake2s;
static int crypto_err;
static __thread struct crypto_thread *mine;

static void thread_free(void *p)
{
	struct crypto_thread *t = p;

	EVP_CIPHER_CTX_free(t->aead);
	EVP_MAC_CTX_free(t->kdf);
	free(t);
}

static void crypto_init(void)
{
	chacha = EVP_CIPHER_fetch(NULL, "ChaCha20-Poly1305", NULL);
	blake2s = EVP_MAC_fetch(NULL, "BLAKE2SMAC", NULL);
	if (!chacha || !blake2s)
		crypto_err = -EOPNOTSUPP;	/* a libcrypto without them */
	else if (pthread_key_create(&crypto_key, thread_free))
		crypto_err = -EAGAIN;
}

/* This thread's contexts, made on its first call. */
static int thread_get(struct crypto_thread **out)
{
	struct crypto_thread *t = mine;

	if (likely(t)) {
		*out = t;
		return 0;
	}
	pthread_once(&crypto_once, crypto_init);
	if (crypto_err)
		return crypto_err;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->aead = EVP_CIPHER_CTX_new();
	t->kdf = EVP_MAC_CTX_new(blake2s);
	if (!t->aead || !t->kdf ||
	    EVP_CipherInit_ex2(t->aead, chacha, NULL, NULL, 1, NULL) != 1 ||
	    pthread_setspecific(crypto_key, t)) {
		thread_free(t);
		return -ENOMEM;
	}
	mine = t;
	*out = t;
	return 0;
}

/* Start a packet: key, nonce 0^32 || le64(@nonce), direction, and @ad. */
static int aead_start(EVP_CIPHER_CTX *c, const u8 *key, u64 nonce, int enc,
		      const u8 *ad, size_t ad_len)
{
	u8 iv[12] = { 0 };
	int n;

	gn_put_le64(nonce, iv + 4);
	if (EVP_CipherInit_ex2(c, NULL, key, iv, enc, NULL) != 1)
		return -EIO;
	if (ad_len && EVP_CipherUpdate(c, NULL, &n, ad, (int)ad_len) != 1)
		return -EIO;
	return 0;
}

int gn_aead_seal(const u8 *key, u64 nonce, const u8 *ad, size_t ad_len,
		 u8 *body, size_t len)
{
	struct crypto_thread *t;
	int n, r = thread_get(&t);

	if (r)
		return r;
	r = aead_start(t->aead, key, nonce, 1, ad, ad_len);
	if (r)
		return r;
	if ((len && EVP_CipherUpdate(t->aead, body, &n, body, (int)len) != 1) ||
	    EVP_CipherFinal_ex(t->aead, body + len, &n) != 1 ||
	    EVP_CIPHER_CTX_ctrl(t->aead, EVP_CTRL_AEAD_GET_TAG, TAG_LEN,
				body + len) != 1)
		return -EIO;
	return 0;
}

int gn_aead_open(const u8 *key, u64 nonce, const u8 *ad, size_t ad_len,
		 u8 *body, size_t len)
{
	struct crypto_thread *t;
	u8 none[TAG_LEN];
	int n, r = thread_get(&t);

	if (r)
		return r;
	r = aead_start(t->aead, key, nonce, 0, ad, ad_len);
	if (r)
		return r;
	if ((len && EVP_CipherUpdate(t->aead, body, &n, body, (int)len) != 1) ||
	    EVP_CIPHER_CTX_ctrl(t->aead, EVP_CTRL_AEAD_SET_TAG, TAG_LEN,
				body + len) != 1)
		return -EIO;
	return EVP_CipherFinal_ex(t->aead, none, &n) == 1 ? 0 : -EBADMSG;
}

int gn_kdf(u8 *out, const u8 *key, size_t key_len, const u8 *a, size_t a_len,
	   const u8 *b, size_t b_len)
{
	size_t size = KDF_LEN, got;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
		OSSL_PARAM_construct_end(),
	};
	struct crypto_thread *t;
	int r = thread_get(&t);

	if (r)
		return r;
	if (EVP_MAC_init(t->kdf, key, key_len, params) != 1 ||
	    EVP_MAC_update(t->kdf, a, a_len) != 1 ||
	    EVP_MAC_update(t->kdf, b, b_len) != 1 ||
	    EVP_MAC_final(t->kdf, out, &got, KDF_LEN) != 1 || got != KDF_LEN)
		return -EIO;
	return 0;
}
