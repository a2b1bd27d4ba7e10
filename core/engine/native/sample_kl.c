/* One-pass CPU kernels of the fused Bayes-by-Backprop step (core/engine/native/__init__.py).
 *
 * Built at first use by core/engine/native/build.py (cc -O3 -march=native -ffast-math -fopenmp;
 * linked without -ffast-math, so that loading it does not switch the process to flush-to-zero).
 * All loops are OpenMP worksharing loops over contiguous float32 arrays, vectorised by the
 * compiler (glibc's libmvec for expf, logf, log1pf, sinf, cosf). The OpenMP runtime is the one
 * PyTorch already loaded (same soname), so the threads are PyTorch's own intra-op threads.
 *
 * Noise: a counter-based generator. The pair p of a draw with seed s is
 * SplitMix64 evaluated at position p of the stream keyed by s (z = mix(s) + (p + 1)·γ, then
 * the SplitMix64 finaliser), and Box-Muller turns its two 32-bit halves into two standard
 * normals. Each value depends only on (s, p), so the draw is the same for any thread count.
 */
#include <math.h>
#include <stdint.h>

#define GOLDEN 0x9E3779B97F4A7C15ULL
#define EXP_CLAMP 80.0f

static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Box-Muller from the SplitMix64 value of pair p: two standard normals. The second is
 * cos(a − π/2) rather than sin(a), which keeps the compiler from fusing the two into a scalar
 * sincosf. */
#define TWO_PI 6.28318530717958647692f
#define NORMAL_PAIR(base, p, c, s)                                                 \
    do {                                                                             \
        const uint64_t h_ = mix64((base) + (uint64_t)((p) + 1) * GOLDEN);            \
        const float u1_ = ((float)(uint32_t)(h_ >> 32) + 0.5f) * 0x1p-32f; /* (0, 1] */ \
        const float u2_ = (float)(uint32_t)h_ * 0x1p-32f;                /* [0, 1] */ \
        const float r_ = sqrtf(-2.0f * logf(u1_));                                   \
        (c) = r_ * cosf(TWO_PI * u2_);                                               \
        (s) = r_ * cosf(TWO_PI * (u2_ - 0.25f));                                     \
    } while (0)
#define BLOCK 64 /* pairs per work item: whole vectors of 16, 8 or 4 lanes, no remainder */

/* BLOCK pairs starting at pair p0 into c[0..BLOCK) and s[0..BLOCK). */
static inline void normal_block(uint64_t base, int64_t p0, float *restrict c, float *restrict s) {
#pragma omp simd
    for (int64_t l = 0; l < BLOCK; ++l) NORMAL_PAIR(base, p0 + l, c[l], s[l]);
}

/* n standard normals into out[0..n), from the stream keyed by seed: pair p gives out[p] and
 * out[n/2 + p] (contiguous stores vectorise), and the last pair an odd n's last value. Every
 * value comes from the same vector code (work items are whole blocks, and the tail is one
 * padded block), so the draw is bit-identical for any thread count. */
void bnn_normal(float *out, int64_t n, uint64_t seed, int threads) {
    const uint64_t base = mix64(seed);
    const int64_t half = n / 2, blocks = half / BLOCK, main = blocks * BLOCK;
    float *lo = out, *hi = out + half;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t b = 0; b < blocks; ++b)
        normal_block(base, b * BLOCK, lo + b * BLOCK, hi + b * BLOCK);
    float c[BLOCK], s[BLOCK];
    normal_block(base, main, c, s);
    for (int64_t l = 0; l < half - main; ++l) lo[main + l] = c[l], hi[main + l] = s[l];
    if (n % 2) out[n - 1] = c[half - main];
}

/* Mixture constants: t0, k (log-odds t = t0 + k·w² of the wide component), log_b0 (the narrow
 * component's log-density at 0), inv_s2 = 1/σ2² (narrow), inv_s1 = 1/σ1² (wide). */
typedef struct {
    float t0, k, log_b0, inv_s2, inv_s1;
} mixture_t;

/* Forward of one piece (a weight or bias tensor of n elements), starting at flat offset `at`.
 *
 * Writes w = μ + σ·ε, σ = softplus(ρ) and sigmoid(ρ) (flat), and for a mixture (mix != NULL)
 * the responsibility 1 − r = sigmoid(−t) of the narrow component (flat; computed directly, so
 * it keeps its relative precision where it is tiny). Adds to sums:
 * [0] Σ log σ, [1] Σ σ², [2] Σ μ² (Gaussian), or [1] Σ ε², [2] Σ log p(w) (mixture).
 */
static void forward_piece(const float *restrict mu, const float *restrict rho, float *restrict w,
                          int64_t n, const float *restrict eps, float *restrict sigma,
                          float *restrict sig, float *restrict narrow, const mixture_t *mix,
                          double *sums, int threads) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0;
    if (mix == 0) {
#pragma omp parallel for simd num_threads(threads) schedule(simd : static) reduction(+ : s0, s1, s2)
        for (int64_t i = 0; i < n; ++i) {
            const float r = rho[i];
            const float u = expf(fminf(r, EXP_CLAMP));
            const float s = fmaxf(log1pf(u), r);
            sigma[i] = s;
            sig[i] = u / (1.0f + u);
            w[i] = mu[i] + s * eps[i];
            s0 += logf(s);
            s1 += s * s;
            s2 += mu[i] * mu[i];
        }
    } else {
        const mixture_t c = *mix;
#pragma omp parallel for simd num_threads(threads) schedule(simd : static) reduction(+ : s0, s1, s2)
        for (int64_t i = 0; i < n; ++i) {
            const float r = rho[i];
            const float u = expf(fminf(r, EXP_CLAMP));
            const float s = fmaxf(log1pf(u), r);
            const float e = eps[i];
            const float x = mu[i] + s * e;
            const float t = c.t0 + c.k * x * x;
            const float q = expf(-fminf(fabsf(t), EXP_CLAMP)); /* e^−|t|, never denormal */
            sigma[i] = s;
            sig[i] = u / (1.0f + u);
            w[i] = x;
            narrow[i] = t >= 0.0f ? q / (1.0f + q) : 1.0f / (1.0f + q); /* 1 − r, accurate */
            s0 += logf(s);
            s1 += e * e;
            /* log p(w) = log b(w) + softplus(t), softplus(t) = max(t, 0) + log1p(e^−|t|) */
            s2 += c.log_b0 - 0.5f * c.inv_s2 * x * x + fmaxf(t, 0.0f) + log1pf(q);
        }
    }
    sums[0] += s0;
    sums[1] += s1;
    sums[2] += s2;
}

/* Forward over k pieces laid out back to back in the flat vectors eps, sigma, sig, narrow. */
void bnn_sample_kl_forward(int k, const float **mu, const float **rho, float **w,
                           const int64_t *sizes, const float *eps, float *sigma, float *sig,
                           float *narrow, const float *mixture, double *sums, int threads) {
    mixture_t c;
    if (mixture) {
        c.t0 = mixture[0], c.k = mixture[1], c.log_b0 = mixture[2], c.inv_s2 = mixture[3];
        c.inv_s1 = mixture[4];
    }
    sums[0] = sums[1] = sums[2] = 0.0;
    int64_t at = 0;
    for (int j = 0; j < k; ++j) {
        forward_piece(mu[j], rho[j], w[j], sizes[j], eps + at, sigma + at, sig + at,
                      mixture ? narrow + at : 0, mixture ? &c : 0, sums, threads);
        at += sizes[j];
    }
}

/* Backward over k pieces: flat d_mu and d_rho from ∂loss/∂w (grad[j], NULL for none) and
 * β = ∂loss/∂KL.
 *
 * Gaussian (mixture == NULL; inv_sp2 = 1/σp²):
 *   dμ = g + β·μ/σp²,  dρ = (g·ε + β·(σ/σp² − 1/σ))·sigmoid(ρ).
 * Mixture (h = β·(1/σ1² + (1 − r)·(1/σ2² − 1/σ1²))·w, no cancellation where r ≈ 1):
 *   dμ = g + h,  dρ = ((g + h)·ε − β/σ)·sigmoid(ρ).
 */
void bnn_sample_kl_backward(int k, const float **grad, const float **mu, const float **w,
                            const int64_t *sizes, const float *eps, const float *sigma,
                            const float *sig, const float *narrow, const float *mixture,
                            float inv_sp2, float beta, float *d_mu, float *d_rho, int threads) {
    int64_t at = 0;
    for (int j = 0; j < k; ++j) {
        const int64_t n = sizes[j];
        const float *restrict g = grad[j];
        const float *restrict e = eps + at, *restrict s = sigma + at, *restrict sg = sig + at;
        float *restrict dm = d_mu + at, *restrict dr = d_rho + at;
        if (mixture == 0) {
            const float *restrict m = mu[j];
            const float bp = beta * inv_sp2;
#pragma omp parallel for simd num_threads(threads) schedule(simd : static)
            for (int64_t i = 0; i < n; ++i) {
                const float gi = g ? g[i] : 0.0f;
                dm[i] = gi + bp * m[i];
                dr[i] = (gi * e[i] + bp * s[i] - beta / s[i]) * sg[i];
            }
        } else {
            const float *restrict x = w[j], *restrict nr = narrow + at;
            const float wide = mixture[4], gap = mixture[3] - mixture[4];
#pragma omp parallel for simd num_threads(threads) schedule(simd : static)
            for (int64_t i = 0; i < n; ++i) {
                const float gi = (g ? g[i] : 0.0f) + beta * (wide + nr[i] * gap) * x[i];
                dm[i] = gi;
                dr[i] = (gi * e[i] - beta / s[i]) * sg[i];
            }
        }
        at += n;
    }
}
