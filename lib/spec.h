/* SPDX-License-Identifier: MIT */
/*
 * spec.h - codecs and their parameters from text (spec.c): what libgradnet
 * reads from GN_CODEC and the options' params strings, and what
 * gradnet-codec reads from its command line.
 */
#ifndef GN_SPEC_H
#define GN_SPEC_H

#include "codec/codec.h"

int gn_spec_params(const struct gn_codec_ops *c, const char *text, size_t len,
		   struct gn_codec_spec *spec, char *msg, size_t mlen);
int gn_spec_parse(const char *text, struct gn_codec_spec *spec, char *msg,
		  size_t mlen);
int gn_spec_for(u32 job_codec, int codec, float s, const char *params,
		struct gn_codec_spec *spec, char *msg, size_t mlen);

#endif /* GN_SPEC_H */
