inline float fs_nan_to_zero(float value) { return value != value ? 0.0f : value; }

inline float fs_quantize_rne(float a, float zp) {
    /* round_half_even(a + zp) for an integral zp, without rounding a's fraction away first:
       the fraction is split off (exactly), and only an exact .5 lets the parity of the sum
       decide. An infinite a stays infinite (the store saturates it). */
    const float whole = trunc(a);
    const float frac = a - whole;
    const float base = whole + zp;
    const float q = fabs(frac) == 0.5f ? rint(base + frac) : base + rint(frac);
    return (a == INFINITY || a == -INFINITY) ? a : q;
}

__constant float op1_scales[3] = {0x1p-2f, 0x1p-1f, 0x1p+0f};

__constant float op1_zps[3] = {0x0p+0f, 0x0p+0f, 0x0p+0f};

__kernel void fs_elementwise(
    __global const uchar* restrict t1,
    __global const uchar* restrict t0,
    __global uchar* restrict t6)
{
    const int i = get_global_id(0);
    if (i < 24) {
        const int idx1 = (i / 4) % 3;
        const long v1 = (long)t1[i];
        const float v3 = (convert_float(v1) - op1_zps[idx1]) * op1_scales[idx1];
        const long v0 = (long)t0[i];
        const float v2 = (convert_float(v0) - 0x1.8p+1f) * 0x1p-1f;
        const float v4 = v2;
        const float v5 = v4 + v3;
        const long v6 = (long)convert_uchar_sat_rte(fs_nan_to_zero(fs_quantize_rne(v5 / 0x1p-1f, 0x1.8p+1f)));
        t6[i] = (uchar)clamp((long)(v6), 0L, 255L);
    }
}
