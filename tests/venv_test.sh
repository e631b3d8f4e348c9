#!/bin/bash
# SPDX-License-Identifier: MIT
#
# venv_test.sh - the Python package installs from python/pyproject.toml
# into fresh virtual environments, where Debian's dist-packages are not
# seen, and finds libgradnet.so.0 from there: through GRADNET_LIB, the
# dynamic linker (LD_LIBRARY_PATH here; ldconfig in tests/deb_test.sh),
# and the environment's own lib/ (a conda-like prefix).
#
#   plain venv: `pip install --no-build-isolation ./python`, with wheel
#               taken from Debian's python3-wheel-whl (there is no index);
#               the binding allreduces without torch
#   wheel venv: the wheel built from ./python by Debian's python3, and
#               installed with no build backend at all
#   torch venv: --system-site-packages (for Debian's torch) and the wheel;
#               a 2-rank DDP job through gradnet.torch, from the venv
#
# usage: venv_test.sh SOURCE_DIR LIBGRADNET_SO
# Needs python3-venv, python3-pip, python3-setuptools, python3-wheel and
# python3-wheel-whl (tools/run.sh installs them); a missing one fails.

set -u

src=$(cd "$1" && pwd)
so=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gradnet-venv.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

# No index, and nothing from the machine's pip configuration.
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL GRADNET_LIB PYTHONPATH LD_LIBRARY_PATH \
	GN_PEERS GN_RANK GN_WORLD_SIZE GN_KEY GN_KEY_FILE GN_KEY_FD
export PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1

ok() { n=$((n + 1)); echo "ok $n - $1"; }
fail() {
	n=$((n + 1)); failed=$((failed + 1))
	echo "not ok $n - $1"
	[ -f "$tmp/out" ] && sed 's/^/# /' "$tmp/out"
}
# check DESCRIPTION COMMAND...: one TAP line; the output goes to $tmp/out.
check() {
	local desc=$1

	shift
	if "$@" >"$tmp/out" 2>&1; then ok "$desc"; else fail "$desc"; fi
}

# A one-rank dense allreduce through the binding; prints the path of the
# libgradnet it mapped and where the package was imported from.
cat >"$tmp/binding.py" <<'PY'
import array, socket, sys
import gradnet
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
with gradnet.Context(world_size=1, peers="127.0.0.1:%d" % port,
                     insecure=True) as c:
    c.register(1, 4, codec="none")
    x = array.array("f", [1, 2, 3, 4])
    c.allreduce(1, x)
    assert list(x) == [1, 2, 3, 4], list(x)
lib = [l.split()[-1] for l in open("/proc/self/maps") if "libgradnet" in l]
print("package=" + gradnet.__file__)
print("lib=" + lib[0])
print("version=" + gradnet.version())
PY

# binding VENV EXPECTED_LIB [ENV...]: the binding runs in VENV, imported
# from the venv, on EXPECTED_LIB.
binding() {
	local venv=$1 want=$2

	shift 2
	env "$@" "$venv/bin/python" "$tmp/binding.py" || return 1
	grep -q "^package=$venv/lib/python3[^/]*/site-packages/gradnet/" "$tmp/out" &&
		grep -qxF "lib=$(readlink -f "$want")" "$tmp/out"
}

echo "TAP version 13"

version=$(sed -n "s/^  version: '\([^']*\)',\$/\1/p" "$src/meson.build")
pyversion=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$src/python/pyproject.toml")
check "pyproject.toml's version is meson.build's ($version)" \
	test -n "$version" -a "$version" = "$pyversion"

for m in venv pip setuptools wheel; do
	if ! "$py" -c "import $m" 2>/dev/null; then
		echo "not ok $((n + 1)) - $py lacks $m (tools/run.sh installs python3-$m)"
		echo "1..$((n + 1))"
		exit 1
	fi
done
whl_dir=/usr/share/python-wheels
if ! ls "$whl_dir"/wheel-*.whl >/dev/null 2>&1; then
	echo "not ok $((n + 1)) - no $whl_dir/wheel-*.whl (apt-get install python3-wheel-whl)"
	echo "1..$((n + 1))"
	exit 1
fi

# pip builds in the source directory: a copy keeps python/ clean.
cp -R "$src/python" "$tmp/python"
rm -rf "$tmp/python/build" "$tmp/python/"*.egg-info

# The plain venv: setuptools comes with it, wheel from Debian's .whl.
"$py" -m venv "$tmp/plain" >"$tmp/out" 2>&1 &&
	"$tmp/plain/bin/pip" install -q --find-links "$whl_dir" wheel >>"$tmp/out" 2>&1
check "pip install --no-build-isolation ./python in a fresh venv" \
	"$tmp/plain/bin/pip" install --no-build-isolation "$tmp/python"
check "pip show: gradnet $version in the venv" \
	sh -c "'$tmp/plain/bin/pip' show gradnet | grep -qx 'Version: $version'"
check "plain venv: binding on GRADNET_LIB, without torch" \
	binding "$tmp/plain" "$so" GRADNET_LIB="$so"
check "plain venv: torch is not there, and gradnet imports without it" \
	sh -c "! '$tmp/plain/bin/python' -c 'import torch' 2>/dev/null &&
		GRADNET_LIB='$so' '$tmp/plain/bin/python' -c 'import gradnet, sys; assert \"torch\" not in sys.modules'"
check "plain venv: binding on the library the dynamic linker finds" \
	binding "$tmp/plain" "$so" LD_LIBRARY_PATH="$(dirname "$so")"

# A conda-like prefix: the library in the environment's own lib/, which
# the dynamic linker does not search. When the machine has a libgradnet
# of its own (ldconfig), the linker's wins, by _lib.py's order.
system=$(ldconfig -p | sed -n 's/.*libgradnet\.so\.0 .*=> //p' | head -n 1)
cp "$so" "$tmp/plain/lib/libgradnet.so.0"
if [ -n "$system" ]; then
	check "plain venv: the machine's $system comes before the venv's lib/" \
		binding "$tmp/plain" "$(readlink -f "$system")"
else
	check "plain venv: binding on the venv's own lib/libgradnet.so.0" \
		binding "$tmp/plain" "$tmp/plain/lib/libgradnet.so.0"
	rm "$tmp/plain/lib/libgradnet.so.0"
	check "plain venv: no library anywhere is an ImportError naming GRADNET_LIB" \
		sh -c "'$tmp/plain/bin/python' -c 'import gradnet' 2>&1 | grep -q 'ImportError: .*GRADNET_LIB'"
fi

# The wheel, built once with Debian's python3, installs with no backend.
rm -rf "$tmp/python/build" "$tmp/python/"*.egg-info
check "pip wheel --no-build-isolation ./python: a pure-Python wheel" \
	sh -c "'$py' -m pip wheel -q --no-build-isolation --no-deps -w '$tmp/dist' '$tmp/python' &&
		ls '$tmp/dist/gradnet-$version-py3-none-any.whl'"
whl=$tmp/dist/gradnet-$version-py3-none-any.whl
# No pip and no setuptools in it: Debian's pip installs into it.
"$py" -m venv --without-pip "$tmp/wheel" >"$tmp/out" 2>&1
check "the wheel installs into a venv that has no build backend" \
	sh -c "'$py' -m pip --python '$tmp/wheel/bin/python' install '$whl' &&
		! '$tmp/wheel/bin/python' -c 'import setuptools' 2>/dev/null"
check "wheel venv: binding on GRADNET_LIB" \
	binding "$tmp/wheel" "$so" GRADNET_LIB="$so"

# torch from Debian's site-packages; gradnet from the venv's, first.
"$py" -m venv --system-site-packages "$tmp/torch" >"$tmp/out" 2>&1
check "torch venv (--system-site-packages): the wheel installs" \
	"$tmp/torch/bin/pip" install "$whl"
check "torch venv: gradnet.torch and the binding come from the venv" \
	sh -c "GRADNET_LIB='$so' '$tmp/torch/bin/python' -c '
import gradnet.torch, sys
assert gradnet.torch.__file__.startswith(\"$tmp/torch/\"), gradnet.torch.__file__
' && GRADNET_LIB='$so' '$tmp/torch/bin/python' '$tmp/binding.py' >/dev/null"

# Two ranks of a DDP job (tests/python/ddp_worker.py, float16 buckets
# staged by the hook) on the venv's interpreter and package.
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir "$tmp/job"
(umask 077 && head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/job.key")
ddp_job() {
	local r pids=() rc=0

	for r in 0 1; do
		env GRADNET_LIB="$so" GN_KEY_FILE="$tmp/job.key" \
			MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
			WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 RANK=$r LOCAL_RANK=$r \
			OMP_NUM_THREADS=1 timeout 240 "$tmp/torch/bin/python" "$src/tests/python/ddp_worker.py" \
			float16 "$tmp/job" &
		pids+=($!)
	done
	for r in "${pids[@]}"; do
		wait "$r" || rc=1
	done
	[ "$rc" -eq 0 ] && "$tmp/torch/bin/python" -c '
import sys, torch
outs = [torch.load(sys.argv[1] + "/rank%d.pt" % r) for r in (0, 1)]
for o in outs:
    assert o["log"] and all(torch.equal(got, want) for (_, _, got), want
                            in zip(o["log"], o["replay"]))
assert all(torch.equal(a, b) for a, b in zip(outs[0]["params"], outs[1]["params"]))
' "$tmp/job"
}
check "torch venv: a 2-rank DDP job through gradnet.torch, float16 buckets" ddp_job

echo "1..$n"
[ "$failed" -eq 0 ]
