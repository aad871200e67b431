inline float fs_nan_to_zero(float value) { return isnan(value) ? 0.0f : value; }

inline float fs_quantize_rne(float a, float zp) {
    /* round_half_even(a + zp) for an integral zp, without rounding a's fraction away first:
       the fraction is split off (exactly), and only an exact .5 lets the parity of the sum
       decide. An infinite a stays infinite (the store saturates it). */
    const float whole = trunc(a);
    const float frac = a - whole;
    const float base = whole + zp;
    const float q = fabs(frac) == 0.5f ? rint(base + frac) : base + rint(frac);
    return isinf(a) ? a : q;
}

__constant float op1_scales[3] = {0x1p-2f, 0x1p-1f, 0x1p+0f};

__constant float op1_zps[3] = {0x0p+0f, 0x0p+0f, 0x0p+0f};

__kernel void fs_elementwise(
    __global const uchar* restrict t1,
    const long t1_s0,
    const long t1_s1,
    const long t1_s2,
    __global const uchar* restrict t0,
    const long t0_s0,
    const long t0_s1,
    const long t0_s2,
    __global uchar* restrict t6)
{
    for (int i = get_global_id(0); i < 24; i += get_global_size(0)) {
        int idx[3];
        int rest = i;
        idx[2] = rest % 4;
        rest /= 4;
        idx[1] = rest % 3;
        rest /= 3;
        idx[0] = rest;
        const long v1 = (long)t1[idx[0] * t1_s0 + idx[1] * t1_s1 + idx[2] * t1_s2];
        const float v3 = (convert_float(v1) - op1_zps[idx[1]]) * op1_scales[idx[1]];
        const long v0 = (long)t0[idx[0] * t0_s0 + idx[1] * t0_s1 + idx[2] * t0_s2];
        const float v2 = (convert_float(v0) - 0x1.8p+1f) * 0x1p-1f;
        const float v4 = v2;
        const float v5 = v4 + v3;
        const long v6 = (long)convert_uchar_sat_rte(fs_nan_to_zero(fs_quantize_rne(v5 / 0x1p-1f, 0x1.8p+1f)));
        t6[i] = (uchar)clamp((long)(v6), 0L, 255L);
    }
}
