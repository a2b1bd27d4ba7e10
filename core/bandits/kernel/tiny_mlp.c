/* K tiny reward networks trained online in one call (core/bandits/kernel/tiny.py).
 *
 * Every network is D → H1 → H2 → 1 with ReLU, its input a context of D − A columns (mostly
 * zeros: the mushroom's one-hot attributes) joined with a one-hot action of A columns. The sizes
 * are compile-time constants (-DTINY_D=… -DTINY_A=… -DTINY_H1=… -DTINY_H2=…; build.py keys a
 * library per shape), so every loop over units has a constant trip count and the compiler keeps
 * a row's accumulators in vector registers.
 *
 * Layout of one network's parameters θ (float32, NP values, every block 64-byte aligned): unit
 * widths are padded to P1, P2 (multiples of 16) and each weight matrix is stored input-major,
 * "row j = the weights from input j to every unit":
 *   W1 [D][P1] | b1 [P1] | W2 [H1][P2] | b2 [P2] | w3 [P2] | b3 [16]  (b3 in its first value).
 * Padding entries are 0 and stay 0 (their gradients are 0; for a Bayesian network the caller's
 * mask zeroes their noise). A Bayesian network stores [μ | ρ] (2·NP), σ = softplus(ρ).
 *
 * One update of network k on the minibatch at positions pos[0..B) of its ring buffer:
 *   BBB: w = μ + σ·ε, ε from the counter-based stream keyed by tiny_key(seed, k, u) (core/engine/native/common.h),
 *        one draw per minibatch as in Blundell et al. (2015); MLP: w = θ;
 *   f_b = net_w(x_b); loss = Σ_b (f_b − r_b)²/(2σ_n²) + kw·KL (kw = β·B/N, BBB only) where
 *        KL is the closed form for a Gaussian prior and log q(w) − log p(w) at the draw for the
 *        scale mixture;
 *   backpropagation that skips the zeros of the inputs and of the ReLUs (lists of non-zeros,
 *        so no branch depends on the data), then the reparameterisation's gradients
 *        (as bnn_sample_kl_backward in core/engine/native/sample_kl.c) and Adam exactly as torch.optim.Adam
 *        (no weight decay): m ← m + (1−β1)(g − m), v ← β2·v + (1−β2)·g²,
 *        θ ← θ − lr/(1−β1ᵗ) · m / (√v/√(1−β2ᵗ) + eps); or, when hyper.sgd is set, plain
 *        gradient steps θ ← θ − lr·g as torch.optim.SGD (no momentum), the moments untouched.
 * Networks are independent, so the K networks are shared out over OpenMP threads (dynamic
 * schedule) and each runs its U updates while its parameters stay in its core's cache; every
 * value depends only on the network's own inputs and noise, so results are bit-identical for
 * any thread count.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Denormals flushed to zero inside a call (Adam's moments of rarely seen inputs decay into the
 * denormal range, where x86 arithmetic is ~10× slower); the caller's mode is restored after. */
#if defined(__SSE__)
#include <xmmintrin.h>
#define FTZ_DAZ 0x8040u
#define FLUSH_BEGIN const unsigned int csr_ = _mm_getcsr(); _mm_setcsr(csr_ | FTZ_DAZ);
#define FLUSH_END _mm_setcsr(csr_);
#else
#define FLUSH_BEGIN
#define FLUSH_END
#endif

#if !defined(TINY_D) || !defined(TINY_A) || !defined(TINY_H1) || !defined(TINY_H2)
#error "build with -DTINY_D=… -DTINY_A=… -DTINY_H1=… -DTINY_H2=…"
#endif
#define D TINY_D
#define A TINY_A
#define DC (D - A)
#define H1 TINY_H1
#define H2 TINY_H2
#define P1 (((H1) + 15) / 16 * 16)
#define P2 (((H2) + 15) / 16 * 16)
#define V1 (P1 / 16)
#define V2 (P2 / 16)
#define OFF_W1 0
#define OFF_B1 (D * P1)
#define OFF_W2 (OFF_B1 + P1)
#define OFF_B2 (OFF_W2 + H1 * P2)
#define OFF_W3 (OFF_B2 + P2)
#define OFF_B3 (OFF_W3 + P2)
#define NP (OFF_B3 + 16)
#define ACT_UPDATE 65535 /* the update index u of a decision's weight draw */

typedef float v16 __attribute__((vector_size(64)));
#define VEC(p) ((v16 *)(p))
#define CVEC(p) ((const v16 *)(p))
#define UNROLL _Pragma("GCC unroll 16")

/* Hyper-parameters, passed from Python as floats in this order. */
typedef struct {
    float lr, beta1, beta2, eps; /* Adam */
    float inv_var;               /* 1/σ_n² of the Gaussian likelihood */
    float kl_weight;             /* β·B/N */
    float gaussian;              /* 1: Gaussian prior, 0: scale mixture */
    float inv_sp2;               /* Gaussian: 1/σp² */
    float mixture[5];            /* mixture: t0, k, log_b0, inv_s2, inv_s1 (core/engine/native/common.h) */
    float sgd;                   /* 1: plain gradient steps instead of Adam */
    float kl_geometric;          /* 1: update u of U weighs kl_weight·U·2^-(u+1)/(1 − 2^-U) */
} hyper_t;

/* Scratch of one thread. */
typedef struct {
    float w[NP], eps[NP], sigma[NP], sig[NP], g[2 * NP];
    float w2t[H2 * P1]; /* W2 output-major: row o = the weights into unit o from every input */
    int *live;          /* (H1, B): per unit of layer 1, the minibatch rows where it is alive */
} scratch_t;

/* Per minibatch row: activations and the lists of live (non-zero) units. */
typedef struct {
    float *h1, *h2, *d2, *f;
    int *nz1, *nz1_n, *nz2, *nz2_n;
} rows_t;

/* A non-zero column of a context: its index and value (8 bytes, so that a minibatch row's
 * inputs are a few cache lines of the ring). */
typedef struct {
    int32_t idx;
    float val;
} nz_t;

/* A context's non-zero columns into out[0..n) (out has room for DC); returns n. */
static int compact(const float *restrict ctx, nz_t *restrict out) {
    int n = 0;
    for (int j = 0; j < DC; ++j) {
        out[n].idx = j;
        out[n].val = ctx[j];
        n += ctx[j] != 0.0f;
    }
    return n;
}

typedef int v16i __attribute__((vector_size(64)));
static inline v16 relu(v16 x) { return (v16)((v16i)x & (x > (v16){0})); }
static inline float hsum(v16 x) {
    float s = 0.0f;
    for (int l = 0; l < 16; ++l) s += x[l];
    return s;
}

int64_t tiny_layout(int64_t *out) {
    const int64_t v[] = {D, A, H1, H2, P1, P2, OFF_W1, OFF_B1, OFF_W2, OFF_B2, OFF_W3, OFF_B3, NP};
    memcpy(out, v, sizeof v);
    return (int64_t)(sizeof v / sizeof v[0]);
}

uint64_t tiny_key(uint64_t seed, int64_t k, int64_t u) {
    return mix64(seed + GOLDEN * (uint64_t)(1 + k * 65536 + u));
}

/* NP standard normals of the stream keyed by key: pair p gives out[p] and out[NP/2 + p]. */
void tiny_noise(uint64_t key, float *restrict out) {
    const uint64_t base = mix64(key);
#pragma omp simd
    for (int64_t p = 0; p < NP / 2; ++p) NORMAL_PAIR(base, p, out[p], out[NP / 2 + p]);
}

/* w = (μ + σ·ε)·mask with σ = softplus(ρ); keeps ε, σ and sigmoid(ρ) for the backward pass. */
static void sample(const float *restrict mu, const float *restrict rho,
                   const float *restrict mask, uint64_t key, scratch_t *s) {
    tiny_noise(key, s->eps);
#pragma omp simd
    for (int64_t p = 0; p < NP; ++p) {
        s->sigma[p] = softplus_sig(rho[p], &s->sig[p]);
        s->w[p] = (mu[p] + s->sigma[p] * s->eps[p]) * mask[p];
    }
}

/* Forward pass of one input — a context's n non-zero columns in and action a — through
 * weights w: h1, h2 (ReLU outputs), the lists of live units nz1, nz2 and their counts. */
static float forward(const float *restrict w, const nz_t *restrict in, int n, int64_t a,
                     float *restrict h1, float *restrict h2, int *restrict nz1, int *nz1_n,
                     int *restrict nz2, int *nz2_n) {
    v16 acc1[V1];
    const v16 *action = CVEC(w + OFF_W1 + (int64_t)(DC + a) * P1);
    UNROLL for (int c = 0; c < V1; ++c) acc1[c] = CVEC(w + OFF_B1)[c] + action[c];
    for (int t = 0; t < n; ++t) {
        const v16 *row = CVEC(w + OFF_W1 + (int64_t)in[t].idx * P1);
        const float x = in[t].val;
        UNROLL for (int c = 0; c < V1; ++c) acc1[c] += x * row[c];
    }
    UNROLL for (int c = 0; c < V1; ++c) VEC(h1)[c] = relu(acc1[c]);
    int m = 0;
    for (int i = 0; i < H1; ++i) {
        nz1[m] = i;
        m += h1[i] > 0.0f;
    }
    *nz1_n = m;

    v16 acc2[V2];
    UNROLL for (int c = 0; c < V2; ++c) acc2[c] = CVEC(w + OFF_B2)[c];
    for (int t = 0; t < m; ++t) {
        const v16 *row = CVEC(w + OFF_W2 + (int64_t)nz1[t] * P2);
        const float x = h1[nz1[t]];
        UNROLL for (int c = 0; c < V2; ++c) acc2[c] += x * row[c];
    }
    v16 fo = {0};
    UNROLL for (int c = 0; c < V2; ++c) {
        const v16 h = relu(acc2[c]);
        VEC(h2)[c] = h;
        fo += h * CVEC(w + OFF_W3)[c];
    }
    int m2 = 0;
    for (int o = 0; o < P2; ++o) {
        nz2[m2] = o;
        m2 += h2[o] > 0.0f;
    }
    *nz2_n = m2;
    return w[OFF_B3] + hsum(fo);
}

/* A minibatch row's input: its context's non-zero columns and its action. */
typedef struct {
    const nz_t *nz;
    int n;
    int64_t a;
} input_t;

/* ∂loss/∂w of the minibatch's squared errors into g[0..NP), from the forward pass's rows. */
static void backward(const float *restrict w, int B, const input_t *in, const float *restrict r,
                     float inv_var, rows_t *rw, scratch_t *s) {
    float *restrict g = s->g;
    memset(g, 0, NP * sizeof(float));
    /* W2 output-major for δ1 = W2ᵀ-products over the live units of layer 2 */
    for (int i = 0; i < H1; ++i)
        for (int o = 0; o < H2; ++o) s->w2t[o * P1 + i] = w[OFF_W2 + i * P2 + o];

    v16 gw3[V2], gb2[V2], gb1[V1];
    UNROLL for (int c = 0; c < V2; ++c) gw3[c] = gb2[c] = (v16){0};
    UNROLL for (int c = 0; c < V1; ++c) gb1[c] = (v16){0};
    float gb3 = 0.0f;
    for (int b = 0; b < B; ++b) {
        const float e = (rw->f[b] - r[b]) * inv_var;
        const float *restrict h2 = rw->h2 + (int64_t)b * P2;
        float *restrict d2 = rw->d2 + (int64_t)b * P2;
        gb3 += e;
        UNROLL for (int c = 0; c < V2; ++c) {
            const v16 h = CVEC(h2)[c];
            gw3[c] += e * h;
            const v16 d = e * CVEC(w + OFF_W3)[c];
            VEC(d2)[c] = (v16)((v16i)d & (h > (v16){0}));
            gb2[c] += VEC(d2)[c];
        }

        /* δ1 = (W2 δ2) ⊙ [h1 > 0], over the units of layer 2 that are alive */
        v16 d1[V1];
        UNROLL for (int c = 0; c < V1; ++c) d1[c] = (v16){0};
        const int *nz2 = rw->nz2 + (int64_t)b * P2;
        for (int t = 0; t < rw->nz2_n[b]; ++t) {
            const v16 *row = CVEC(s->w2t + (int64_t)nz2[t] * P1);
            const float x = d2[nz2[t]];
            UNROLL for (int c = 0; c < V1; ++c) d1[c] += x * row[c];
        }
        const float *restrict h1 = rw->h1 + (int64_t)b * P1;
        UNROLL for (int c = 0; c < V1; ++c) {
            d1[c] = (v16)((v16i)d1[c] & (CVEC(h1)[c] > (v16){0}));
            gb1[c] += d1[c];
        }
        /* the input layer: only the rows of W1 whose inputs are non-zero */
        for (int t = 0; t < in[b].n; ++t) {
            v16 *row = VEC(g + OFF_W1 + (int64_t)in[b].nz[t].idx * P1);
            const float x = in[b].nz[t].val;
            UNROLL for (int c = 0; c < V1; ++c) row[c] += x * d1[c];
        }
        v16 *row = VEC(g + OFF_W1 + (int64_t)(DC + in[b].a) * P1);
        UNROLL for (int c = 0; c < V1; ++c) row[c] += d1[c];
    }
    UNROLL for (int c = 0; c < V2; ++c) VEC(g + OFF_W3)[c] = gw3[c];
    UNROLL for (int c = 0; c < V2; ++c) VEC(g + OFF_B2)[c] = gb2[c];
    UNROLL for (int c = 0; c < V1; ++c) VEC(g + OFF_B1)[c] = gb1[c];
    g[OFF_B3] = gb3;
    /* W2: row i accumulates over the rows b where unit i of layer 1 is alive (lists by unit,
     * gathered from the rows' lists) */
    int count[H1], *live = s->live;
    memset(count, 0, sizeof count);
    for (int b = 0; b < B; ++b) {
        const int *nz1 = rw->nz1 + (int64_t)b * P1;
        for (int t = 0; t < rw->nz1_n[b]; ++t) {
            const int i = nz1[t];
            live[i * B + count[i]++] = b;
        }
    }
    for (int i = 0; i < H1; ++i) {
        v16 acc[V2];
        UNROLL for (int c = 0; c < V2; ++c) acc[c] = (v16){0};
        for (int t = 0; t < count[i]; ++t) {
            const int b = live[i * B + t];
            const float x = rw->h1[(int64_t)b * P1 + i];
            const v16 *d2 = CVEC(rw->d2 + (int64_t)b * P2);
            UNROLL for (int c = 0; c < V2; ++c) acc[c] += x * d2[c];
        }
        UNROLL for (int c = 0; c < V2; ++c) VEC(g + OFF_W2 + (int64_t)i * P2)[c] = acc[c];
    }
}

/* The complexity cost's weight in update u (0-based) of a step's U: β·B/N, or with the
 * re-weighting of Blundell et al. 2015, §3.4, its share U·π_(u+1) of the step's U·β·B/N,
 * π_i = 2^(U−i)/(2^U − 1) = 2^-i/(1 − 2^-U). */
static float kl_weight_of(const hyper_t *h, int64_t u, int64_t U) {
    if (h->kl_geometric == 0.0f) return h->kl_weight;
    const double share = ldexp(1.0, -(int)(u + 1)) / (1.0 - ldexp(1.0, -(int)U));
    return (float)((double)h->kl_weight * (double)U * share);
}

/* The reparameterisation: ∂/∂μ into g[0..NP) and ∂/∂ρ into g[NP..2NP), complexity cost of
 * weight kw added. */
static void reparameterise(const float *restrict mu, const float *restrict mask,
                           const hyper_t *h, float kw, scratch_t *s) {
    float *restrict gm = s->g, *restrict gr = s->g + NP;
    if (h->gaussian != 0.0f) {
        const float bp = kw * h->inv_sp2;
#pragma omp simd
        for (int64_t p = 0; p < NP; ++p) {
            const float gi = gm[p];
            gm[p] = (gi + bp * mu[p]) * mask[p];
            gr[p] = (gi * s->eps[p] + bp * s->sigma[p] - kw / s->sigma[p]) * s->sig[p] * mask[p];
        }
    } else {
        const mixture_t c = mixture_of(h->mixture);
#pragma omp simd
        for (int64_t p = 0; p < NP; ++p) {
            float narrow;
            log_prior(c, s->w[p], &narrow);
            const float gi = gm[p] + mixture_h(c, kw, narrow, s->w[p]);
            gm[p] = gi * mask[p];
            gr[p] = (gi * s->eps[p] - kw / s->sigma[p]) * s->sig[p] * mask[p];
        }
    }
}

/* Adam step t (1-based) of n parameters, as torch.optim.Adam without weight decay. */
static void adam(float *restrict theta, float *restrict m, float *restrict v,
                 const float *restrict g, int64_t n, int64_t t, const hyper_t *h) {
    const double bc1 = 1.0 - pow((double)h->beta1, (double)t);
    const double bc2 = 1.0 - pow((double)h->beta2, (double)t);
    const float step = (float)(h->lr / bc1), inv_bc2_sqrt = (float)(1.0 / sqrt(bc2));
    const float b1 = 1.0f - h->beta1, b2 = h->beta2, c2 = 1.0f - h->beta2, eps = h->eps;
#pragma omp simd
    for (int64_t p = 0; p < n; ++p) {
        m[p] += b1 * (g[p] - m[p]);
        v[p] = b2 * v[p] + c2 * g[p] * g[p];
        theta[p] -= step * m[p] / (sqrtf(v[p]) * inv_bc2_sqrt + eps);
    }
}

/* A plain gradient step of n parameters, as torch.optim.SGD without momentum or decay. */
static void sgd(float *restrict theta, const float *restrict g, int64_t n, float lr) {
#pragma omp simd
    for (int64_t p = 0; p < n; ++p) theta[p] -= lr * g[p];
}

static void *aligned(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

static scratch_t *new_scratch(int B) {
    scratch_t *s = aligned(sizeof(scratch_t));
    memset(s, 0, sizeof(scratch_t));
    s->live = aligned((size_t)H1 * (B > 0 ? B : 1) * sizeof(int));
    return s;
}

static void free_scratch(scratch_t *s) { free(s->live), free(s); }

/* One family's step: U updates of each of its K networks (see the top of this file).
 *   theta, m, v: (K, S) with S = NP (MLP) or 2·NP (BBB: [μ | ρ]); t0: Adam steps so far;
 *   the ring buffers of capacity cap: inputs (K, cap, stride) the contexts' non-zero columns
 *   (the first count (K, cap) of each row), actions (K, cap), rewards (K, cap);
 *   positions (U, K, B): the minibatches; hyper: hyper_t; seed: the step's noise seed.
 * Passed from Python as a ctypes structure of this layout (8-byte fields, then 16 floats). */
typedef struct {
    int64_t K, bayes, t0, cap, stride, U, B;
    uint64_t seed;
    float *theta, *m, *v;
    const nz_t *inputs;
    const int *count;
    const int64_t *actions;
    const float *rewards;
    const int64_t *positions;
    float hyper[16];
} job_t;

/* Per thread: the scratch and the minibatch rows, for minibatches of up to B. */
typedef struct {
    scratch_t *s;
    rows_t rw;
    float *r;
    input_t *in;
} work_t;

static work_t new_work(int B) {
    work_t w;
    w.s = new_scratch(B);
    w.rw.h1 = aligned((size_t)B * P1 * sizeof(float));
    w.rw.h2 = aligned((size_t)B * P2 * sizeof(float));
    w.rw.d2 = aligned((size_t)B * P2 * sizeof(float));
    w.rw.f = aligned((size_t)B * sizeof(float));
    w.rw.nz1 = aligned((size_t)B * P1 * sizeof(int));
    w.rw.nz1_n = aligned((size_t)B * sizeof(int));
    w.rw.nz2 = aligned((size_t)B * P2 * sizeof(int));
    w.rw.nz2_n = aligned((size_t)B * sizeof(int));
    w.r = aligned((size_t)B * sizeof(float));
    w.in = aligned((size_t)B * sizeof(input_t));
    return w;
}

static void free_work(work_t *w) {
    free(w->in), free(w->r), free(w->rw.nz2_n), free(w->rw.nz2), free(w->rw.nz1_n);
    free(w->rw.nz1), free(w->rw.f), free(w->rw.d2), free(w->rw.h2), free(w->rw.h1);
    free_scratch(w->s);
}

/* The U updates of network k of a job. */
static void run_network(const job_t *job, int64_t k, const float *mask, work_t *wk) {
    const hyper_t *h = (const hyper_t *)job->hyper;
    const int64_t S = job->bayes ? 2 * NP : NP, K = job->K, B = job->B;
    float *th = job->theta + k * S, *m = job->m + k * S, *v = job->v + k * S;
    scratch_t *s = wk->s;
    rows_t *rw = &wk->rw;
    for (int64_t u = 0; u < job->U; ++u) {
        const float *w = th;
        if (job->bayes) {
            sample(th, th + NP, mask, tiny_key(job->seed, k, u), s);
            w = s->w;
        }
        const int64_t *pos = job->positions + (u * K + k) * B;
        for (int b = 0; b < B; ++b) {
            const int64_t at = k * job->cap + pos[b];
            wk->in[b] = (input_t){job->inputs + at * job->stride, job->count[at], job->actions[at]};
            wk->r[b] = job->rewards[at];
            rw->f[b] = forward(w, wk->in[b].nz, wk->in[b].n, wk->in[b].a,
                               rw->h1 + (int64_t)b * P1, rw->h2 + (int64_t)b * P2,
                               rw->nz1 + (int64_t)b * P1, rw->nz1_n + b, rw->nz2 + (int64_t)b * P2,
                               rw->nz2_n + b);
        }
        backward(w, (int)B, wk->in, wk->r, h->inv_var, rw, s);
        if (job->bayes) reparameterise(th, mask, h, kl_weight_of(h, u, job->U), s);
        if (h->sgd != 0.0f)
            sgd(th, s->g, S, h->lr);
        else
            adam(th, m, v, s->g, S, job->t0 + u + 1, h);
    }
}

/* The steps of n_jobs families at once: every network of every job is one task, handed out
 * to the threads in order (put the costliest job first), so that one family's few networks
 * do not leave a thread idle; mask (NP): 1 for a real parameter, 0 for padding. */
void tiny_update(int n_jobs, const job_t *jobs, const float *mask, int threads) {
    int64_t tasks = 0, max_b = 1;
    for (int j = 0; j < n_jobs; ++j) {
        tasks += jobs[j].K;
        if (jobs[j].B > max_b) max_b = jobs[j].B;
    }
    int64_t *job_of = malloc((size_t)(tasks > 0 ? tasks : 1) * 2 * sizeof(int64_t));
    int64_t t = 0;
    for (int j = 0; j < n_jobs; ++j)
        for (int64_t k = 0; k < jobs[j].K; ++k) job_of[2 * t] = j, job_of[2 * t + 1] = k, ++t;
#pragma omp parallel num_threads(threads)
    {
        work_t wk = new_work((int)max_b);
        FLUSH_BEGIN
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < tasks; ++i)
            run_network(&jobs[job_of[2 * i]], job_of[2 * i + 1], mask, &wk);
        FLUSH_END
        free_work(&wk);
    }
    free(job_of);
}

/* Each network's value of every action for its own context: out (K, A), contexts (K, DC).
 * A Bayesian network draws one weight sample for all actions (tiny_key(seed, k, ACT_UPDATE)). */
void tiny_values(int K, int bayes, const float *theta, const float *contexts,
                 const float *mask, uint64_t seed, float *out, int threads) {
    const int64_t S = bayes ? 2 * NP : NP;
#pragma omp parallel num_threads(threads)
    {
        scratch_t *s = new_scratch(1);
        float *h1 = aligned(P1 * sizeof(float)), *h2 = aligned(P2 * sizeof(float));
        nz_t in[DC];
        int nz1[P1], nz1_n, nz2[P2], nz2_n;
        FLUSH_BEGIN
#pragma omp for schedule(static)
        for (int k = 0; k < K; ++k) {
            const float *w = theta + k * S;
            if (bayes) {
                sample(w, w + NP, mask, tiny_key(seed, k, ACT_UPDATE), s);
                w = s->w;
            }
            const int n = compact(contexts + (int64_t)k * DC, in);
            for (int a = 0; a < A; ++a)
                out[k * A + a] = forward(w, in, n, a, h1, h2, nz1, &nz1_n, nz2, &nz2_n);
        }
        FLUSH_END
        free(h2), free(h1), free_scratch(s);
    }
}

/* The non-zero columns of n contexts (n, DC) into rows of out (n, stride) and count (n);
 * returns the largest count (a row with more than stride keeps its first stride). */
int64_t tiny_compact(int64_t n, const float *contexts, int64_t stride, nz_t *out, int *count) {
    int64_t most = 0;
    nz_t row[DC];
    for (int64_t i = 0; i < n; ++i) {
        const int c = compact(contexts + i * DC, row);
        memcpy(out + i * stride, row, (size_t)(c < stride ? c : stride) * sizeof(nz_t));
        count[i] = c < stride ? c : (int)stride;
        if (c > most) most = c;
    }
    return most;
}
