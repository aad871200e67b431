/* n / d.x for 0 <= n < 2**31 as a multiply and a shift (d from the host: divisor, multiplier,
   shift): vectorises like a division by a constant, where a division by an argument does not */
inline int fs_div(int n, uint4 d) { return (int)(((ulong)(uint)n * d.y) >> d.z); }

/* exp(hi + lo) for hi <= 0, lo the rounding error of hi (fusionspec.accel.codegen.mathfn) */
inline __attribute__((always_inline)) float fs_exp_hl(float hi, float lo) {
    const float h = hi > -104.0f ? hi : -104.0f;
    const float k = (h * 0x1.715476p+0f + 12582912.0f) - 12582912.0f;
    const float r = ((h - k * 0x1.62e4p-1f) + lo) - k * 0x1.7f7d1cp-20f;
    float p = 0x1.68592ep-10f;
    p = p * r + 0x1.12479cp-7f;
    p = p * r + 0x1.555bd4p-5f;
    p = p * r + 0x1.55547ep-3f;
    p = p * r + 0x1.fffff8p-2f;
    const float e = 1.0f + (r + r * r * p);
    const int ki = (int)(k);
    const int k1 = ki / 2;
    const float v = e * as_float((k1 + 127) << 23) * as_float((ki - k1 + 127) << 23);
    return hi != hi ? hi : (hi < -104.0f ? (float)(0.0f) : v);
}

/* exp(hi + lo) for hi <= 0, lo the rounding error of hi (fusionspec.accel.codegen.mathfn) */
inline __attribute__((always_inline)) float8 fs_exp_hl8(float8 hi, float8 lo) {
    const float8 h = hi > -104.0f ? hi : -104.0f;
    const float8 k = (h * 0x1.715476p+0f + 12582912.0f) - 12582912.0f;
    const float8 r = ((h - k * 0x1.62e4p-1f) + lo) - k * 0x1.7f7d1cp-20f;
    float8 p = 0x1.68592ep-10f;
    p = p * r + 0x1.12479cp-7f;
    p = p * r + 0x1.555bd4p-5f;
    p = p * r + 0x1.55547ep-3f;
    p = p * r + 0x1.fffff8p-2f;
    const float8 e = 1.0f + (r + r * r * p);
    const int8 ki = convert_int8(k);
    const int8 k1 = ki / 2;
    const float8 v = e * as_float8((k1 + 127) << 23) * as_float8((ki - k1 + 127) << 23);
    return hi != hi ? hi : (hi < -104.0f ? (float8)(0.0f) : v);
}

inline int fs_mod(int n, uint4 d) { return n - fs_div(n, d) * (int)d.x; }

/* max that propagates NaN (fmax would drop it), as NumPy's max does. NaN and infinity tests
   here are comparisons: PoCL's isnan/isfinite are calls that block vectorisation. */
inline float fs_sm_max(float a, float b) { return (a > b || a != a) ? a : b; }

/* exp(x - m) without the rounding of x - m: the difference's error term (TwoSum) goes into
   the exponential's argument (fs_exp_hl), so a large |x - m| does not amplify one f32
   rounding */
inline __attribute__((always_inline)) float fs_sm_exp(float x, float m) {
    const float d = x - m;
    const float bb = d - x;
    const float err = (x - (d - bb)) + (-m - bb);
    return fs_exp_hl(d, err);
}
/* one element into the running (maximum, compensated sum): the sum is rescaled when the
   maximum grows; an element equal to the maximum adds exactly 1 (also when both are -inf,
   which would otherwise make NaN of a row whose later elements are finite) */
inline __attribute__((always_inline)) void fs_sm_step(float* m, float* h, float* l, float x) {
    const float mn = (x > *m || x != x) ? x : *m;
    const float sc = *m == mn ? (float)(1.0f) : fs_sm_exp(*m, mn);
    const float e = x == mn ? (float)(1.0f) : fs_sm_exp(x, mn);
    const float hs = *h * sc;
    const float sum = hs + e;
    const float bb = sum - hs;
    *l = *l * sc + ((hs - (sum - bb)) + (e - bb));
    *h = sum;
    *m = mn;
}


inline __attribute__((always_inline)) float8 fs_sm_exp8(float8 x, float8 m) {
    const float8 d = x - m;
    const float8 bb = d - x;
    const float8 err = (x - (d - bb)) + (-m - bb);
    return fs_exp_hl8(d, err);
}
/* one element into the running (maximum, compensated sum): the sum is rescaled when the
   maximum grows; an element equal to the maximum adds exactly 1 (also when both are -inf,
   which would otherwise make NaN of a row whose later elements are finite) */
inline __attribute__((always_inline)) void fs_sm_step8(float8* m, float8* h, float8* l, float8 x) {
    const float8 mn = (x > *m || x != x) ? x : *m;
    const float8 sc = *m == mn ? (float8)(1.0f) : fs_sm_exp8(*m, mn);
    const float8 e = x == mn ? (float8)(1.0f) : fs_sm_exp8(x, mn);
    const float8 hs = *h * sc;
    const float8 sum = hs + e;
    const float8 bb = sum - hs;
    *l = *l * sc + ((hs - (sum - bb)) + (e - bb));
    *h = sum;
    *m = mn;
}


/* four vectors into the running (maximum, compensated sum) at once: one rescale for the four,
   so the pass takes one exponential per element plus one per four vectors */
inline __attribute__((always_inline)) void fs_sm_chunk8(float8* m, float8* h, float8* l, float8 x0, float8 x1, float8 x2, float8 x3) {
    const float8 a = (x1 > x0 || x1 != x1) ? x1 : x0;
    const float8 b = (x3 > x2 || x3 != x3) ? x3 : x2;
    const float8 c = (b > a || b != b) ? b : a;
    const float8 mn = (c > *m || c != c) ? c : *m;
    const float8 sc = *m == mn ? (float8)(1.0f) : fs_sm_exp8(*m, mn);
    float8 hs = *h * sc;
    float8 ls = *l * sc;
    {
        const float8 e = x0 == mn ? (float8)(1.0f) : fs_sm_exp8(x0, mn);
        const float8 sum = hs + e;
        const float8 bb = sum - hs;
        ls += (hs - (sum - bb)) + (e - bb);
        hs = sum;
    }
    {
        const float8 e = x1 == mn ? (float8)(1.0f) : fs_sm_exp8(x1, mn);
        const float8 sum = hs + e;
        const float8 bb = sum - hs;
        ls += (hs - (sum - bb)) + (e - bb);
        hs = sum;
    }
    {
        const float8 e = x2 == mn ? (float8)(1.0f) : fs_sm_exp8(x2, mn);
        const float8 sum = hs + e;
        const float8 bb = sum - hs;
        ls += (hs - (sum - bb)) + (e - bb);
        hs = sum;
    }
    {
        const float8 e = x3 == mn ? (float8)(1.0f) : fs_sm_exp8(x3, mn);
        const float8 sum = hs + e;
        const float8 bb = sum - hs;
        ls += (hs - (sum - bb)) + (e - bb);
        hs = sum;
    }
    *h = hs;
    *l = ls;
    *m = mn;
}

/* two running (maximum, compensated sum) pairs into the first */
inline __attribute__((always_inline)) void fs_sm_merge(float* m, float* h, float* l, float mb, float hb, float lb) {
    const float mn = (mb > *m || mb != mb) ? mb : *m;
    const float sa = *m == mn ? 1.0f : fs_sm_exp(*m, mn);
    const float sb = mb == mn ? 1.0f : fs_sm_exp(mb, mn);
    const float x = *h * sa;
    const float y = hb * sb;
    const float t = x + y;
    const float bb = t - x;
    *l = *l * sa + lb * sb + ((x - (t - bb)) + (y - bb));
    *h = t;
    *m = mn;
}

/* vec_type_hint: vectorised by hand along the row (see gemm.cl.j2) */
__kernel __attribute__((vec_type_hint(float8)))
void fs_softmax(
    __global const float* restrict t0,
    const int t0_s0,
    __global float* restrict t1,
    const int t1_s0,
    const uint4 idx_n0_div,
    const long rows,
    const long row_length)
{
    const long row = get_global_id(0);
    if (row >= rows)
        return;
    long idx[2];
    int rest = row;
    idx[0] = rest;
    float m = -INFINITY;
    float sh = 0.0f;
    float sl = 0.0f;
    const int base = row * row_length;
    long k = 0;
    {
        float8 mv = -INFINITY;
        float8 hv = 0.0f;
        float8 lv = 0.0f;
        for (; k + 32 <= row_length; k += 32)
            fs_sm_chunk8(&mv, &hv, &lv, (float8)(t0[base + k + 0], t0[base + k + 1], t0[base + k + 2], t0[base + k + 3], t0[base + k + 4], t0[base + k + 5], t0[base + k + 6], t0[base + k + 7]), (float8)(t0[base + k + 8], t0[base + k + 9], t0[base + k + 10], t0[base + k + 11], t0[base + k + 12], t0[base + k + 13], t0[base + k + 14], t0[base + k + 15]), (float8)(t0[base + k + 16], t0[base + k + 17], t0[base + k + 18], t0[base + k + 19], t0[base + k + 20], t0[base + k + 21], t0[base + k + 22], t0[base + k + 23]), (float8)(t0[base + k + 24], t0[base + k + 25], t0[base + k + 26], t0[base + k + 27], t0[base + k + 28], t0[base + k + 29], t0[base + k + 30], t0[base + k + 31]));
        for (; k + 8 <= row_length; k += 8)
            fs_sm_step8(&mv, &hv, &lv, (float8)(t0[base + k + 0], t0[base + k + 1], t0[base + k + 2], t0[base + k + 3], t0[base + k + 4], t0[base + k + 5], t0[base + k + 6], t0[base + k + 7]));
        fs_sm_merge(&m, &sh, &sl, mv.s0, hv.s0, lv.s0);
        fs_sm_merge(&m, &sh, &sl, mv.s1, hv.s1, lv.s1);
        fs_sm_merge(&m, &sh, &sl, mv.s2, hv.s2, lv.s2);
        fs_sm_merge(&m, &sh, &sl, mv.s3, hv.s3, lv.s3);
        fs_sm_merge(&m, &sh, &sl, mv.s4, hv.s4, lv.s4);
        fs_sm_merge(&m, &sh, &sl, mv.s5, hv.s5, lv.s5);
        fs_sm_merge(&m, &sh, &sl, mv.s6, hv.s6, lv.s6);
        fs_sm_merge(&m, &sh, &sl, mv.s7, hv.s7, lv.s7);
    }
    for (; k < row_length; ++k)
        fs_sm_step(&m, &sh, &sl, t0[base + k]);
    /* no finite maximum (+inf, NaN, or only -inf): undefined, NaN as the reference has it */
    const float s = m - m == 0.0f ? sh + sl : NAN;
    const int empty = 0;
    for (k = 0; k + 8 <= row_length; k += 8) {
        float8 ys[1];
        ys[0] = fs_sm_exp8((float8)(t0[base + k + 0], t0[base + k + 1], t0[base + k + 2], t0[base + k + 3], t0[base + k + 4], t0[base + k + 5], t0[base + k + 6], t0[base + k + 7]), (float8)(m)) / s;
        for (int e = 0; e < 8; ++e) {
            idx[1] = k + e;
            float acc = empty ? 0.0f : ((const float*)ys)[e];
            t1[idx[0] * t1_s0 + idx[1]] = acc;
        }
    }
    for (; k < row_length; ++k) {
        idx[1] = k;
        float acc = empty ? 0.0f : fs_sm_exp(t0[base + k], m) / s;
        t1[idx[0] * t1_s0 + idx[1]] = acc;
    }
}
