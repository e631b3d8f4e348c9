#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench_binding.py - what a call into libgradnet costs from Python, by binding.

Times, on a one-rank job (no network), gn_allreduce() of a 64 KiB and a
100 MiB float32 tensor from C (a loop inside a C extension: the floor),
through ctypes, through cffi (ABI mode) and through a C extension, and a
call that fails at once (an unknown tensor id) to show the bare cost of the
crossing. Prints microseconds per call and the command.

usage: GRADNET_LIB=build/lib/libgradnet.so.0 python3 python/bench_binding.py
"""
import ctypes
import os
import subprocess
import sys
import sysconfig
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import gradnet  # noqa: E402
from gradnet import _lib  # noqa: E402

EXT = r'''
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <time.h>
int gn_allreduce(void *ctx, uint32_t id, float *data);

static PyObject *call(PyObject *self, PyObject *args)
{
	unsigned long long ctx, data;
	unsigned int id;
	int r;

	if (!PyArg_ParseTuple(args, "KIK", &ctx, &id, &data))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	r = gn_allreduce((void *)(uintptr_t)ctx, id, (float *)(uintptr_t)data);
	Py_END_ALLOW_THREADS
	return PyLong_FromLong(r);
}

/* The floor: n calls from C, seconds per call. */
static PyObject *loop(PyObject *self, PyObject *args)
{
	unsigned long long ctx, data;
	unsigned int id;
	struct timespec a, b;
	int n, i;

	if (!PyArg_ParseTuple(args, "KIKi", &ctx, &id, &data, &n))
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++)
		gn_allreduce((void *)(uintptr_t)ctx, id, (float *)(uintptr_t)data);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return PyFloat_FromDouble(((double)(b.tv_sec - a.tv_sec) +
				   (double)(b.tv_nsec - a.tv_nsec) * 1e-9) / n);
}

static PyMethodDef methods[] = {
	{ "call", call, METH_VARARGS, NULL },
	{ "loop", loop, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};
static struct PyModuleDef mod = { PyModuleDef_HEAD_INIT, "gnbench", NULL, -1, methods };
PyMODINIT_FUNC PyInit_gnbench(void) { return PyModule_Create(&mod); }
'''


def build_ext(libpath):
    d = tempfile.mkdtemp()
    src = os.path.join(d, "gnbench.c")
    with open(src, "w") as f:
        f.write(EXT)
    so = os.path.join(d, "gnbench" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.check_call(["cc", "-O2", "-shared", "-fPIC",
                           "-I" + sysconfig.get_paths()["include"], src,
                           libpath, "-o", so])
    sys.path.insert(0, d)
    import gnbench
    return gnbench


def per_call(fn, n):
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def main():
    libpath = _lib.lib._name
    import cffi
    ffi = cffi.FFI()
    ffi.cdef("int gn_allreduce(void *ctx, uint32_t id, float *data);")
    cl = ffi.dlopen(libpath)
    ext = build_ext(os.path.realpath(libpath))
    ctx = gradnet.Context(world_size=1, peers="127.0.0.1:%d" % (29000 + os.getpid() % 1000),
                          insecure=True)
    h = ctx._h
    print("command: GRADNET_LIB=%s python3 %s" % (libpath, " ".join(sys.argv)))
    print("%-10s %-22s %10s %10s %10s %10s %10s" %
          ("bucket", "call", "C floor", "ctypes", "cffi", "C ext", "Context"))
    cases = [("64 KiB", 16384, 2000), ("100 MiB", 26214400, 8)]
    for name, n, reps in cases:
        x = np.ones(n, dtype=np.float32)
        addr = x.ctypes.data
        ctx.register(1, n, codec="none")
        for label, tid in (("allreduce (dense)", 1), ("unknown id (-ENOENT)", 7)):
            r = reps if tid == 1 else 20000
            floor = ext.loop(h, tid, addr, r)
            t_ct = per_call(lambda: _lib.lib.gn_allreduce(h, tid, addr), r)
            p = ffi.cast("float *", addr)
            cp = ffi.cast("void *", h)
            t_cf = per_call(lambda: cl.gn_allreduce(cp, tid, p), r)
            t_ex = per_call(lambda: ext.call(h, tid, addr), r)

            def method():
                try:
                    ctx.allreduce(tid, x)
                except gradnet.GradnetError:
                    pass
            t_me = per_call(method, r)
            print("%-10s %-22s %10.2f %10.2f %10.2f %10.2f %10.2f" %
                  (name, label, floor * 1e6, t_ct * 1e6, t_cf * 1e6,
                   t_ex * 1e6, t_me * 1e6))
        ctx.unregister(1)
    print("microseconds per call; 'Context' is gradnet.Context.allreduce() "
          "(ctypes plus argument checks) on a numpy array")
    ctx.close()


if __name__ == "__main__":
    main()
