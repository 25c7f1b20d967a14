/* bfloat16 GEMM with the AVX512_BF16 dot-product instruction, for bf16_cpu_gemm.py.
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
 * Each output element is summed in the same order whatever the thread count: threads split
 * the columns of C. The GIL is released while multiplying.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MINIGRAD_BF16_GEMM 1
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define ISA __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define MR 6            /* rows of a packed register tile */
#define NR 32           /* columns of a packed register tile (two zmm registers) */
#define KC 512          /* k per packed block (256 pairs) */
#define PACK_PAIRS 65536 /* 32-bit pairs of one packed B block: 256 KB, inside L2 */
#define INNER_MIN_K 256 /* the inner form takes reductions at least this long */
#define IR 6            /* rows of A per inner-form tile */
#define INNER_KC 2048   /* k per inner-form chunk (4 KB of each run) */
#define JR 4            /* columns of B per inner-form tile */

static int cpu_ok;

static void detect_cpu(void) {
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
    cpu_ok = (a >> 5) & 1u;  /* AVX512_BF16 */
}

typedef struct {  /* a strided matrix of bfloat16 bits; strides in elements */
    const uint16_t *p;
    Py_ssize_t rows, cols, s0, s1;
} mat;

typedef struct {
    mat a, b;
    float *c;
    Py_ssize_t n0, n1;  /* this thread's columns of C */
    int inner;
    int failed;
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

/* ------------------------------------------------------------------------------- threads */
static void *run_job(void *arg) {
    job *t = arg;
    const Py_ssize_t ldc = t->b.cols;
    if (t->inner)
        gemm_inner(&t->a, &t->b, t->c, ldc, t->n0, t->n1);
    else
        t->failed = gemm_packed(&t->a, &t->b, t->c, ldc, t->n0, t->n1) != 0;
    return NULL;
}

#define MAX_THREADS 8
#define SPIN_NS 200000  /* a worker spins this long for the next job before it sleeps */

/* Persistent workers: starting a POSIX thread per product cost about 60 us on the development
 * machine, as much as a LeNet-5 GEMM. A worker spins a while after each job (the products of a
 * training step come every few hundred microseconds), then sleeps on a condition variable.
 * One caller at a time uses the pool (`busy`); a second one, from another Python thread, runs
 * on its own thread alone. After fork() the child starts its own workers. */
typedef struct {
    pthread_t id;
    job *todo;
    atomic_int state;  /* 0 idle, 1 a job is posted, 2 the job is done */
} worker;

static worker workers[MAX_THREADS];
static int n_workers;
static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *worker_loop(void *arg) {
    worker *w = arg;
    for (;;) {
        const long long until = now_ns() + SPIN_NS;
        int spins = 0;
        while (atomic_load_explicit(&w->state, memory_order_acquire) != 1) {
            _mm_pause();
            if (++spins % 256 == 0 && now_ns() > until) {
                pthread_mutex_lock(&pool_mutex);
                while (atomic_load_explicit(&w->state, memory_order_acquire) != 1)
                    pthread_cond_wait(&pool_wake, &pool_mutex);
                pthread_mutex_unlock(&pool_mutex);
            }
        }
        run_job(w->todo);
        atomic_store_explicit(&w->state, 2, memory_order_release);
    }
    return NULL;
}

/* The child of a fork() has none of its parent's threads, and a lock one of them held stays
 * held: start afresh. */
static void forget_workers(void) {
    n_workers = 0;
    pthread_mutex_init(&pool_mutex, NULL);
    pthread_cond_init(&pool_wake, NULL);
    pthread_mutex_init(&busy, NULL);
}

/* Workers for `want` extra jobs (fewer if threads cannot be started); returns how many. */
static int ensure_workers(int want) {
    static int registered;
    if (!registered) {
        pthread_atfork(NULL, NULL, forget_workers);
        registered = 1;
    }
    while (n_workers < want) {
        worker *w = &workers[n_workers];
        atomic_store(&w->state, 0);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 1 << 20);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        const int rc = pthread_create(&w->id, &attr, worker_loop, w);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        n_workers++;
    }
    return n_workers < want ? n_workers : want;
}

/* Split the n columns over `threads` jobs (in whole register tiles); 0 or -1 (no memory). */
static int run(const mat *a, const mat *b, float *c, int inner, int threads) {
    const Py_ssize_t n = b->cols, unit = inner ? JR : NR;
    const Py_ssize_t tiles = (n + unit - 1) / unit;
    if (threads > tiles)
        threads = (int)tiles;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads < 1)
        threads = 1;
    int helpers = 0;
    if (threads > 1 && pthread_mutex_trylock(&busy) == 0)
        helpers = ensure_workers(threads - 1);
    else
        threads = 1;
    job jobs[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){*a, *b, c, tiles * t / threads * unit, tiles * (t + 1) / threads * unit,
                        inner, 0};
        if (jobs[t].n1 > n)
            jobs[t].n1 = n;
    }
    for (int h = 0; h < helpers; h++) {
        workers[h].todo = &jobs[h + 1];
        atomic_store_explicit(&workers[h].state, 1, memory_order_release);
    }
    if (helpers) {  /* wake the sleepers (no system call when none sleeps) */
        pthread_mutex_lock(&pool_mutex);
        pthread_cond_broadcast(&pool_wake);
        pthread_mutex_unlock(&pool_mutex);
    }
    run_job(&jobs[0]);
    for (int t = helpers + 1; t < threads; t++)  /* no worker to be had: its share runs here */
        run_job(&jobs[t]);
    int failed = jobs[0].failed;
    for (int h = 0; h < helpers; h++) {
        while (atomic_load_explicit(&workers[h].state, memory_order_acquire) != 2)
            _mm_pause();
        atomic_store_explicit(&workers[h].state, 0, memory_order_relaxed);
        failed |= jobs[h + 1].failed;
    }
    if (threads > 1)
        pthread_mutex_unlock(&busy);
    return failed ? -1 : 0;
}
#endif /* x86-64 */

/* ------------------------------------------------------------------------------- Python */
static int as_matrix(Py_buffer *v, const char *name, void *m_) {
#ifdef MINIGRAD_BF16_GEMM
    mat *m = m_;
    if (v->ndim != 2 || v->itemsize != 2 || v->strides[0] % 2 || v->strides[1] % 2) {
        PyErr_Format(PyExc_ValueError, "_bf16_gemm: %s must be a 2-D array of 16-bit elements",
                     name);
        return -1;
    }
    *m = (mat){v->buf, v->shape[0], v->shape[1], v->strides[0] / 2, v->strides[1] / 2};
    return 0;
#else
    (void)v; (void)name; (void)m_;
    return -1;
#endif
}

PyDoc_STRVAR(gemm_doc,
"gemm(a, b, out, threads, form) -> None\n\n"
"out (m, n) float32, C-contiguous = a (m, k) @ b (k, n), bfloat16 bits as uint16 arrays of any\n"
"strides. form: 0 chooses, 1 packed, 2 inner (needs unit k strides in both).");

static PyObject *gemm(PyObject *self, PyObject *args) {
    (void)self;
#ifdef MINIGRAD_BF16_GEMM
    PyObject *ao, *bo, *co;
    int threads, form;
    if (!PyArg_ParseTuple(args, "OOOii", &ao, &bo, &co, &threads, &form))
        return NULL;
    if (!cpu_ok) {
        PyErr_SetString(PyExc_RuntimeError, "_bf16_gemm: this CPU has no AVX512_BF16");
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
        PyErr_SetString(PyExc_ValueError, "_bf16_gemm: shapes of a, b and out do not agree");
        goto done;
    }
    const int inner_ok = a.s1 == 1 && b.s0 == 1;
    if (form == 2 && !inner_ok) {
        PyErr_SetString(PyExc_ValueError, "_bf16_gemm: the inner form needs unit k strides");
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
    PyErr_SetString(PyExc_RuntimeError, "_bf16_gemm: built without x86-64 support");
    return NULL;
#endif
}

static PyObject *available(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
#ifdef MINIGRAD_BF16_GEMM
    return PyBool_FromLong(cpu_ok);
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"gemm", gemm, METH_VARARGS, gemm_doc},
    {"available", available, METH_NOARGS, "Whether this CPU runs the kernels (AVX512_BF16)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_bf16_gemm",
                                    "bfloat16 GEMM with AVX512_BF16 (bf16_cpu_gemm.py).", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__bf16_gemm(void) {
#ifdef MINIGRAD_BF16_GEMM
    detect_cpu();
#endif
    return PyModule_Create(&module);
}
