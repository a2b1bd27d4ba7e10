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

#include "common.h"

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

#define PRAGMA(x) _Pragma(#x)
#define PARALLEL_FOR PRAGMA(omp parallel for simd num_threads(threads) schedule(simd : static))
#define PARALLEL_SUM(...)                                                                     \
    PRAGMA(omp parallel for simd num_threads(threads) schedule(simd : static)                \
               reduction(+ : __VA_ARGS__))

/* Weight sampling: forward over k pieces laid out back to back in the flat vectors eps, sigma,
 * sig and narrow (the latter for a mixture only, mixture != NULL).
 *
 * Writes w = μ + σ·ε per piece, σ, sigmoid(ρ), and for a mixture the narrow responsibility at w.
 * sums: [0] Σ log σ, [1] Σ σ², [2] Σ μ² (Gaussian), or [1] Σ ε², [2] Σ log p(w) (mixture).
 */
void bnn_sample_kl_forward(int k, const float **mu, const float **rho, float **w,
                           const int64_t *sizes, const float *eps, float *sigma, float *sig,
                           float *narrow, const float *mixture, double *sums, int threads) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0;
    int64_t at = 0;
    for (int j = 0; j < k; ++j) {
        const int64_t n = sizes[j];
        const float *restrict m = mu[j], *restrict r = rho[j], *restrict e = eps + at;
        float *restrict x = w[j], *restrict s = sigma + at, *restrict sg = sig + at;
        if (mixture == 0) {
            PARALLEL_SUM(s0, s1, s2)
            for (int64_t i = 0; i < n; ++i) {
                s[i] = softplus_sig(r[i], &sg[i]);
                x[i] = m[i] + s[i] * e[i];
                s0 += logf(s[i]);
                s1 += s[i] * s[i];
                s2 += m[i] * m[i];
            }
        } else {
            const mixture_t c = mixture_of(mixture);
            float *restrict nr = narrow + at;
            PARALLEL_SUM(s0, s1, s2)
            for (int64_t i = 0; i < n; ++i) {
                s[i] = softplus_sig(r[i], &sg[i]);
                x[i] = m[i] + s[i] * e[i];
                s0 += logf(s[i]);
                s1 += e[i] * e[i];
                s2 += log_prior(c, x[i], &nr[i]);
            }
        }
        at += n;
    }
    sums[0] = s0, sums[1] = s1, sums[2] = s2;
}

/* Weight sampling: backward over k pieces, flat d_mu and d_rho from ∂loss/∂w (grad[j], NULL
 * for none) and β = ∂loss/∂KL.
 *
 * Gaussian (mixture == NULL; inv_sp2 = 1/σp²):
 *   dμ = g + β·μ/σp²,  dρ = (g·ε + β·(σ/σp² − 1/σ))·sigmoid(ρ).
 * Mixture (h = mixture_h at the draw w):
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
            PARALLEL_FOR
            for (int64_t i = 0; i < n; ++i) {
                const float gi = g ? g[i] : 0.0f;
                dm[i] = gi + bp * m[i];
                dr[i] = (gi * e[i] + bp * s[i] - beta / s[i]) * sg[i];
            }
        } else {
            const mixture_t c = mixture_of(mixture);
            const float *restrict x = w[j], *restrict nr = narrow + at;
            PARALLEL_FOR
            for (int64_t i = 0; i < n; ++i) {
                const float gi = (g ? g[i] : 0.0f) + mixture_h(c, beta, nr[i], x[i]);
                dm[i] = gi;
                dr[i] = (gi * e[i] - beta / s[i]) * sg[i];
            }
        }
        at += n;
    }
}

/* Local reparameterisation: forward over k pieces, `samples` passes.
 *
 * Writes σ² per piece (var[j], the variance product's weights), σ and sigmoid(ρ) (flat).
 * sums: [0] Σ log σ, [1] Σ σ², [2] Σ μ²; for a mixture (mixture != NULL) also, per pass p, one
 * weight draw w_p = μ + σ·ε_p (eps row p, flat) with [3 + 2p] Σ ε_p² and [4 + 2p] Σ log p(w_p),
 * and the narrow responsibilities at w_p into row p of narrow (samples × N).
 */
void bnn_sigma_kl_forward(int k, const float **mu, const float **rho, float **var,
                          const int64_t *sizes, int64_t samples, const float *eps, float *sigma,
                          float *sig, float *narrow, const float *mixture, double *sums,
                          int threads) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0;
    int64_t at = 0, total = 0;
    for (int j = 0; j < k; ++j) total += sizes[j];
    for (int j = 0; j < k; ++j) {
        const int64_t n = sizes[j];
        const float *restrict m = mu[j], *restrict r = rho[j];
        float *restrict v = var[j], *restrict s = sigma + at, *restrict sg = sig + at;
        PARALLEL_SUM(s0, s1, s2)
        for (int64_t i = 0; i < n; ++i) {
            s[i] = softplus_sig(r[i], &sg[i]);
            v[i] = s[i] * s[i];
            s0 += logf(s[i]);
            s1 += v[i];
            s2 += m[i] * m[i];
        }
        at += n;
    }
    sums[0] = s0, sums[1] = s1, sums[2] = s2;
    if (mixture == 0) return;
    const mixture_t c = mixture_of(mixture);
    for (int64_t p = 0; p < samples; ++p) { /* a row of N stays in cache; an (S, N) batch not */
        double ee = 0.0, lp = 0.0;
        at = 0;
        for (int j = 0; j < k; ++j) {
            const int64_t n = sizes[j];
            const float *restrict m = mu[j], *restrict s = sigma + at;
            const float *restrict e = eps + p * total + at;
            float *restrict nr = narrow + p * total + at;
            PARALLEL_SUM(ee, lp)
            for (int64_t i = 0; i < n; ++i) {
                ee += e[i] * e[i];
                lp += log_prior(c, m[i] + s[i] * e[i], &nr[i]);
            }
            at += n;
        }
        sums[3 + 2 * p] = ee, sums[4 + 2 * p] = lp;
    }
}

/* Local reparameterisation: backward over k pieces, flat d_mu and d_rho from ∂loss/∂σ²
 * (grad_var[j], NULL for none) and β = ∂loss/∂KL: one value (Gaussian) or one per pass
 * (mixture), beta[0..samples).
 *
 * Gaussian: dμ = β·μ/σp², dρ = (2σ·g + β·(σ/σp² − 1/σ))·sigmoid(ρ).
 * Mixture (h_p = mixture_h at w_p = μ + σ·ε_p, recomputed):
 *   dμ = Σ_p h_p,  dρ = (2σ·g + Σ_p (h_p·ε_p − β_p/σ))·sigmoid(ρ).
 */
void bnn_sigma_kl_backward(int k, const float **grad_var, const float **mu, const int64_t *sizes,
                           int64_t samples, const float *eps, const float *sigma,
                           const float *sig, const float *narrow, const float *mixture,
                           float inv_sp2, const float *beta, float *d_mu, float *d_rho,
                           int threads) {
    int64_t at = 0, total = 0;
    for (int j = 0; j < k; ++j) total += sizes[j];
    float beta_sum = 0.0f;
    for (int64_t p = 0; p < (mixture ? samples : 1); ++p) beta_sum += beta[p];
    for (int j = 0; j < k; ++j) {
        const int64_t n = sizes[j];
        const float *restrict g = grad_var[j], *restrict m = mu[j];
        const float *restrict s = sigma + at, *restrict sg = sig + at;
        float *restrict dm = d_mu + at, *restrict dr = d_rho + at;
        if (mixture == 0) {
            const float b = beta[0], bp = b * inv_sp2;
            PARALLEL_FOR
            for (int64_t i = 0; i < n; ++i) {
                const float gi = g ? g[i] : 0.0f;
                dm[i] = bp * m[i];
                dr[i] = (2.0f * s[i] * gi + bp * s[i] - b / s[i]) * sg[i];
            }
        } else {
            /* one vectorised pass per draw (a loop over the draws inside the loop over the
             * weights does not vectorise), Σ_p h_p in dm and Σ_p h_p·ε_p in dr, then dr's rest */
            const mixture_t c = mixture_of(mixture);
            for (int64_t p = 0; p < samples; ++p) {
                const float *restrict e = eps + p * total + at;
                const float *restrict nr = narrow + p * total + at;
                const float b = beta[p];
                if (p == 0) {
                    PARALLEL_FOR
                    for (int64_t i = 0; i < n; ++i) {
                        const float h = mixture_h(c, b, nr[i], m[i] + s[i] * e[i]);
                        dm[i] = h;
                        dr[i] = h * e[i];
                    }
                } else {
                    PARALLEL_FOR
                    for (int64_t i = 0; i < n; ++i) {
                        const float h = mixture_h(c, b, nr[i], m[i] + s[i] * e[i]);
                        dm[i] += h;
                        dr[i] += h * e[i];
                    }
                }
            }
            PARALLEL_FOR
            for (int64_t i = 0; i < n; ++i) {
                const float gi = g ? g[i] : 0.0f;
                dr[i] = (2.0f * s[i] * gi + dr[i] - beta_sum / s[i]) * sg[i];
            }
        }
        at += n;
    }
}
