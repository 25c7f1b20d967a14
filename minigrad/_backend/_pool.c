/* Max pooling's two array kernels on the CPU (part of the `_parallel` extension, for
 * pool_cpu.py): the window scan (each window's
 * maximum and its kernel offset) and the gradient scatter (each output gradient to its window's
 * maximum).
 *
 * NumPy runs the scan as one pass over the whole array per kernel offset (a comparison, an index
 * update and a maximum, each its own loop) and the scatter as fancy indexing through a computed
 * int32 index array. Here the scan does every offset of one output row while the row is in L1,
 * in loops the compiler vectorises, and the scatter looks each offset up in a small table.
 *
 * Semantics are PyTorch's CPU loop, which pooling.py's NumPy twin also follows: offsets are
 * visited in C order, a strictly greater element or a NaN takes the window (so the first maximum
 * and the last NaN win), and the output is the input element at that offset, bit for bit.
 * float16/bfloat16 are compared as integer keys that order like the numbers (both zeros equal),
 * with no conversion. The scatter stores (windows that never overlap) or adds in window order
 * (PyTorch's order). The pool's workers (_parallel.c) split the planes. Optional: setup.py builds
 * the extension when a C compiler is there; without it pooling.py runs its NumPy kernels. The GIL
 * is released while working. Arrays come in C-contiguous through the buffer protocol;
 * pool_cpu.py checks sizes and dtypes.
 */
#include "_parallel.h"

#include <stdint.h>
#include <string.h>

/* One pooling geometry over (planes, padded height, padded width) with a 2-D window; 1-D pools
 * come as a height of 1. */
typedef struct {
    Py_ssize_t planes, hp, wp, oh, ow;
    int kh, kw, sh, sw, dh, dw;
} geometry;

/* ---------------------------------------------------------------------------------- scan */
/* Window by window along each output row, the offsets in an inner loop, on the elements' bits
 * (U). Whether a window's maximum moves is data, random for real activations: the selects are
 * bit masks, so that no compiler turns them into branches (a mispredicted branch per element
 * made the scan 6x slower than NumPy's on LeNet's conv1 output). The kernel offsets go to a row
 * of integers as wide as the elements (S) first and are narrowed to int8 after it (int8 stores in
 * the scan loop cost 5x in the same measurement). `shift` holds each kernel offset's position
 * relative to the window's first element.
 *
 * The common windows (2x2 and 3x3, strides 1 and 2, and their 1-D forms) get their own copies
 * with the kernel size and stride known to the compiler: it then unrolls the offsets and
 * vectorises along the row (LeNet's conv1 output, batch 64: 714 -> 145 us; NumPy's passes 250). */
#define ROW_BLOCK 256
#define DEFINE_SCAN(NAME, U, S, TAKES)                                                          \
    static inline __attribute__((always_inline)) void NAME##_rows(                             \
        const U *restrict x, U *restrict best, int8_t *restrict idx, const geometry *g,        \
        const Py_ssize_t *restrict shift, const int kernel, const int sw) {                    \
        const Py_ssize_t planes = g->planes, hp = g->hp, wp = g->wp, oh = g->oh, ow = g->ow;  \
        const int sh = g->sh;                                                                  \
        S offset[ROW_BLOCK];                                                                   \
        for (Py_ssize_t p = 0; p < planes; p++) {                                              \
            for (Py_ssize_t r = 0; r < oh; r++) {                                              \
                const U *row = x + (p * hp + r * sh) * wp;                                     \
                for (Py_ssize_t q0 = 0; q0 < ow; q0 += ROW_BLOCK) {                            \
                    const Py_ssize_t m = ow - q0 < ROW_BLOCK ? ow - q0 : ROW_BLOCK;            \
                    const Py_ssize_t at = (p * oh + r) * ow + q0;                              \
                    for (Py_ssize_t q = 0; q < m; q++) {                                       \
                        const U *w = row + (q0 + q) * sw;                                      \
                        U cur = w[0];                                                          \
                        S k = 0;                                                               \
                        for (S j = 1; j < kernel; j++) {                                       \
                            const U v = w[shift[j]];                                           \
                            const U mask = (U)0 - (U)TAKES(v, cur);                            \
                            cur = (v & mask) | (cur & (U)~mask);                               \
                            k = (S)((j & (S)mask) | (k & (S)~mask));                           \
                        }                                                                      \
                        best[at + q] = cur;                                                    \
                        offset[q] = k;                                                         \
                    }                                                                          \
                    for (Py_ssize_t q = 0; q < m; q++)                                         \
                        idx[at + q] = (int8_t)offset[q];                                       \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static void NAME(const U *x, U *best, int8_t *idx, const geometry *g,                      \
                     const Py_ssize_t *shift) {                                                \
        const int kernel = g->kh * g->kw, sw = g->sw;                                          \
        if (kernel == 4 && g->kw == 2 && sw == 2)                                              \
            NAME##_rows(x, best, idx, g, shift, 4, 2);                                         \
        else if (kernel == 9 && g->kw == 3 && sw == 2)                                         \
            NAME##_rows(x, best, idx, g, shift, 9, 2);                                         \
        else if (kernel == 9 && g->kw == 3 && sw == 1)                                         \
            NAME##_rows(x, best, idx, g, shift, 9, 1);                                         \
        else if (kernel == 2 && sw == 2)                                                       \
            NAME##_rows(x, best, idx, g, shift, 2, 2);                                         \
        else if (kernel == 3 && sw == 2)                                                       \
            NAME##_rows(x, best, idx, g, shift, 3, 2);                                         \
        else                                                                                   \
            NAME##_rows(x, best, idx, g, shift, kernel, sw);                                   \
    }

/* For floats, v > cur is false when either is NaN, so once a NaN holds the window only another
 * NaN takes it. */
static inline float f32_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline double f64_of(uint64_t u) { double f; memcpy(&f, &u, 8); return f; }
#define F32_TAKES(v, cur) ((f32_of(v) > f32_of(cur)) | (f32_of(v) != f32_of(v)))
#define F64_TAKES(v, cur) ((f64_of(v) > f64_of(cur)) | (f64_of(v) != f64_of(v)))
DEFINE_SCAN(scan_f32, uint32_t, int32_t, F32_TAKES)
DEFINE_SCAN(scan_f64, uint64_t, int64_t, F64_TAKES)

/* float16 and bfloat16 bits: the magnitude bits above the infinity's are a NaN; the key of a
 * negative number is minus its magnitude (so -0 and +0 are both 0), and keys order like the
 * numbers. */
static inline int16_t half_key(uint16_t h) {  /* in 16-bit lanes, to vectorise 8 to 16 wide */
    const int16_t sign = (int16_t)((int16_t)h >> 15);  /* 0 or -1 */
    return (int16_t)(((int16_t)(h & 0x7FFF) ^ sign) - sign);
}
#define HALF_NAN(h, inf_bits) (((h) & 0x7FFF) > (inf_bits))
#define F16_TAKES(v, cur) \
    (HALF_NAN(v, 0x7C00) | (!HALF_NAN(cur, 0x7C00) & (half_key(v) > half_key(cur))))
#define BF16_TAKES(v, cur) \
    (HALF_NAN(v, 0x7F80) | (!HALF_NAN(cur, 0x7F80) & (half_key(v) > half_key(cur))))
DEFINE_SCAN(scan_f16, uint16_t, int16_t, F16_TAKES)
DEFINE_SCAN(scan_bf16, uint16_t, int16_t, BF16_TAKES)

/* ------------------------------------------------------------------------------- scatter */
/* acc (planes, hp, wp) zeroed by the caller; each gradient goes to (or is added at) its
 * window's maximum. */
#define DEFINE_SCATTER(NAME, T, OP)                                                             \
    static void NAME(const T *gy, const int8_t *idx, T *acc, const geometry *g,                \
                     const Py_ssize_t *shift) {                                                \
        for (Py_ssize_t p = 0; p < g->planes; p++) {                                           \
            T *plane = acc + p * g->hp * g->wp;                                                \
            for (Py_ssize_t r = 0; r < g->oh; r++) {                                           \
                const Py_ssize_t at = (p * g->oh + r) * g->ow;                                 \
                T *row = plane + r * g->sh * g->wp;                                            \
                for (Py_ssize_t q = 0; q < g->ow; q++)                                         \
                    row[q * g->sw + shift[idx[at + q]]] OP gy[at + q];                         \
            }                                                                                  \
        }                                                                                      \
    }
DEFINE_SCATTER(store_2, uint16_t, =)
DEFINE_SCATTER(store_4, uint32_t, =)
DEFINE_SCATTER(store_8, uint64_t, =)
DEFINE_SCATTER(add_f32, float, +=)
DEFINE_SCATTER(add_f64, double, +=)

/* ------------------------------------------------------------------------------- Python */
static int parse_geometry(PyObject *shape, geometry *g) {
    return PyArg_ParseTuple(shape, "nnnnniiiiii", &g->planes, &g->hp, &g->wp, &g->oh, &g->ow,
                            &g->kh, &g->kw, &g->sh, &g->sw, &g->dh, &g->dw);
}

/* The three buffers, each of the byte size the geometry gives it (`sizes`); bit i of `written`
 * asks for buffer i writable. */
static int get_buffers(PyObject *const objs[3], Py_buffer bufs[3], int written,
                       const Py_ssize_t sizes[3]) {
    for (int i = 0; i < 3; i++) {
        int flags = PyBUF_C_CONTIGUOUS | (((written >> i) & 1) ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &bufs[i], flags) < 0) {
            for (int j = 0; j < i; j++)
                PyBuffer_Release(&bufs[j]);
            return -1;
        }
    }
    for (int i = 0; i < 3; i++) {
        if (bufs[i].len != sizes[i]) {
            PyErr_SetString(PyExc_ValueError, "pool: array sizes do not match the geometry");
            for (int j = 0; j < 3; j++)
                PyBuffer_Release(&bufs[j]);
            return -1;
        }
    }
    return 0;
}

/* Each kernel offset's position relative to its window's first element (C order). */
static void offset_shifts(const geometry *g, Py_ssize_t shift[127]) {
    int k = 0;
    for (int ki = 0; ki < g->kh; ki++)
        for (int kj = 0; kj < g->kw; kj++)
            shift[k++] = (Py_ssize_t)ki * g->dh * g->wp + (Py_ssize_t)kj * g->dw;
}

static int check_geometry(const geometry *g) {
    if (g->kh * g->kw > 127 || g->kh < 1 || g->kw < 1 || g->sh < 1 || g->sw < 1 || g->dh < 1 ||
        g->dw < 1 || (g->oh - 1) * g->sh + (g->kh - 1) * g->dh >= g->hp ||
        (g->ow - 1) * g->sw + (g->kw - 1) * g->dw >= g->wp) {
        PyErr_SetString(PyExc_ValueError, "pool: windows outside the padded input, or more "
                                          "than 127 kernel offsets");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------- parts */
enum { SCAN_F32, SCAN_F64, SCAN_F16, SCAN_BF16, STORE_2, STORE_4, STORE_8, ADD_F32, ADD_F64 };

typedef struct {  /* scan: a = x, b = best, c = idx; scatter: a = gy, b = idx, c = acc */
    int kernel;
    Py_ssize_t item;
    const char *a;
    char *b, *c;
    geometry g;
    Py_ssize_t shift[127];
} pool_job;

/* The planes [p0, p1) of a job: the same kernel on a geometry of fewer planes. */
static void pool_part(void *ctx, int part, int parts) {
    const pool_job *t = ctx;
    const Py_ssize_t p0 = t->g.planes * part / parts, p1 = t->g.planes * (part + 1) / parts;
    if (p0 == p1)
        return;
    geometry g = t->g;
    g.planes = p1 - p0;
    const Py_ssize_t plane_in = g.hp * g.wp, plane_out = g.oh * g.ow, it = t->item;
    if (t->kernel <= SCAN_BF16) {
        const void *x = t->a + p0 * plane_in * it;
        void *best = t->b + p0 * plane_out * it;
        int8_t *idx = (int8_t *)t->c + p0 * plane_out;
        if (t->kernel == SCAN_F32)
            scan_f32(x, best, idx, &g, t->shift);
        else if (t->kernel == SCAN_F64)
            scan_f64(x, best, idx, &g, t->shift);
        else if (t->kernel == SCAN_F16)
            scan_f16(x, best, idx, &g, t->shift);
        else
            scan_bf16(x, best, idx, &g, t->shift);
        return;
    }
    const void *gy = t->a + p0 * plane_out * it;
    const int8_t *idx = (const int8_t *)t->b + p0 * plane_out;
    void *acc = t->c + p0 * plane_in * it;
    switch (t->kernel) {
    case STORE_2: store_2(gy, idx, acc, &g, t->shift); break;
    case STORE_4: store_4(gy, idx, acc, &g, t->shift); break;
    case STORE_8: store_8(gy, idx, acc, &g, t->shift); break;
    case ADD_F32: add_f32(gy, idx, acc, &g, t->shift); break;
    default: add_f64(gy, idx, acc, &g, t->shift); break;
    }
}

static void run_pool(pool_job *t, Py_buffer bufs[3], int threads) {
    t->a = bufs[0].buf;
    t->b = bufs[1].buf;
    t->c = bufs[2].buf;
    offset_shifts(&t->g, t->shift);
    if (threads > t->g.planes)
        threads = (int)t->g.planes;
    Py_BEGIN_ALLOW_THREADS
    mg_parallel(pool_part, t, threads);
    Py_END_ALLOW_THREADS
}

/* ------------------------------------------------------------------------------- Python */
/* (kind, three arrays, geometry tuple, threads): the arguments of scan and scatter. The
 * geometry is checked and the kind, one of `n` names, gives the job its kernel (`first` + its
 * index) and element size. */
static int parse_call(PyObject *args, const char *name, const char *const kinds[],
                      const Py_ssize_t items[], int n, int first, PyObject *objs[3], pool_job *t,
                      int *threads) {
    const char *kind;
    PyObject *shape;
    if (!PyArg_ParseTuple(args, "sOOOO!i", &kind, &objs[0], &objs[1], &objs[2], &PyTuple_Type,
                          &shape, threads) || !parse_geometry(shape, &t->g) ||
        check_geometry(&t->g) < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(kind, kinds[i])) {
            t->kernel = first + i;
            t->item = items[i];
            return 0;
        }
    PyErr_Format(PyExc_ValueError, "%s: unknown kind %s", name, kind);
    return -1;
}

/* pool_scan(kind, x, best, idx, geometry, threads) with kind "f32", "f64", "f16" or "bf16". */
PyObject *mg_py_pool_scan(PyObject *self, PyObject *args) {
    (void)self;
    static const char *const kinds[] = {"f32", "f64", "f16", "bf16"};
    static const Py_ssize_t items[] = {4, 8, 2, 2};
    PyObject *objs[3];
    pool_job t;
    int threads;
    if (parse_call(args, "pool_scan", kinds, items, 4, SCAN_F32, objs, &t, &threads) < 0)
        return NULL;
    const Py_ssize_t outs = t.g.planes * t.g.oh * t.g.ow;
    const Py_ssize_t sizes[3] = {t.g.planes * t.g.hp * t.g.wp * t.item, outs * t.item, outs};
    Py_buffer bufs[3];
    if (get_buffers(objs, bufs, 6, sizes) < 0)  /* best and idx written */
        return NULL;
    run_pool(&t, bufs, threads);
    for (int j = 0; j < 3; j++)
        PyBuffer_Release(&bufs[j]);
    Py_RETURN_NONE;
}

/* pool_scatter(kind, gy, idx, acc, geometry, threads) with kind "store2", "store4", "store8"
 * (windows that never overlap), "add_f32" or "add_f64". */
PyObject *mg_py_pool_scatter(PyObject *self, PyObject *args) {
    (void)self;
    static const char *const kinds[] = {"store2", "store4", "store8", "add_f32", "add_f64"};
    static const Py_ssize_t items[] = {2, 4, 8, 4, 8};
    PyObject *objs[3];
    pool_job t;
    int threads;
    if (parse_call(args, "pool_scatter", kinds, items, 5, STORE_2, objs, &t, &threads) < 0)
        return NULL;
    const Py_ssize_t outs = t.g.planes * t.g.oh * t.g.ow;
    const Py_ssize_t sizes[3] = {outs * t.item, outs, t.g.planes * t.g.hp * t.g.wp * t.item};
    Py_buffer bufs[3];
    if (get_buffers(objs, bufs, 4, sizes) < 0)  /* acc written */
        return NULL;
    /* an index outside the kernel would write outside acc */
    const int k = t.g.kh * t.g.kw;
    const int8_t *idx = bufs[1].buf;
    int bad = 0;
    for (Py_ssize_t i = 0; i < outs; i++)
        bad |= (idx[i] < 0) | (idx[i] >= k);
    if (bad)
        PyErr_SetString(PyExc_ValueError, "pool_scatter: an index outside the kernel");
    else
        run_pool(&t, bufs, threads);
    for (int j = 0; j < 3; j++)
        PyBuffer_Release(&bufs[j]);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}
