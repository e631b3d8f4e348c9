# SPDX-License-Identifier: MIT
"""_lib.py - load libgradnet.so and declare the functions of gradnet.h.

ctypes, not cffi or a C extension: python/bench_binding.py measured the
per-call cost of each (python/README.md) and on 64 KiB and 100 MiB buckets
all three are noise next to the allreduce itself. ctypes ships with Python,
needs no compiler at install time, and drops the GIL around every foreign
call, which is what lets gn_allreduce_wait() run beside the backward pass.
"""
import ctypes
import ctypes.util
import os
import platform
import sys
import sysconfig

GN_CODEC_DEFAULT = 0
GN_CODEC_NONE = 1
GN_CODEC_3LC = 2

GN_CTX_INSECURE = 1 << 0
GN_CTX_RANK = 1 << 1
GN_TENSOR_AVERAGE = 1 << 0
GN_BUCKET_SHARED_SCALE = 1 << 8

GN_DROP_MAX = 32


class CtxOpts(ctypes.Structure):
    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("rank", ctypes.c_int),
        ("world_size", ctypes.c_int),
        ("peers", ctypes.c_char_p),
        ("key", ctypes.POINTER(ctypes.c_uint8)),
        ("key_len", ctypes.c_size_t),
        ("job_id", ctypes.c_uint64),
        ("mtu", ctypes.c_uint),
        ("timeout_ms", ctypes.c_uint),
        ("flags", ctypes.c_uint),
        ("codec", ctypes.c_int),
        ("s", ctypes.c_float),
        ("chunk", ctypes.c_uint),
        ("step_timeout_ms", ctypes.c_uint),
        ("transport", ctypes.c_char_p),
        ("codec_workers", ctypes.c_uint),
        ("dpdk_eal", ctypes.c_char_p),
        ("dpdk_port", ctypes.c_uint),
        ("dpdk_queue", ctypes.c_uint),
        ("codec_params", ctypes.c_char_p),
        ("bind_addr", ctypes.c_char_p),
    ]


class TensorOpts(ctypes.Structure):
    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("id", ctypes.c_uint32),
        ("elems", ctypes.c_size_t),
        ("codec", ctypes.c_int),
        ("s", ctypes.c_float),
        ("flags", ctypes.c_uint),
        ("params", ctypes.c_char_p),
    ]


class BucketOpts(ctypes.Structure):
    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("id", ctypes.c_uint32),
        ("members", ctypes.c_uint),
        ("elems", ctypes.POINTER(ctypes.c_size_t)),
        ("codec", ctypes.c_int),
        ("s", ctypes.c_float),
        ("flags", ctypes.c_uint),
        ("params", ctypes.c_char_p),
    ]


STAT_FIELDS = ("tx_packets", "rx_packets", "raw_bytes", "wire_bytes",
               "rx_wire_bytes", "retransmits", "allreduces", "ctl_packets",
               "ctl_bytes", "messages", "stream_bytes")


class Stats(ctypes.Structure):
    _fields_ = ([("sz", ctypes.c_size_t)] +
                [(f, ctypes.c_uint64) for f in STAT_FIELDS] +
                [("drops", ctypes.c_uint64 * GN_DROP_MAX)])


def _candidates():
    """Where libgradnet.so.0 is looked for, in order: GRADNET_LIB alone if
    set; the source tree's build/; the dynamic linker's search (by name,
    then ctypes.util.find_library, which asks ldconfig); last, the
    environment's own prefix (a venv's or conda's sys.prefix/lib, where
    `meson setup --prefix="$CONDA_PREFIX"` installs it), which the linker
    does not search."""
    env = os.environ.get("GRADNET_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    names = [os.path.join(here, "..", "..", "build", "lib", "libgradnet.so.0"),
             "libgradnet.so.0"]
    found = ctypes.util.find_library("gradnet")
    if found:
        names.append(found)
    multiarch = sysconfig.get_config_var("MULTIARCH") or \
        "%s-linux-gnu" % platform.machine()
    for libdir in (os.path.join("lib", multiarch), "lib"):
        names.append(os.path.join(sys.prefix, libdir, "libgradnet.so.0"))
    return names


def _load():
    errors = []
    for name in _candidates():
        if os.sep in name and not os.path.exists(name):
            continue
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            errors.append(str(e))
    raise ImportError("gradnet: cannot load libgradnet.so.0 (install "
                      "libgradnet0 or `meson install`, or set GRADNET_LIB "
                      "to its path): " + "; ".join(errors or ["not found"]))


lib = _load()

_ctx_p = ctypes.c_void_p
_c = ctypes
for _name, _res, _args in [
        ("gn_ctx_open", _c.c_int, [_c.POINTER(CtxOpts), _c.POINTER(_ctx_p)]),
        ("gn_ctx_bind", _c.c_int, [_c.POINTER(CtxOpts), _c.POINTER(_ctx_p)]),
        ("gn_ctx_local_addr", _c.c_int, [_ctx_p, _c.c_char_p, _c.c_size_t]),
        ("gn_ctx_join", _c.c_int, [_ctx_p, _c.c_char_p]),
        ("gn_ctx_close", None, [_ctx_p]),
        ("gn_ctx_errmsg", _c.c_char_p, [_ctx_p]),
        ("gn_last_errmsg", _c.c_char_p, []),
        ("gn_strerror", _c.c_char_p, [_c.c_int]),
        ("gn_ctx_rank", _c.c_int, [_ctx_p]),
        ("gn_ctx_world_size", _c.c_int, [_ctx_p]),
        ("gn_tensor_register", _c.c_int, [_ctx_p, _c.POINTER(TensorOpts)]),
        ("gn_tensor_unregister", _c.c_int, [_ctx_p, _c.c_uint32]),
        ("gn_bucket_register", _c.c_int, [_ctx_p, _c.POINTER(BucketOpts)]),
        ("gn_allreduce_start", _c.c_int, [_ctx_p, _c.c_uint32, _c.c_void_p]),
        ("gn_allreduce_wait", _c.c_int, [_ctx_p, _c.c_uint32]),
        ("gn_allreduce", _c.c_int, [_ctx_p, _c.c_uint32, _c.c_void_p]),
        ("gn_stats_ctx", _c.c_int, [_ctx_p, _c.POINTER(Stats)]),
        ("gn_stats_peer", _c.c_int, [_ctx_p, _c.c_int, _c.POINTER(Stats)]),
        ("gn_stats_tensor", _c.c_int, [_ctx_p, _c.c_uint32, _c.POINTER(Stats)]),
        ("gn_drop_name", _c.c_char_p, [_c.c_int]),
        ("gn_version", _c.c_char_p, []),
        ("gn_codec_id", _c.c_int, [_c.c_char_p]),
        ("gn_codec_name", _c.c_char_p, [_c.c_int]),
        ("gn_version_number", _c.c_uint, [])]:
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args
