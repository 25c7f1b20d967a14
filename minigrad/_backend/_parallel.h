/* Shared by the sources of the `_parallel` extension (setup.py): _parallel.c (the worker pool
 * and the module), _bf16_gemm.c (bfloat16 GEMM), _col2im.c (convolution data gradient),
 * _pool.c (max pooling).
 * Optional, like minigrad's other C extensions: without it minigrad runs NumPy twins. */
#ifndef MINIGRAD_PARALLEL_H
#define MINIGRAD_PARALLEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MINIGRAD_X86 1  /* the kernels use x86 vector instructions and POSIX threads */
#endif

#define MG_MAX_PARTS 8

/* One part of a job: `part` of `parts`. */
typedef void (*mg_part_fn)(void *ctx, int part, int parts);

/* Runs fn(ctx, p, parts) for every p in [0, parts) (parts clamped to 1..MG_MAX_PARTS): part 0 on
 * the calling thread, the others on the pool's workers, and returns when all are done. Call it
 * with the GIL released. While another thread uses the pool, every part runs on the caller. */
void mg_parallel(mg_part_fn fn, void *ctx, int parts);

/* Whether the CPU and the OS run AVX512_BF16 (set at import). */
extern int mg_cpu_bf16;

PyObject *mg_py_bf16_gemm(PyObject *self, PyObject *args);
PyObject *mg_py_col2im(PyObject *self, PyObject *args);
PyObject *mg_py_pool_scan(PyObject *self, PyObject *args);
PyObject *mg_py_pool_scatter(PyObject *self, PyObject *args);
void mg_detect_bf16(void);

#endif
