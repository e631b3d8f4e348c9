// SPDX-License-Identifier: MIT
/*
 * isa.c - which instruction set the codecs' kernels run: what the CPU
 * has, and the process-wide choice the default entry points follow.
 * Integer-only; every compressor with SIMD kernels reads the choice here.
 */
#include "gn_deps.h"
#include <gradnet/codec.h>

static const char *const isa_names[GN_ISA_COUNT] = {
	[GN_ISA_SCALAR] = "scalar",
	[GN_ISA_AVX2] = "avx2",
	[GN_ISA_AVX512] = "avx512",
};

const char *gn_codec_isa_name(int isa)
{
	if (isa < 0 || isa >= GN_ISA_COUNT)
		return "?";
	return isa_names[isa];
}

int gn_codec_isa_supported(int isa)
{
	switch (isa) {
	case GN_ISA_SCALAR:
		return 1;
	case GN_ISA_AVX2:
		return gn_cpu_has_avx2();
	case GN_ISA_AVX512:
		return gn_cpu_has_avx512();
	default:
		return 0;
	}
}

int gn_codec_isa_best(void)
{
	if (gn_cpu_has_avx512())
		return GN_ISA_AVX512;
	if (gn_cpu_has_avx2())
		return GN_ISA_AVX2;
	return GN_ISA_SCALAR;
}

/* What GN_ISA_BEST means: the widest the CPU has, unless a caller chose. */
static int default_isa = GN_ISA_BEST;

int gn_codec_isa_parse(const char *name)
{
	int isa;

	if (!name)
		return -EINVAL;
	if (!strcmp(name, "best"))
		return GN_ISA_BEST;
	for (isa = 0; isa < GN_ISA_COUNT; isa++)
		if (!strcmp(name, isa_names[isa]))
			return isa;
	return -EINVAL;
}

int gn_codec_isa_set_default(int isa)
{
	if (isa != GN_ISA_BEST && !gn_codec_isa_supported(isa))
		return isa >= 0 && isa < GN_ISA_COUNT ? -EOPNOTSUPP : -EINVAL;
	WRITE_ONCE(default_isa, isa);
	return 0;
}

int gn_codec_isa_select(const char *name)
{
	int isa;

	if (!name)
		return 0;
	isa = gn_codec_isa_parse(name);
	return isa == -EINVAL ? isa : gn_codec_isa_set_default(isa);
}

int gn_codec_isa_default(void)
{
	int isa = READ_ONCE(default_isa);

	return isa == GN_ISA_BEST ? gn_codec_isa_best() : isa;
}
