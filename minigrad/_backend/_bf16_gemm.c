/* bfloat16 GEMM with the AVX512_BF16 dot-product instruction (part of the `_parallel` extension,
 * for bf16_cpu_gemm.py).
 *
 * C (m x n, float32) = A (m x k, bfloat16) @ B (k x n, bfloat16), accumulated in float32.
 * VDPBF16PS multiplies pairs of bfloat16s exactly and adds both products to a float32
 * accumulator, so one instruction does the work of two float32 FMAs on half the bytes; NumPy's
 * OpenBLAS has no bfloat16 GEMM, and widening both operands to float32 first costs a pass over
 * each. The instruction treats subnormal inputs and results as zero (it ignores MXCSR), as
 * PyTorch's oneDNN bfloat16 convolutions and linear layers on the same CPU do.
 *
 * Two forms, both pairing consecutive k:
 *  - packed: B is copied in blocks into (k/2, NR) tiles of bf16 pairs (one 32-bit lane holds
 *    B[2p][j] and B[2p+1][j]) and A into (k/2, MR) pair columns; an MR x NR register tile of
 *    C is then MR broadcasts and NR/16 loads per pair of k. Any strides.
 *  - inner: when the rows of A and the columns of B are both runs of consecutive k (A C-ordered,
 *    B the transpose of a C-ordered array: a weight gradient gy @ cols.T), each C element is a
 *    dot product of two runs, read in place without packing: for long reductions.
 * Each output element is summed in the same order whatever the thread count: the pool's
 * workers (_parallel.c) split the columns of C. The GIL is released while multiplying.
 */
#include "_parallel.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int mg_cpu_bf16;

/* The bfloat16 intrinsics came with GCC 10 and Clang 9; an older compiler builds the rest of
 * the extension, and this kernel reports itself unavailable. */
#if defined(MINIGRAD_X86) && ((defined(__clang__) && __clang_major__ >= 9) || \
                              (!defined(__clang__) && __GNUC__ >= 10))
#define MINIGRAD_BF16 1
#endif

#ifdef MINIGRAD_BF16
#include <cpuid.h>
#include <immintrin.h>

#define ISA __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define MR 6            /* rows of a packed register tile */
#define NR 32           /* columns of a packed register tile (two zmm registers) */
#define KC 512          /* k per packed block (256 pairs) */
#define PACK_PAIRS 65536 /* 32-bit pairs of one packed B block: 256 KB, inside L2 */
#define INNER_MIN_K 256 /* the inner form takes reductions at least this long */
#define IR 6            /* rows of A per inner-form tile */
#define INNER_KC 2048   /* k per inner-form chunk (4 KB of each run) */
#define JR 4            /* columns of B per inner-form tile */

void mg_detect_bf16(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))  /* OSXSAVE */
        return;
    unsigned int lo, hi;  /* the OS saves the ZMM state: XCR0 bits 1, 2, 5, 6, 7 */
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 0xE6u) != 0xE6u)
        return;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return;
    const unsigned int f = 1u << 16, bw = 1u << 30, vl = 1u << 31;
    if ((b & (f | bw | vl)) != (f | bw | vl))
        return;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d))
        return;
    mg_cpu_bf16 = (a >> 5) & 1u;  /* AVX512_BF16 */
}

typedef struct {  /* a strided matrix of bfloat16 bits; strides in elements */
    const uint16_t *p;
    Py_ssize_t rows, cols, s0, s1;
} mat;

typedef struct {  /* one product, split into parts by whole register tiles of columns */
    mat a, b;
    float *c;
    Py_ssize_t tiles, unit;
    int inner;
    int failed[MG_MAX_PARTS];
} job;

/* ------------------------------------------------------------------------------ packed form */
/* One packed row of pairs from two rows of B with unit column stride: 16 lanes per step. */
ISA static void pair_rows(const uint16_t *r0, const uint16_t *r1, uint32_t *d, Py_ssize_t w) {
    Py_ssize_t j = 0;
    for (; j + 16 <= w; j += 16) {
        const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(r0 + j)));
        const __m512i hi = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(r1 + j)));
        _mm512_storeu_si512(d + j, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
    for (; j < w; j++)
        d[j] = r0[j] | ((uint32_t)r1[j] << 16);
}

/* B[k0:k0+kc, j0:j0+nc] -> (nc/NR tiles) x (kc/2 pairs) x NR lanes; zeros past the edges.
 * Row pairs outside, tiles inside: B is read along its rows (column-block-major reads jumped
 * between kc rows for every tile, 2x slower on conv1's 25 x 57344 columns). */
ISA static void pack_b(const mat *b, Py_ssize_t k0, Py_ssize_t kc, Py_ssize_t j0,
                       Py_ssize_t nc, uint32_t *dst) {
    const Py_ssize_t kp = (kc + 1) / 2;
    for (Py_ssize_t p = 0; p < kp; p++) {
        const int has_r1 = 2 * p + 1 < kc;
        const uint16_t *row = b->p + (k0 + 2 * p) * b->s0 + j0 * b->s1;
        for (Py_ssize_t jb = 0; jb < nc; jb += NR) {
            const Py_ssize_t w = nc - jb < NR ? nc - jb : NR;
            const uint16_t *r0 = row + jb * b->s1;
            uint32_t *d = dst + (jb / NR) * kp * NR + p * NR;
            Py_ssize_t j = 0;
            if (b->s1 == 1 && has_r1) {
                pair_rows(r0, r0 + b->s0, d, w);
                j = w;
            } else if (b->s0 == 1 && has_r1) {  /* a transposed B: each pair is adjacent */
                for (; j < w; j++)
                    memcpy(d + j, r0 + j * b->s1, sizeof(uint32_t));
            } else {
                for (; j < w; j++)
                    d[j] = r0[j * b->s1] | (has_r1 ? (uint32_t)r0[j * b->s1 + b->s0] << 16 : 0u);
            }
            for (; j < NR; j++)
                d[j] = 0;
        }
    }
}

/* A[:, k0:k0+kc] -> (m/MR tiles) x (kc/2 pairs) x MR rows; zeros past the edges. */
static void pack_a(const mat *a, Py_ssize_t k0, Py_ssize_t kc, uint32_t *dst) {
    const Py_ssize_t kp = (kc + 1) / 2;
    for (Py_ssize_t ib = 0; ib < a->rows; ib += MR) {
        const Py_ssize_t h = a->rows - ib < MR ? a->rows - ib : MR;
        uint32_t *tile = dst + (ib / MR) * kp * MR;
        for (Py_ssize_t p = 0; p < kp; p++) {
            const int has_k1 = 2 * p + 1 < kc;
            for (Py_ssize_t i = 0; i < MR; i++) {
                uint32_t v = 0;
                if (i < h) {
                    const uint16_t *e = a->p + (ib + i) * a->s0 + (k0 + 2 * p) * a->s1;
                    v = e[0] | (has_k1 ? (uint32_t)e[a->s1] << 16 : 0u);
                }
                tile[p * MR + i] = v;
            }
        }
    }
}

/* C[0:h, 0:w] (+)= the MR x NR product of a packed A tile and a packed B tile. */
ISA static void tile_packed(const uint32_t *pa, const uint32_t *pb, Py_ssize_t kp, float *c,
                            Py_ssize_t ldc, Py_ssize_t h, Py_ssize_t w, int accumulate) {
    __m512 acc[MR][2];
    for (int i = 0; i < MR; i++)
        acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (Py_ssize_t p = 0; p < kp; p++) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(pb + p * NR);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(pb + p * NR + 16);
        for (int i = 0; i < MR; i++) {
            const __m512bh ai = (__m512bh)_mm512_set1_epi32((int)pa[p * MR + i]);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
        }
    }
    const __mmask16 m0 = w >= 16 ? 0xFFFF : (__mmask16)((1u << w) - 1);
    const __mmask16 m1 = w >= 32 ? 0xFFFF : w <= 16 ? 0 : (__mmask16)((1u << (w - 16)) - 1);
    for (int i = 0; i < MR; i++) {  /* fixed bounds: the accumulators stay in registers */
        if (i >= h)
            break;
        float *ci = c + i * ldc;
        __m512 lo = acc[i][0], hi = acc[i][1];
        if (accumulate) {
            lo = _mm512_add_ps(lo, _mm512_maskz_loadu_ps(m0, ci));
            hi = _mm512_add_ps(hi, _mm512_maskz_loadu_ps(m1, ci + 16));
        }
        _mm512_mask_storeu_ps(ci, m0, lo);
        _mm512_mask_storeu_ps(ci + 16, m1, hi);
    }
}

ISA static int gemm_packed(const mat *a, const mat *b, float *c, Py_ssize_t ldc,
                           Py_ssize_t n0, Py_ssize_t n1) {
    const Py_ssize_t m = a->rows, k = a->cols;
    const Py_ssize_t kp_max = (KC < k ? KC : k + 1) / 2;
    Py_ssize_t nc_max = PACK_PAIRS / (kp_max ? kp_max : 1) / NR * NR;
    if (nc_max < NR)
        nc_max = NR;
    uint32_t *pa = malloc(sizeof(uint32_t) * ((m + MR - 1) / MR * MR) * (kp_max + 1));
    uint32_t *pb = malloc(sizeof(uint32_t) * nc_max * (kp_max + 1));
    if (!pa || !pb) {
        free(pa);
        free(pb);
        return -1;
    }
    for (Py_ssize_t k0 = 0; k0 < k; k0 += KC) {
        const Py_ssize_t kc = k - k0 < KC ? k - k0 : KC, kp = (kc + 1) / 2;
        pack_a(a, k0, kc, pa);
        for (Py_ssize_t j0 = n0; j0 < n1; j0 += nc_max) {
            const Py_ssize_t nc = n1 - j0 < nc_max ? n1 - j0 : nc_max;
            pack_b(b, k0, kc, j0, nc, pb);
            for (Py_ssize_t jb = 0; jb < nc; jb += NR) {
                const Py_ssize_t w = nc - jb < NR ? nc - jb : NR;
                for (Py_ssize_t ib = 0; ib < m; ib += MR)
                    tile_packed(pa + (ib / MR) * kp * MR, pb + (jb / NR) * kp * NR, kp,
                                c + ib * ldc + j0 + jb, ldc, m - ib < MR ? m - ib : MR, w,
                                k0 > 0);
            }
        }
    }
    free(pa);
    free(pb);
    return 0;
}

/* ------------------------------------------------------------------------------- inner form */
/* C[i0:i0+h, j0:j0+w] (+)= dot products over k in [p0, p1) of h runs of A with w runs of B
 * (h <= IR, w <= JR). */
ISA static void tile_inner(const mat *a, const mat *b, float *c, Py_ssize_t ldc, Py_ssize_t i0,
                           Py_ssize_t h, Py_ssize_t j0, Py_ssize_t w, Py_ssize_t p0,
                           Py_ssize_t p1) {
    const uint16_t *ar[IR], *br[JR];
    for (int i = 0; i < IR; i++)  /* short tiles repeat their last run; its sums are dropped */
        ar[i] = a->p + (i0 + (i < h ? i : h - 1)) * a->s0;
    for (int j = 0; j < JR; j++)
        br[j] = b->p + (j0 + (j < w ? j : w - 1)) * b->s1;
    __m512 acc[IR][JR];
    for (int i = 0; i < IR; i++)
        for (int j = 0; j < JR; j++)
            acc[i][j] = _mm512_setzero_ps();
    Py_ssize_t p = p0;
    for (; p + 32 <= p1; p += 32) {
        __m512bh bv[JR];
        for (int j = 0; j < JR; j++)
            bv[j] = (__m512bh)_mm512_loadu_si512(br[j] + p);
        for (int i = 0; i < IR; i++) {
            const __m512bh av = (__m512bh)_mm512_loadu_si512(ar[i] + p);
            for (int j = 0; j < JR; j++)
                acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, bv[j]);
        }
    }
    if (p < p1) {  /* the last k, zeros past the end */
        const __mmask32 mask = (__mmask32)((1ull << (p1 - p)) - 1);
        __m512bh bv[JR];
        for (int j = 0; j < JR; j++)
            bv[j] = (__m512bh)_mm512_maskz_loadu_epi16(mask, br[j] + p);
        for (int i = 0; i < IR; i++) {
            const __m512bh av = (__m512bh)_mm512_maskz_loadu_epi16(mask, ar[i] + p);
            for (int j = 0; j < JR; j++)
                acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, bv[j]);
        }
    }
    /* Fixed bounds first: indexing the accumulators by h or w would keep them in memory. */
    float sums[IR][JR];
    for (int i = 0; i < IR; i++)
        for (int j = 0; j < JR; j++)
            sums[i][j] = _mm512_reduce_add_ps(acc[i][j]);
    for (Py_ssize_t i = 0; i < h; i++)
        for (Py_ssize_t j = 0; j < w; j++) {
            float *e = c + (i0 + i) * ldc + j0 + j;
            *e = p0 ? *e + sums[i][j] : sums[i][j];
        }
}

/* k in chunks whose runs of A and of this thread's B stay in L2 while every tile reads them. */
ISA static void gemm_inner(const mat *a, const mat *b, float *c, Py_ssize_t ldc,
                           Py_ssize_t n0, Py_ssize_t n1) {
    const Py_ssize_t k = a->cols;
    for (Py_ssize_t p0 = 0; p0 < k; p0 += INNER_KC) {
        const Py_ssize_t p1 = k - p0 < INNER_KC ? k : p0 + INNER_KC;
        for (Py_ssize_t j0 = n0; j0 < n1; j0 += JR)
            for (Py_ssize_t i0 = 0; i0 < a->rows; i0 += IR)
                tile_inner(a, b, c, ldc, i0, a->rows - i0 < IR ? a->rows - i0 : IR, j0,
                           n1 - j0 < JR ? n1 - j0 : JR, p0, p1);
    }
}

/* ------------------------------------------------------------------------------- parts */
static void run_part(void *ctx, int part, int parts) {
    job *t = ctx;
    const Py_ssize_t n = t->b.cols, ldc = n;
    Py_ssize_t n0 = t->tiles * part / parts * t->unit, n1 = t->tiles * (part + 1) / parts * t->unit;
    if (n1 > n)
        n1 = n;
    if (t->inner)
        gemm_inner(&t->a, &t->b, t->c, ldc, n0, n1);
    else
        t->failed[part] = gemm_packed(&t->a, &t->b, t->c, ldc, n0, n1) != 0;
}

/* 0, or -1 when a part found no memory. */
static int run(const mat *a, const mat *b, float *c, int inner, int threads) {
    job t = {*a, *b, c, 0, inner ? JR : NR, inner, {0}};
    t.tiles = (b->cols + t.unit - 1) / t.unit;
    if (threads > t.tiles)
        threads = (int)t.tiles;
    if (threads > MG_MAX_PARTS)
        threads = MG_MAX_PARTS;
    if (threads < 1)
        threads = 1;
    mg_parallel(run_part, &t, threads);
    for (int p = 0; p < threads; p++)
        if (t.failed[p])
            return -1;
    return 0;
}
static int as_matrix(const Py_buffer *v, const char *name, mat *m) {
    if (v->ndim != 2 || v->itemsize != 2 || v->strides[0] % 2 || v->strides[1] % 2) {
        PyErr_Format(PyExc_ValueError, "bf16_gemm: %s must be a 2-D array of 16-bit elements",
                     name);
        return -1;
    }
    *m = (mat){v->buf, v->shape[0], v->shape[1], v->strides[0] / 2, v->strides[1] / 2};
    return 0;
}
#else
void mg_detect_bf16(void) {}
#endif /* MINIGRAD_BF16 */

/* ------------------------------------------------------------------------------- Python */
PyObject *mg_py_bf16_gemm(PyObject *self, PyObject *args) {
    (void)self;
#ifdef MINIGRAD_BF16
    PyObject *ao, *bo, *co;
    int threads, form;
    if (!PyArg_ParseTuple(args, "OOOii", &ao, &bo, &co, &threads, &form))
        return NULL;
    if (!mg_cpu_bf16) {
        PyErr_SetString(PyExc_RuntimeError, "bf16_gemm: this CPU has no AVX512_BF16");
        return NULL;
    }
    Py_buffer av, bv, cv;
    if (PyObject_GetBuffer(ao, &av, PyBUF_STRIDES) < 0)
        return NULL;
    if (PyObject_GetBuffer(bo, &bv, PyBUF_STRIDES) < 0) {
        PyBuffer_Release(&av);
        return NULL;
    }
    if (PyObject_GetBuffer(co, &cv, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&av);
        PyBuffer_Release(&bv);
        return NULL;
    }
    mat a, b;
    int rc = -1;
    if (as_matrix(&av, "a", &a) < 0 || as_matrix(&bv, "b", &b) < 0)
        goto done;
    if (b.rows != a.cols || cv.len != (Py_ssize_t)sizeof(float) * a.rows * b.cols) {
        PyErr_SetString(PyExc_ValueError, "bf16_gemm: shapes of a, b and out do not agree");
        goto done;
    }
    const int inner_ok = a.s1 == 1 && b.s0 == 1;
    if (form == 2 && !inner_ok) {
        PyErr_SetString(PyExc_ValueError, "bf16_gemm: the inner form needs unit k strides");
        goto done;
    }
    const int inner = form == 2 || (form == 0 && inner_ok && a.cols >= INNER_MIN_K);
    float *c = cv.buf;
    if (a.rows == 0 || b.cols == 0) {
        rc = 0;
    } else if (a.cols == 0) {
        memset(c, 0, sizeof(float) * a.rows * b.cols);
        rc = 0;
    } else {
        Py_BEGIN_ALLOW_THREADS
        rc = run(&a, &b, c, inner, threads);
        Py_END_ALLOW_THREADS
        if (rc < 0)
            PyErr_NoMemory();
    }
done:
    PyBuffer_Release(&av);
    PyBuffer_Release(&bv);
    PyBuffer_Release(&cv);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
#else
    (void)args;
    PyErr_SetString(PyExc_RuntimeError,
                    "bf16_gemm: built without AVX512_BF16 support (x86-64, GCC 10 or Clang 9)");
    return NULL;
#endif
}
