// SPDX-License-Identifier: MIT
/*
 * keys.c - the job key gn_ctx_open() authenticates with, from one source:
 * gn_ctx_opts.key, GN_KEY_FD (a descriptor the launcher opened), GN_KEY_FILE
 * (a file only its owner may read) or GN_KEY (wiped once read); or none,
 * when the caller says insecure.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "open.h"

/* 32 hex digits, from the variable @var; a final newline is allowed. */
static int parse_key(const char *var, const char *hex, size_t len, u8 *key)
{
	size_t i;

	if (len && hex[len - 1] == '\n')
		len--;
	if (len && hex[len - 1] == '\r')
		len--;
	if (len != 2 * GN_MAC_KEY_LEN)
		return gn_open_fail(-EINVAL, "%s: the key must be %d hex digits, got %zu characters",
				    var, 2 * GN_MAC_KEY_LEN, len);
	for (i = 0; i < GN_MAC_KEY_LEN; i++) {
		int hi = gn_open_hexval(hex[2 * i]);
		int lo = gn_open_hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return gn_open_fail(-EINVAL, "%s: the key has a non-hex digit at %zu",
					    var, 2 * i);
		key[i] = (u8)(hi << 4 | lo);
	}
	return 0;
}

/*
 * The key from a file descriptor: read to end of file (a pipe from a
 * launcher, or an open file), then parse. @var names the source.
 */
static int read_key_fd(const char *var, int fd, u8 *key)
{
	char buf[2 * GN_MAC_KEY_LEN + 3];
	size_t have = 0;
	int r;

	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = gn_open_fail(-errno, "%s: cannot read the key: %s", var,
					 strerror(errno));
			goto out;
		}
		if (!n)
			break;
		have += (size_t)n;
		if (have == sizeof(buf)) {
			r = gn_open_fail(-EINVAL, "%s: more than a key (%d hex digits and a newline)",
					 var, 2 * GN_MAC_KEY_LEN);
			goto out;
		}
	}
	r = parse_key(var, buf, have, key);
out:
	explicit_bzero(buf, sizeof(buf));
	return r;
}

/*
 * GN_KEY_FILE: like an ssh private key, a file that others than its owner
 * may read or write is refused, so a key does not leak by a loose umask.
 */
static int key_from_file(const char *path, u8 *key)
{
	struct stat st;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gn_open_fail(-errno, "GN_KEY_FILE=%s: %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		r = gn_open_fail(-errno, "GN_KEY_FILE=%s: %s", path, strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		r = gn_open_fail(-EINVAL, "GN_KEY_FILE=%s is not a regular file", path);
	} else if (st.st_mode & 077) {
		r = gn_open_fail(-EACCES,
				 "GN_KEY_FILE=%s has mode %03o: group and others must have no access (chmod 600)",
				 path, (unsigned int)(st.st_mode & 0777));
	} else {
		r = read_key_fd("GN_KEY_FILE", fd, key);
	}
	close(fd);
	return r;
}

/*
 * GN_KEY_FD: a descriptor the launcher opened (a pipe, say). It is read
 * once and closed, and the variable removed, so children inherit neither.
 */
static int key_from_fd(const char *num, u8 *key)
{
	char *end;
	long fd;
	int r;

	errno = 0;
	fd = strtol(num, &end, 10);
	if (errno || *end || end == num || fd < 0 || fd > 0x7fffffff)
		return gn_open_fail(-EINVAL, "GN_KEY_FD=%s is not a file descriptor", num);
	r = read_key_fd("GN_KEY_FD", (int)fd, key);
	if (r == -EBADF)
		return gn_open_fail(r, "GN_KEY_FD=%ld is not an open file descriptor", fd);
	close((int)fd);
	unsetenv("GN_KEY_FD");
	return r;
}

/*
 * GN_KEY: read, then wiped from the environment (the string itself, which
 * /proc/PID/environ shows for the initial environment, then the variable),
 * so processes this one starts do not inherit the key.
 */
static int key_from_env(char *hex, u8 *key)
{
	int r = parse_key("GN_KEY", hex, strlen(hex), key);

	explicit_bzero(hex, strlen(hex));
	unsetenv("GN_KEY");
	return r;
}

int gn_open_read_key(struct open_args *a, const struct gn_ctx_opts *o)
{
	const char *ins = getenv("GN_INSECURE"), *file = getenv("GN_KEY_FILE");
	const char *fd = getenv("GN_KEY_FD"), *enc = getenv("GN_ENCRYPT");
	char *hex = getenv("GN_KEY");
	u8 *key = a->key;
	const u8 *given;
	int r = 0;

	a->insecure = (OPT(o, flags) & GN_CTX_INSECURE) ||
			(ins && !strcmp(ins, "1"));
	if (enc && *enc && strcmp(enc, "0") && strcmp(enc, "1"))
		return gn_open_fail(-EINVAL, "GN_ENCRYPT=%s: use 1 (encrypt packet bodies, the default) or 0 (authenticate only)",
				    enc);
	a->conf.clear = (OPT(o, flags) & GN_CTX_CLEAR) ||
			(enc && !strcmp(enc, "0"));
	given = OPT(o, key);
	if (!given && (!!(hex && *hex) + !!(file && *file) + !!(fd && *fd)) > 1)
		return gn_open_fail(-EINVAL,
				    "more than one of GN_KEY, GN_KEY_FILE and GN_KEY_FD is set; pick one");
	if (given) {
		if (OPT(o, key_len) != GN_MAC_KEY_LEN)
			return gn_open_fail(-EINVAL, "key_len is %zu, must be %d",
					    OPT(o, key_len), GN_MAC_KEY_LEN);
		memcpy(key, given, GN_MAC_KEY_LEN);
	} else if (fd && *fd) {
		r = key_from_fd(fd, key);
	} else if (file && *file) {
		r = key_from_file(file, key);
	} else if (hex && *hex) {
		r = key_from_env(hex, key);
	} else if (a->insecure) {
		return 0;
	} else {
		return gn_open_fail(-EINVAL,
				    "no job key: set GN_KEY (32 hex digits), GN_KEY_FILE, GN_KEY_FD or gn_ctx_opts.key; GN_INSECURE=1 (or GN_CTX_INSECURE) runs without authentication");
	}
	if (!r && a->insecure)
		r = gn_open_fail(-EINVAL, "a key and GN_INSECURE are both set; pick one");
	if (r)
		explicit_bzero(a->key, sizeof(a->key));
	else
		a->conf.key = a->key;	/* the session key comes at the handshake */
	return r;
}

