/* Shared by the kernels of core/engine/native and core/bandits/kernel: counter-based normal noise and the scale-mixture
 * prior's helpers (see sample_kl.c for the generator's definition). */
#ifndef BNN_NATIVE_COMMON_H
#define BNN_NATIVE_COMMON_H
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
/* Mixture constants: t0, k (log-odds t = t0 + k·w² of the wide component), log_b0 (the narrow
 * component's log-density at 0), inv_s2 = 1/σ2² (narrow), inv_s1 = 1/σ1² (wide); passed from
 * Python as five floats in this order. */
typedef struct {
    float t0, k, log_b0, inv_s2, inv_s1;
} mixture_t;

static inline mixture_t mixture_of(const float *m) {
    const mixture_t c = {m[0], m[1], m[2], m[3], m[4]};
    return c;
}

/* σ = softplus(ρ) to a few ulp (log1p of e^ρ, e^ρ clamped; ρ itself where larger), and
 * sigmoid(ρ) into *sig. */
static inline float softplus_sig(float r, float *sig) {
    const float u = expf(fminf(r, EXP_CLAMP));
    *sig = u / (1.0f + u);
    return fmaxf(log1pf(u), r);
}

/* log p(w) of the scale mixture, and the narrow component's responsibility 1 − r = sigmoid(−t)
 * into *narrow (computed directly, so it keeps its relative precision where it is tiny).
 * log p(w) = log b(w) + softplus(t) with softplus(t) = max(t, 0) + log1p(e^−|t|). */
static inline float log_prior(mixture_t c, float x, float *narrow) {
    const float t = c.t0 + c.k * x * x;
    const float q = expf(-fminf(fabsf(t), EXP_CLAMP)); /* e^−|t|, never denormal */
    *narrow = t >= 0.0f ? q / (1.0f + q) : 1.0f / (1.0f + q);
    return c.log_b0 - 0.5f * c.inv_s2 * x * x + fmaxf(t, 0.0f) + log1pf(q);
}

/* β·dKL/dw of the mixture at w, from the narrow responsibility:
 * β·(1/σ1² + (1 − r)·(1/σ2² − 1/σ1²))·w, with no cancellation where r ≈ 1. */
static inline float mixture_h(mixture_t c, float beta, float narrow, float x) {
    return beta * (c.inv_s1 + narrow * (c.inv_s2 - c.inv_s1)) * x;
}

#endif
