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
inline __attribute__((always_inline)) float8 fs_sm_exp8(float8 x, float8 m) {
    const float8 d = x - m;
    const float8 bb = d - x;
    const float8 err = (x - (d - bb)) + (-m - bb);
    return fs_exp_hl8(d, err);
}

inline __attribute__((always_inline)) float8 fs_sm_max8(float8 a, float8 b) {
    return (a > b || a != a) ? a : b;
}

/* vec_type_hint: vectorised by hand along the row (see gemm_register.cl.j2) */
__kernel __attribute__((vec_type_hint(float8)))
void fs_softmax(
    __global const float* restrict t0,
    const int t0_s0,
    __global float* restrict t1,
    const int t1_s0,
    const uint4 idx_n0_div,
    const long rows,
    const long row_length,
    __global float* restrict exps)
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
        /* four maxima and then four sums in flight: one accumulator would make each step
           wait for the previous one */
        float8 m0 = -INFINITY;
        float8 m1 = -INFINITY;
        float8 m2 = -INFINITY;
        float8 m3 = -INFINITY;
        for (; k + 32 <= row_length; k += 32) {
            m0 = fs_sm_max8(m0, (float8)(t0[base + k + 0], t0[base + k + 1], t0[base + k + 2], t0[base + k + 3], t0[base + k + 4], t0[base + k + 5], t0[base + k + 6], t0[base + k + 7]));
            m1 = fs_sm_max8(m1, (float8)(t0[base + k + 8], t0[base + k + 9], t0[base + k + 10], t0[base + k + 11], t0[base + k + 12], t0[base + k + 13], t0[base + k + 14], t0[base + k + 15]));
            m2 = fs_sm_max8(m2, (float8)(t0[base + k + 16], t0[base + k + 17], t0[base + k + 18], t0[base + k + 19], t0[base + k + 20], t0[base + k + 21], t0[base + k + 22], t0[base + k + 23]));
            m3 = fs_sm_max8(m3, (float8)(t0[base + k + 24], t0[base + k + 25], t0[base + k + 26], t0[base + k + 27], t0[base + k + 28], t0[base + k + 29], t0[base + k + 30], t0[base + k + 31]));
        }
        for (; k + 8 <= row_length; k += 8)
            m0 = fs_sm_max8(m0, (float8)(t0[base + k + 0], t0[base + k + 1], t0[base + k + 2], t0[base + k + 3], t0[base + k + 4], t0[base + k + 5], t0[base + k + 6], t0[base + k + 7]));
        m0 = fs_sm_max8(fs_sm_max8(m0, m1), fs_sm_max8(m2, m3));
        m = fs_sm_max(m, m0.s0);
        m = fs_sm_max(m, m0.s1);
        m = fs_sm_max(m, m0.s2);
        m = fs_sm_max(m, m0.s3);
        m = fs_sm_max(m, m0.s4);
        m = fs_sm_max(m, m0.s5);
        m = fs_sm_max(m, m0.s6);
        m = fs_sm_max(m, m0.s7);
        for (; k < row_length; ++k)
            m = fs_sm_max(m, t0[base + k]);
        const float8 mv = (float8)(m);
        float8 s0 = 0.0f;
        float8 s1 = 0.0f;
        float8 s2 = 0.0f;
        float8 s3 = 0.0f;
        for (k = 0; k + 32 <= row_length; k += 32) {
            const float8 e0 = fs_sm_exp8((float8)(t0[base + k + 0], t0[base + k + 1], t0[base + k + 2], t0[base + k + 3], t0[base + k + 4], t0[base + k + 5], t0[base + k + 6], t0[base + k + 7]), mv);
            s0 += e0;
            vstore8(e0, 0, exps + base + k + 0);
            const float8 e1 = fs_sm_exp8((float8)(t0[base + k + 8], t0[base + k + 9], t0[base + k + 10], t0[base + k + 11], t0[base + k + 12], t0[base + k + 13], t0[base + k + 14], t0[base + k + 15]), mv);
            s1 += e1;
            vstore8(e1, 0, exps + base + k + 8);
            const float8 e2 = fs_sm_exp8((float8)(t0[base + k + 16], t0[base + k + 17], t0[base + k + 18], t0[base + k + 19], t0[base + k + 20], t0[base + k + 21], t0[base + k + 22], t0[base + k + 23]), mv);
            s2 += e2;
            vstore8(e2, 0, exps + base + k + 16);
            const float8 e3 = fs_sm_exp8((float8)(t0[base + k + 24], t0[base + k + 25], t0[base + k + 26], t0[base + k + 27], t0[base + k + 28], t0[base + k + 29], t0[base + k + 30], t0[base + k + 31]), mv);
            s3 += e3;
            vstore8(e3, 0, exps + base + k + 24);
        }
        for (; k + 8 <= row_length; k += 8) {
            const float8 e0 = fs_sm_exp8((float8)(t0[base + k + 0], t0[base + k + 1], t0[base + k + 2], t0[base + k + 3], t0[base + k + 4], t0[base + k + 5], t0[base + k + 6], t0[base + k + 7]), mv);
            s0 += e0;
            vstore8(e0, 0, exps + base + k);
        }
        s0 = (s0 + s1) + (s2 + s3);
        sh += s0.s0;
        sh += s0.s1;
        sh += s0.s2;
        sh += s0.s3;
        sh += s0.s4;
        sh += s0.s5;
        sh += s0.s6;
        sh += s0.s7;
        for (; k < row_length; ++k) {
            const float e0 = fs_sm_exp(t0[base + k], m);
            sh += e0;
            exps[base + k] = e0;
        }
    }
    /* no finite maximum (+inf, NaN, or only -inf): undefined, NaN as the reference has it */
    const float s = m - m == 0.0f ? sh + sl : NAN;
    const int empty = 0;
    const float inv = 1.0f / s;
    for (k = 0; k + 8 <= row_length; k += 8) {
        float8 ys[1];
        ys[0] = vload8(0, exps + base + k) * inv;
        for (int e = 0; e < 8; ++e) {
            idx[1] = k + e;
            float acc = empty ? 0.0f : ((const float*)ys)[e];
            t1[idx[0] * t1_s0 + idx[1]] = acc;
        }
    }
    for (; k < row_length; ++k) {
        idx[1] = k;
        float acc = empty ? 0.0f : exps[base + k] * inv;
        t1[idx[0] * t1_s0 + idx[1]] = acc;
    }
}
