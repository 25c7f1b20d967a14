/* col2im of the convolution data gradient (part of the `_parallel` extension, for
 * col2im_cpu.py): the window sums of a (C, kh, kw, OH, OW, N) column gradient, written as the
 * (N, C, H, W) input gradient.
 *
 * NumPy's twin (functional/_conv_kernels.py, _BatchInner.col2im) adds each kernel offset's
 * block into a zeroed padded (C, Hp, Wp, N) buffer through a strided view, one pass per offset,
 * then crops it and transposes it to NCHW. Here each input row (c, h) gathers its sums while
 * they stay in cache: for each kernel offset (i, j) in the same order, every output position
 * that reads the row adds its N-long run, so each element is the same sum in the same order
 * as the twin's, bit for bit. The row is then written transposed into NCHW. The pool's workers
 * split the rows.
 */
#include "_parallel.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *cols;
    char *out;
    Py_ssize_t n, c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
    int itemsize;
    int failed[MG_MAX_PARTS];
} col2im_job;

#define GATHER(T)                                                                              \
    static void gather_##T(const col2im_job *g, Py_ssize_t r0, Py_ssize_t r1, T *tile) {       \
        const T *cols = (const T *)g->cols;                                                    \
        T *out = (T *)g->out;                                                                  \
        const Py_ssize_t n = g->n;                                                             \
        for (Py_ssize_t r = r0; r < r1; r++) {                                                 \
            const Py_ssize_t ch = r / g->h, row = r % g->h;                                    \
            memset(tile, 0, sizeof(T) * g->w * n);                                             \
            for (Py_ssize_t i = 0; i < g->kh; i++) {                                           \
                const Py_ssize_t t = row + g->ph - i * g->dh;                                  \
                if (t < 0 || t % g->sh || t / g->sh >= g->oh)                                  \
                    continue;                                                                  \
                for (Py_ssize_t j = 0; j < g->kw; j++) {                                       \
                    const T *src = cols + (((ch * g->kh + i) * g->kw + j) * g->oh + t / g->sh) \
                                              * g->ow * n;                                     \
                    for (Py_ssize_t x = 0; x < g->w; x++) {                                    \
                        const Py_ssize_t u = x + g->pw - j * g->dw;                            \
                        if (u < 0 || u % g->sw || u / g->sw >= g->ow)                          \
                            continue;                                                          \
                        const T *s = src + (u / g->sw) * n;                                    \
                        T *acc = tile + x * n;                                                 \
                        for (Py_ssize_t b = 0; b < n; b++)                                     \
                            acc[b] += s[b];                                                    \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
            for (Py_ssize_t b = 0; b < n; b++) { /* the row, transposed into NCHW */           \
                T *dst = out + ((b * g->c + ch) * g->h + row) * g->w;                          \
                for (Py_ssize_t x = 0; x < g->w; x++)                                          \
                    dst[x] = tile[x * n + b];                                                  \
            }                                                                                  \
        }                                                                                      \
    }

GATHER(float)
GATHER(double)

static void col2im_part(void *ctx, int part, int parts) {
    col2im_job *g = ctx;
    const Py_ssize_t rows = g->c * g->h;
    const Py_ssize_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts;
    if (r0 == r1)
        return;
    void *tile = malloc((size_t)g->itemsize * g->w * g->n);
    if (!tile) {
        g->failed[part] = 1;
        return;
    }
    if (g->itemsize == 4)
        gather_float(g, r0, r1, tile);
    else
        gather_double(g, r0, r1, tile);
    free(tile);
}

PyObject *mg_py_col2im(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *co, *oo;
    col2im_job g = {0};
    int threads;
    if (!PyArg_ParseTuple(args, "OO(nnnnnnnnnnnnnn)i", &co, &oo, &g.n, &g.c, &g.h, &g.w, &g.kh,
                          &g.kw, &g.oh, &g.ow, &g.sh, &g.sw, &g.ph, &g.pw, &g.dh, &g.dw, &threads))
        return NULL;
    Py_buffer cv, ov;
    if (PyObject_GetBuffer(co, &cv, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(oo, &ov, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&cv);
        return NULL;
    }
    int rc = -1;
    const Py_ssize_t item = cv.itemsize;
    if ((item != 4 && item != 8) || ov.itemsize != item || g.sh < 1 || g.sw < 1 || g.n < 0
        || g.c < 0 || g.h < 0 || g.w < 0 || g.kh < 0 || g.kw < 0 || g.oh < 0 || g.ow < 0) {
        PyErr_SetString(PyExc_ValueError, "col2im: float32/float64 arrays and a valid geometry");
    } else if (cv.len != item * g.c * g.kh * g.kw * g.oh * g.ow * g.n
               || ov.len != item * g.n * g.c * g.h * g.w) {
        PyErr_SetString(PyExc_ValueError, "col2im: array sizes do not match the geometry");
    } else {
        g.cols = cv.buf;
        g.out = ov.buf;
        g.itemsize = (int)item;
        if (g.c * g.h < threads)
            threads = (int)(g.c * g.h);
        Py_BEGIN_ALLOW_THREADS
        mg_parallel(col2im_part, &g, threads);
        Py_END_ALLOW_THREADS
        rc = 0;
        for (int p = 0; p < MG_MAX_PARTS; p++)
            if (g.failed[p])
                rc = -1;
        if (rc < 0)
            PyErr_NoMemory();
    }
    PyBuffer_Release(&cv);
    PyBuffer_Release(&ov);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}
