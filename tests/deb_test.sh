#!/bin/bash
# SPDX-License-Identifier: MIT
#
# deb_test.sh - the Debian packages (debian/) build with
# `dpkg-buildpackage -b -uc -us` from a copy of the tree, are lintian clean
# of errors, hold every file meson installs, and work once installed into
# a fresh minimal Debian 12 root that holds no source tree: the tools run,
# a 2-rank gradnet-rank job over loopback gives the build tree's result
# bit for bit, gradnet-stat counts a job of the installed library, Python
# imports gradnet from dist-packages and from a venv (its wheel) on the
# installed library, a C trainer builds with pkg-config, DKMS builds the
# module for the root's kernel headers, and purging gradnet-dkms removes it.
#
# usage: deb_test.sh SOURCE_DIR GRADNET_RANK
#   GRADNET_RANK is the build tree's, the reference for the job's result.
#
# The fresh root comes from debootstrap (minbase, bookworm) and apt, in a
# private mount namespace; the checks run chrooted, in a network namespace
# of their own. Cache, kept between runs (CI starts without it, and then
# downloads everything: doc/packaging.md says how much, and how long):
#   GN_DEB_CACHE (default /var/cache/gradnet-test): bookworm-minbase.tgz,
#   debootstrap's tarball (made again when older than 30 days), and apt/,
#   the packages apt fetched into the root (apt-get autoclean trims it).
#   GN_DEB_MIRROR (http://deb.debian.org/debian) and GN_DEB_SECURITY
#   (http://deb.debian.org/debian-security) are where they come from.
#   GN_DEB_KEEP=1 keeps the scratch folder, the root in it, to look at.
# Needs root and dpkg-dev, debhelper, dh-dkms, dh-python,
# pybuild-plugin-pyproject, python3-build, lintian and debootstrap (tools/run.sh
# installs them); without one it fails.

set -u

src=$(cd "$1" && pwd)
ref_rank=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
cache=${GN_DEB_CACHE:-/var/cache/gradnet-test}
mirror=${GN_DEB_MIRROR:-http://deb.debian.org/debian}
security=${GN_DEB_SECURITY:-http://deb.debian.org/debian-security}
suite=bookworm
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gradnet-deb.XXXXXX")
root=$tmp/root
: >"$tmp/problems"
n=0
failed=0

cleanup() {
	# The root's mounts live in namespaces that are gone by now.
	if [ -n "${GN_DEB_KEEP:-}" ]; then
		echo "# kept $tmp (GN_DEB_KEEP)"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
fail() {
	n=$((n + 1)); failed=$((failed + 1))
	echo "not ok $n - $1"
	[ -s "$tmp/out" ] && sed 's/^/# /' "$tmp/out" | tail -n 60
}
check() {
	local desc=$1

	shift
	if "$@" >"$tmp/out" 2>&1; then ok "$desc"; else fail "$desc"; fi
}
# verdict DESCRIPTION: ok when nothing was written to $tmp/problems.
verdict() {
	if [ -s "$tmp/problems" ]; then
		cp "$tmp/problems" "$tmp/out"
		fail "$1"
	else
		ok "$1"
	fi
	: >"$tmp/problems"
}
bail() {
	fail "$1"
	echo "1..$n"
	exit 1
}
since() { echo "# $1: $(($(date +%s) - $2)) s"; }

echo "TAP version 13"
[ "$(id -u)" -eq 0 ] || bail "deb_test.sh needs root (debootstrap, chroot, namespaces)"
for t in dpkg-buildpackage dh dh_dkms dh_python3 lintian debootstrap unshare; do
	command -v "$t" >/dev/null || bail "$t is missing (tools/run.sh installs it)"
done
dpkg-query -W -f='${Status}' pybuild-plugin-pyproject 2>/dev/null | grep -q 'ok installed' ||
	bail "pybuild-plugin-pyproject is missing (tools/run.sh installs it)"

# ---- build ---------------------------------------------------------------
version=$(sed -n "s/^  version: '\([^']*\)',\$/\1/p" "$src/meson.build")
deb_version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
check "debian/changelog ($deb_version) is meson.build's version ($version)" \
	test "${deb_version%-*}" = "$version"

# A copy of what git tracks (and what is new and not ignored): the build
# writes debian/ and obj-*/ and must not see a build directory.
tree=$tmp/gradnet-$version
mkdir -p "$tree"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$src" ls-files -z -c -o --exclude-standard |
		(cd "$src" && cpio -0pdm --quiet "$tree")
else
	tar -C "$src" --exclude='./build*' --exclude='./obj-*' -cf - . | tar -C "$tree" -xf -
fi
t0=$(date +%s)
# A clean environment, as a build daemon's: Debian's python3 and nothing
# of this machine's PATH, compilers or CUDA. Symbols at check level 4: a
# symbol debian/libgradnet0.symbols does not cover fails the build.
if ! (cd "$tree" && env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$tmp" \
	LANG=C.UTF-8 DEB_BUILD_OPTIONS=parallel=2 DPKG_GENSYMBOLS_CHECK_LEVEL=4 \
	nice -n 10 dpkg-buildpackage -b -uc -us) >"$tmp/out" 2>&1; then
	bail "dpkg-buildpackage -b -uc -us"
fi
since "dpkg-buildpackage" "$t0"
grep -E 'warning: ' "$tmp/out" | sed 's/^/# build: /'
packages=$(sed -n 's/^Package: //p' "$tree/debian/control")
for p in $packages; do
	ls "$tmp/${p}_"*.deb >/dev/null 2>&1 || echo "no $p" >>"$tmp/problems"
done
verdict "dpkg-buildpackage -b -uc -us: $(echo "$packages" | wc -w) packages (${packages//$'\n'/ })"
changes=$(ls "$tmp"/gradnet_*.changes)

lintian --allow-root --fail-on error --display-info "$changes" >"$tmp/lintian" 2>&1
lrc=$?
sed 's/^/# lintian: /' "$tmp/lintian"
check "lintian: no error on $(basename "$changes")" test "$lrc" -eq 0

# The packages' files, one list each (man pages compressed by dh).
for p in $packages; do
	dpkg-deb -c "$tmp/${p}_"*.deb | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }' \
		>"$tmp/files.$p"
done
# Every file meson installs is in exactly one package; meson's copy of
# the Python package is pybuild's in python3-gradnet.
meson introspect "$tree/obj-x86_64-linux-gnu" --installed |
	python3 -c 'import json, sys; print("\n".join(json.load(sys.stdin).values()))' |
	sed -e 's|^\(/usr/share/man/.*\)$|\1.gz|' \
		-e 's|/python3\.[0-9]*/dist-packages/|/python3/dist-packages/|' \
		>"$tmp/meson-files"
while read -r f; do
	# A directory meson installs whole (install_subdir): its files.
	k=0
	for p in $packages; do
		if grep -qxF "$f" "$tmp/files.$p" || grep -qF "$f/" "$tmp/files.$p"; then
			k=$((k + 1))
		fi
	done
	[ "$k" -eq 1 ] || echo "$f is in $k packages" >>"$tmp/problems"
done <"$tmp/meson-files"
verdict "each of the $(wc -l <"$tmp/meson-files") files and folders meson installs is in exactly one package"

# Man pages by section: whatever meson installs, none listed in debian/.
pages=0
for p in $packages; do
	while read -r f; do
		pages=$((pages + 1))
		case $f in
		/usr/share/man/man3/*) want=libgradnet-dev ;;
		/usr/share/man/man4/*) want=gradnet-dkms ;;
		*) want=gradnet-tools ;;
		esac
		[ "$p" = "$want" ] || echo "$f is in $p, not $want" >>"$tmp/problems"
	done < <(grep '^/usr/share/man/' "$tmp/files.$p")
done
verdict "man pages by section: functions in libgradnet-dev, the module's in gradnet-dkms, the rest in gradnet-tools ($pages pages)"

grep -qxF "/usr/lib/x86_64-linux-gnu/libgradnet.so.$version" "$tmp/files.libgradnet0" ||
	echo "libgradnet0 lacks libgradnet.so.$version" >>"$tmp/problems"
dpkg-deb -I "$tmp"/libgradnet0_*.deb symbols >"$tmp/symbols" 2>&1 &&
	sed -n 's/^[[:space:]]*\(gn_[a-z0-9_]*\)@GRADNET_0[.0-9]* .*/\1/p' "$tmp/symbols" | sort >"$tmp/syms" &&
	sed -n 's/^GN_EXPORT .*[ *]\(gn_[a-z0-9_]*\)(.*/\1/p' "$src/include/gradnet/gradnet.h" |
		sort -u | diff - "$tmp/syms" >>"$tmp/problems" ||
	echo "the symbols file does not list gradnet.h's functions" >>"$tmp/problems"
for f in /usr/include/gradnet/gradnet.h /usr/lib/x86_64-linux-gnu/libgradnet.a \
	/usr/lib/x86_64-linux-gnu/libgradnet.so /usr/lib/x86_64-linux-gnu/pkgconfig/gradnet.pc; do
	grep -qxF "$f" "$tmp/files.libgradnet-dev" || echo "libgradnet-dev lacks $f" >>"$tmp/problems"
done
verdict "libgradnet0 holds the library and a symbols file of gradnet.h's functions; libgradnet-dev the header, .pc, .a and .so"

# gradnet-dkms holds what packaging/dkms/install.sh puts in /usr/src.
"$src/packaging/dkms/install.sh" --sources "$tmp/dkms-src" >"$tmp/out" 2>&1
dpkg-deb -x "$tmp"/gradnet-dkms_*.deb "$tmp/dkms-deb"
check "gradnet-dkms's /usr/src/gradnet-$version is install.sh --sources's, dkms.conf included" \
	diff -r "$tmp/dkms-src" "$tmp/dkms-deb/usr/src/gradnet-$version"

# The wheel the venv in the root installs, from the copy's python/.
check "pip wheel --no-build-isolation python/" \
	env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 \
		/usr/bin/python3 -m pip wheel -q --no-build-isolation --no-deps \
		-w "$tmp/wheel" "$tree/python"

# The reference result: the build tree's gradnet-rank, same job.
od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$tmp/key"
chmod 600 "$tmp/key"
rank_job() {	# rank_job GRADNET_RANK OUTDIR: 2 ranks, 3LC, 3 steps
	local r pids=()

	for r in 0 1; do
		env GN_RANK=$r GN_WORLD_SIZE=2 GN_KEY_FILE="$KEY" GN_JOB=7 \
			GN_PEERS=127.0.0.1:29301,127.0.0.1:29302 \
			"$1" --elems 262144 --steps 3 --codec 3lc >"$2/rank$r.json" &
		pids+=($!)
	done
	wait "${pids[0]}" && wait "${pids[1]}"
}
export -f rank_job
check "the build tree's gradnet-rank: a 2-rank job (the reference)" \
	env KEY="$tmp/key" unshare -n bash -c \
		"ip link set lo up && rank_job '$ref_rank' '$tmp'"
ref_hash=$(sed -n 's/.*"hash": "\([0-9a-f]*\)".*/\1/p' "$tmp/rank0.json")

# ---- a fresh root ----------------------------------------------------------
mkdir -p "$cache/apt"
tarball=$cache/$suite-minbase.tgz
find "$tarball" -mtime +30 -delete 2>/dev/null
t0=$(date +%s)
if [ ! -s "$tarball" ]; then
	if ! debootstrap --variant=minbase --make-tarball="$tarball.new" "$suite" \
		"$tmp/dl" "$mirror" >"$tmp/out" 2>&1; then
		rm -f "$tarball.new"
		bail "debootstrap --make-tarball from $mirror (network access to the mirror)"
	fi
	mv "$tarball.new" "$tarball"
	since "debootstrap --make-tarball ($(du -m "$tarball" | cut -f1) MB, $tarball)" "$t0"
fi
t0=$(date +%s)
debootstrap --variant=minbase --unpack-tarball="$tarball" "$suite" "$root" "$mirror" \
	>"$tmp/out" 2>&1 || bail "debootstrap --unpack-tarball $tarball"
since "debootstrap from the tarball" "$t0"
check "the fresh root has no source tree ($src)" test ! -e "$root$src"

cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/tmp/debs"
for p in $packages; do
	cp "$tmp/${p}_"*.deb "$root/tmp/debs/"
done
cp "$tmp/wheel/"*.whl "$tmp/key" "$root/tmp/"
# What the root installs besides the packages: the kernel headers DKMS
# builds against, venv, man, and pkg-config and gcc for a trainer. Then
# trim the cache.
cat >"$root/tmp/install.sh" <<'EOF'
set -e
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends /tmp/debs/*.deb \
	linux-headers-amd64 python3-venv man-db pkgconf gcc
apt-get autoclean -q
EOF
t0=$(date +%s)
check "apt-get install of the packages into the fresh root (gradnet-dkms builds the module)" \
	unshare -m bash -c "mount -t proc proc '$root/proc' &&
		mount --bind '$cache/apt' '$root/var/cache/apt/archives' &&
		chroot '$root' bash /tmp/install.sh"
since "apt-get install" "$t0"
grep -E '^(Building for|Building initial module|Installing to|dkms\.|Error)' "$tmp/out" |
	sed 's/^/# dkms: /'

# ---- the checks, chrooted, in a network namespace ---------------------------
cat >"$root/tmp/checks.sh" <<'EOF'
# Prints PASS or FAIL lines, with the failure's output as comments.
set -u
version=$1 ref_hash=$2 src=$3 build=$4
t=/tmp/check
pass() { echo "PASS $1"; }
check() {
	local desc=$1

	shift
	if "$@" >$t.out 2>&1; then
		echo "PASS $desc"
	else
		echo "FAIL $desc"
		sed 's/^/# /' $t.out | tail -n 40
	fi
}
mkdir -p $t
cd /

check "the chroot holds neither the source tree ($src) nor the build tree ($build)" \
	sh -c "test ! -e '$src' && test ! -e '$build'"
for tool in gradnet-bench gradnet-codec gradnet-rank gradnet-stat gradnet-demo; do
	check "$tool runs and prints its usage" \
		sh -c "$tool --help 2>&1 | grep -q '^usage: $tool'"
done
check "gradnet-demo, without scikit-learn's digits, names python3-sklearn" \
	sh -c "! gradnet-demo --ranks 2 >$t/demo 2>&1 && grep -q python3-sklearn $t/demo"
check "gradnet-codec isa names this CPU's instruction sets" \
	sh -c "gradnet-codec isa | grep -qw scalar"

# The codec on an installed gradient sample, and back.
sample=$(awk -F'\t' 'NR > 1 && $4 > 10000 { print $4, $5; exit }' \
	/usr/share/gradnet/gradients/mlp-small-seq/manifest.tsv)
elems=${sample% *}
file=/usr/share/gradnet/gradients/mlp-small-seq/${sample#* }
check "gradnet-codec: an installed gradient sample ($elems values) encodes and decodes" \
	sh -c "gradnet-codec encode -s 1.0 '$file' $t/s.3lc &&
		gradnet-codec decode -n $elems $t/s.3lc $t/s.f32 &&
		test \$(stat -c %s $t/s.f32) -eq \$((4 * $elems)) &&
		test \$(stat -c %s $t/s.3lc) -lt \$((4 * $elems / 8))"

# The job the build tree ran, with the installed gradnet-rank.
job() {
	local r pids=()

	for r in 0 1; do
		env GN_RANK=$r GN_WORLD_SIZE=2 GN_KEY_FILE=/tmp/key GN_JOB=7 \
			GN_PEERS=127.0.0.1:29301,127.0.0.1:29302 \
			gradnet-rank --elems 262144 --steps 3 --codec 3lc >$t/rank$r.json &
		pids+=($!)
	done
	wait "${pids[0]}" && wait "${pids[1]}" || return 1
	grep -h '"hash"' $t/rank0.json $t/rank1.json
	for r in 0 1; do
		grep -q "\"hash\": \"$ref_hash\"" $t/rank$r.json || return 1
	done
}
check "gradnet-rank: a 2-rank 3LC job over loopback, both ranks' result the build tree's ($ref_hash)" job

# Python: the package from dist-packages, the library through ldconfig.
cat >$t/ranks.py <<'PY'
import array, json, sys
import gradnet
r = int(sys.argv[1])
with gradnet.Context(rank=r, world_size=2, job_id=11,
                     peers="127.0.0.1:29311,127.0.0.1:29312") as c:
    c.register(1, 1000, codec="none", average=True)
    x = array.array("f", [float(r + i) for i in range(1000)])
    c.allreduce(1, x)
    assert list(x) == [i + 0.5 for i in range(1000)], list(x)[:4]
    st = c.stats()
lib = [l.split()[-1] for l in open("/proc/self/maps") if "libgradnet" in l][0]
print(json.dumps({"rank": r, "raw_bytes": st["raw_bytes"],
                  "package": gradnet.__file__, "lib": lib}))
PY
libso=/usr/lib/x86_64-linux-gnu/libgradnet.so.$version
pyjob() {
	local py=$1 r pids=()

	for r in 0 1; do
		GN_KEY_FILE=/tmp/key $py $t/ranks.py $r >$t/py$r.json &
		pids+=($!)
	done
	wait "${pids[0]}" && wait "${pids[1]}" || return 1
	cat $t/py0.json $t/py1.json
	grep -q "\"package\": \"$2/gradnet/__init__.py\"" $t/py0.json &&
		grep -q "\"lib\": \"$libso\"" $t/py0.json
}

# gradnet-stat on the installed library's probes (a bpffs of this mount
# namespace's own), while the Python ranks run on it.
stat_job() {
	export GN_STAT_PIN_DIR=/sys/fs/bpf/gradnet
	gradnet-stat attach --lib /usr/lib/x86_64-linux-gnu/libgradnet.so.0 || return 1
	pyjob python3 /usr/lib/python3/dist-packages || { gradnet-stat detach; return 1; }
	gradnet-stat dump --json >$t/dump.json
	gradnet-stat detach || return 1
	python3 -c '
import json, sys
flows = [f for f in json.load(open(sys.argv[1]))["flows"] if f["job"] == 11]
for path in sys.argv[2:]:
    st = json.load(open(path))
    sent = sum(f["raw_bytes"] for f in flows if f["src"] == st["rank"])
    print("rank", st["rank"], "map", sent, "library", st["raw_bytes"])
    assert sent == st["raw_bytes"] > 0
' $t/dump.json $t/py0.json $t/py1.json
}
check "python3: a 2-rank job, gradnet from dist-packages on $libso (ldconfig); gradnet-stat's maps count its raw bytes" stat_job

check "venv: the wheel installs, and gradnet imports from the venv on the installed library" \
	sh -c "python3 -m venv /opt/venv &&
		/opt/venv/bin/pip install -q --no-index /tmp/gradnet-$version-py3-none-any.whl"
check "venv: a 2-rank job from the venv's interpreter and package" \
	pyjob /opt/venv/bin/python /opt/venv/lib/python3.11/site-packages

# A trainer built against libgradnet-dev alone.
cat >$t/trainer.c <<'C'
#include <stdio.h>
#include <gradnet/gradnet.h>

int main(void)
{
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:29321",
		.flags = GN_CTX_INSECURE);
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = 4, .codec = GN_CODEC_NONE);
	float x[4] = { 1, 2, 3, 4 };
	struct gn_ctx *ctx;

	if (gn_version_number() != GN_VERSION_NUMBER || gn_ctx_open(&o, &ctx))
		return 1;
	if (gn_tensor_register(ctx, &t) || gn_allreduce(ctx, 1, x) || x[3] != 4)
		return 1;
	gn_ctx_close(ctx);
	printf("gradnet %s\n", gn_version());
	return 0;
}
C
check "a C trainer builds with pkg-config gradnet and runs on libgradnet.so.0" \
	sh -c "gcc -Wall -Werror $t/trainer.c \$(pkg-config --cflags --libs gradnet) -o $t/trainer &&
		$t/trainer | grep -qx 'gradnet $version' &&
		ldd $t/trainer | grep 'libgradnet.so.0 => /'"

# Man pages: each installed page is found by man.
pages=$(find /usr/share/man -name '*.gz' -path '*gradnet*' -o -name 'gn_*.gz' | sort)
manok() {
	local p name sec

	for p in $pages; do
		name=$(basename "$p" .gz)
		sec=${name##*.}
		man -w "$sec" "${name%.*}" || return 1
	done
}
check "man -w finds each of the $(echo $pages | wc -w) installed man pages" manok

# DKMS: the module, built at install for the root's kernel headers.
kver=$(ls /usr/src | sed -n 's/^linux-headers-\(.*-amd64\)$/\1/p' | head -n 1)
check "dkms status: gradnet/$version installed for $kver" \
	sh -c "dkms status gradnet/$version | grep -q '$kver.*: installed'"
check "modinfo: the installed gradnet.ko is for $kver, with its parameters" \
	sh -c "ko=\$(find /lib/modules/$kver -name 'gradnet.ko*' | head -n 1) &&
		modinfo -F vermagic \$ko | grep -q '^$kver ' && modinfo -F parm \$ko | grep -q ."
check "apt-get purge gradnet-dkms removes the module and its sources" \
	sh -c "DEBIAN_FRONTEND=noninteractive apt-get purge -y -q gradnet-dkms &&
		! find /lib/modules -name 'gradnet.ko*' | grep . &&
		test ! -e /usr/src/gradnet-$version && ! dkms status gradnet | grep ."
EOF
t0=$(date +%s)
unshare -m -n bash -c "ip link set lo up &&
	mount -t proc proc '$root/proc' && mount -t sysfs sysfs '$root/sys' &&
	mount -t bpf bpf '$root/sys/fs/bpf' &&
	chroot '$root' bash /tmp/checks.sh '$version' '$ref_hash' '$src' '$(dirname "$ref_rank")'" \
	>"$tmp/checks" 2>&1
since "the checks in the root" "$t0"
while IFS= read -r line; do
	case $line in
	"PASS "*) n=$((n + 1)); echo "ok $n - root: ${line#PASS }" ;;
	"FAIL "*) n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - root: ${line#FAIL }" ;;
	*) echo "# $line" ;;
	esac
done <"$tmp/checks"

echo "1..$n"
[ "$failed" -eq 0 ]
