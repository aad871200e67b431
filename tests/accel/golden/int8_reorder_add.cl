/* n / d.x for 0 <= n < 2**31 as a multiply and a shift (d from the host: divisor, multiplier,
   shift): vectorises like a division by a constant, where a division by an argument does not */
inline int fs_div(int n, uint4 d) { return (int)(((ulong)(uint)n * d.y) >> d.z); }

inline int fs_mod(int n, uint4 d) { return n - fs_div(n, d) * (int)d.x; }

inline float fs_nan_to_zero(float value) { return value != value ? 0.0f : value; }

inline float fs_rint(float x) {
    /* rint as arithmetic (PoCL's rint, trunc and fabs are library calls that keep a kernel
       from being vectorised: its Quantize ran at 10 ns an element): adding and taking away
       2**23 (8388608) leaves no fraction bits, rounding to nearest even; from 2**23 up x is
       whole, and NaN fails the test and stays. The sign goes back on: -0.3 gives -0. */
    const uint sign = as_uint(x) & 2147483648u;
    const float ax = as_float(as_uint(x) ^ sign);
    const float r = (ax + 8388608.0f) - 8388608.0f;
    return ax < 8388608.0f ? as_float(as_uint(r) | sign) : x;
}

inline float fs_trunc(float x) {
    /* trunc as arithmetic (see fs_rint): |x| rounded to nearest, less one where that went up */
    const uint sign = as_uint(x) & 2147483648u;
    const float ax = as_float(as_uint(x) ^ sign);
    const float r = (ax + 8388608.0f) - 8388608.0f;
    const float t = r > ax ? r - 1.0f : r;
    return ax < 8388608.0f ? as_float(as_uint(t) | sign) : x;
}

inline float fs_quantize_rne(float a, float zp) {
    /* round_half_even(a + zp) for an integral zp, without rounding a's fraction away first:
       the fraction is split off (exactly), and only an exact .5 lets the parity of the sum
       decide. An infinite a stays infinite (the store saturates it). */
    const float whole = fs_trunc(a);
    const float frac = a - whole;
    const float base = whole + zp;
    const float q = as_float(as_uint(frac) & 2147483647u) == 0.5f ? fs_rint(base + frac)
                                                               : base + fs_rint(frac);
    return (a == INFINITY || a == -INFINITY) ? a : q;
}

__kernel void fs_elementwise(
    __global const float* restrict scales0,
    __global const float* restrict zps0,
    __global const uchar* restrict t0,
    const float scale0,
    const float zp0,
    __global const uchar* restrict t1,
    const float scale1,
    const float zp1,
    __global uchar* restrict t2,
    const int idx_size,
    const uint4 idx_in1_div,
    const uint4 idx_n1_div)
{
    const int i = get_global_id(0);
    if (i < idx_size) {
        const int idx1 = fs_mod(fs_div(i, idx_in1_div), idx_n1_div);
        const long v0 = (long)t0[i];
        const float v0f = (float)t0[i];
        const float v1 = (v0f - zps0[idx1]) * scales0[idx1];
        const long v2 = (long)t1[i];
        const float v2f = (float)t1[i];
        const float v3 = (v2f - zp0) * scale0;
        const float v4 = v3;
        const float v5 = v4 + v1;
        const long v6 = (long)(int)clamp(fs_nan_to_zero(fs_quantize_rne(v5 / scale1, zp1)), 0.0f, 255.0f);
        t2[i] = (uchar)clamp((long)(v6), 0L, 255L);
    }
}
