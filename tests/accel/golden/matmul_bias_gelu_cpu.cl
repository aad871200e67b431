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

/* erfc(z) in arithmetic only (fusionspec.accel.codegen.mathfn) */
inline __attribute__((always_inline)) float fs_erfc(float z) {
    const float a = as_float(as_uint(z) & 0x7fffffffu);  /* fabs is a call on some drivers */
    const float s = a * a;
    float ps = (-0x1.934cb8p-11f);
    ps = ps * s + 0x1.54ce26p-8f;
    ps = ps * s + (-0x1.b8201p-6f);
    ps = ps * s + 0x1.ce2ef2p-4f;
    ps = ps * s + (-0x1.812746p-2f);
    ps = ps * s + 0x1.20dd76p+0f;
    const float small = 1.0f - a * ps;
    const float q = (a - 2.0f) / (a + 2.0f);
    float pl = (-0x1.f6606ep-13f);
    pl = pl * q + (-0x1.4ae014p-10f);
    pl = pl * q + 0x1.2fba3cp-10f;
    pl = pl * q + 0x1.1baa28p-7f;
    pl = pl * q + (-0x1.0671ccp-7f);
    pl = pl * q + (-0x1.bc1822p-5f);
    pl = pl * q + 0x1.4ff8fcp-3f;
    pl = pl * q + (-0x1.5407fep-3f);
    pl = pl * q + (-0x1.7bf5dep-4f);
    pl = pl * q + 0x1.1ba038p-2f;
    const float ah = as_float(as_uint(a) & 0xfffff000u);  /* 12 bits: ah * ah is exact */
    const float al = a - ah;
    const float large = (1.0f + pl) / (2.0f * a + 1.0f)
                        * fs_exp_hl(-(ah * ah), -(al * (a + ah)));
    const float r = a < 0.5f ? small : (a > 10.0546875f ? 0.0f : large);
    return z < 0.0f ? 2.0f - r : r;
}

/* B of product z as panels of 16 columns: panel p holds rows k = 0..K-1 of columns
   p*16.., zero past N, so the GEMM kernel reads it as one contiguous stream. A work-item
   packs 8 consecutive columns of one row (one vector's worth: contiguous stores, and
   contiguous loads where B is row-major). */
__kernel void fs_gemm_pack_b(
    const int K,
    const int M,
    const int N,
    __global const float* restrict t0,
    const int t0_s0,
    __global const float* restrict t1,
    const int t1_s0,
    __global const float* restrict t2,
    __global float* restrict t3,
    const int t3_s0,
    __global float* restrict packed_b,
    const int panels,
    const int blocks)
{
    const int n0 = get_global_id(0) * 8;
    const int k = get_global_id(1);
    const int z = get_global_id(2);
    if (n0 >= panels * 16)
        return;
    __global float* restrict out = packed_b + ((z * panels + n0 / 16) * K + k) * 16 + n0 % 16;
    for (int e = 0; e < 8; ++e) {
        const int n = n0 + e;
        float v = 0.0f;
        if (n < N) {
            int bi[2];
            bi[0] = k;
            bi[1] = n;
            v = t1[bi[0] * t1_s0 + bi[1]];
        }
        out[e] = v;
    }
}

/* vec_type_hint: the kernel is vectorised by hand; a driver that vectorises across work-items
   (Intel's) would otherwise widen every accumulator again and spill them all. */
__kernel __attribute__((vec_type_hint(float8)))
void fs_gemm(
    const int K,
    const int M,
    const int N,
    __global const float* restrict t0,
    const int t0_s0,
    __global const float* restrict t1,
    const int t1_s0,
    __global const float* restrict t2,
    __global float* restrict t3,
    const int t3_s0,
    __global float* restrict packed_b,
    const int panels,
    const int blocks)
{
    const int block = get_global_id(0);
    const int panel = get_global_id(1);
    const int z = get_global_id(2);
    const int m0 = block * 6;
    if (m0 >= M)
        return;
    const int n0 = panel * 16;
    const __global float* restrict bp = packed_b + (z * panels + panel) * K * 16;
    /* rows past M repeat the last row: their loads stay in bounds, their results are dropped */
    const int row0 = m0 + 0 < M ? m0 + 0 : M - 1;
    float8 c0_0 = 0.0f;
    float8 c0_1 = 0.0f;
    const int row1 = m0 + 1 < M ? m0 + 1 : M - 1;
    float8 c1_0 = 0.0f;
    float8 c1_1 = 0.0f;
    const int row2 = m0 + 2 < M ? m0 + 2 : M - 1;
    float8 c2_0 = 0.0f;
    float8 c2_1 = 0.0f;
    const int row3 = m0 + 3 < M ? m0 + 3 : M - 1;
    float8 c3_0 = 0.0f;
    float8 c3_1 = 0.0f;
    const int row4 = m0 + 4 < M ? m0 + 4 : M - 1;
    float8 c4_0 = 0.0f;
    float8 c4_1 = 0.0f;
    const int row5 = m0 + 5 < M ? m0 + 5 : M - 1;
    float8 c5_0 = 0.0f;
    float8 c5_1 = 0.0f;
    /* A in runs along k (a convolution: the input channels of one tap; a MatMul: all of K):
       each row's window is decoded once per run, then read at a fixed stride. A run whose
       rows all lie inside the input takes a loop without the padding test (a select per
       element that kept one driver's compiler from folding the load into the multiply-add) */
    for (int kt = 0; kt < K; kt += K) {
        int aok0 = 1;
        int aoff0 = 0;
        {
            const int m = row0;
            const int k = kt;
            int aok = 1;
            int aoff = 0;
            int ai[2];
            ai[0] = m;
            ai[1] = k;
            aoff = ai[0] * t0_s0 + ai[1];
            aok0 = aok;
            aoff0 = aoff;
        }
        int aok1 = 1;
        int aoff1 = 0;
        {
            const int m = row1;
            const int k = kt;
            int aok = 1;
            int aoff = 0;
            int ai[2];
            ai[0] = m;
            ai[1] = k;
            aoff = ai[0] * t0_s0 + ai[1];
            aok1 = aok;
            aoff1 = aoff;
        }
        int aok2 = 1;
        int aoff2 = 0;
        {
            const int m = row2;
            const int k = kt;
            int aok = 1;
            int aoff = 0;
            int ai[2];
            ai[0] = m;
            ai[1] = k;
            aoff = ai[0] * t0_s0 + ai[1];
            aok2 = aok;
            aoff2 = aoff;
        }
        int aok3 = 1;
        int aoff3 = 0;
        {
            const int m = row3;
            const int k = kt;
            int aok = 1;
            int aoff = 0;
            int ai[2];
            ai[0] = m;
            ai[1] = k;
            aoff = ai[0] * t0_s0 + ai[1];
            aok3 = aok;
            aoff3 = aoff;
        }
        int aok4 = 1;
        int aoff4 = 0;
        {
            const int m = row4;
            const int k = kt;
            int aok = 1;
            int aoff = 0;
            int ai[2];
            ai[0] = m;
            ai[1] = k;
            aoff = ai[0] * t0_s0 + ai[1];
            aok4 = aok;
            aoff4 = aoff;
        }
        int aok5 = 1;
        int aoff5 = 0;
        {
            const int m = row5;
            const int k = kt;
            int aok = 1;
            int aoff = 0;
            int ai[2];
            ai[0] = m;
            ai[1] = k;
            aoff = ai[0] * t0_s0 + ai[1];
            aok5 = aok;
            aoff5 = aoff;
        }
        for (int c = 0; c < K; ++c) {
            const int k = kt + c;
            /* element loads, not vload: vload is a library call on some CPU drivers */
            const __global float* restrict bk = bp + k * 16;
            const float8 b0 = (float8)(bk[0], bk[1], bk[2], bk[3], bk[4], bk[5], bk[6], bk[7]);
            const float8 b1 = (float8)(bk[8], bk[9], bk[10], bk[11], bk[12], bk[13], bk[14], bk[15]);
            {
                const float a = t0[aoff0 + c];
                c0_0 += a * b0;
                c0_1 += a * b1;
            }
            {
                const float a = t0[aoff1 + c];
                c1_0 += a * b0;
                c1_1 += a * b1;
            }
            {
                const float a = t0[aoff2 + c];
                c2_0 += a * b0;
                c2_1 += a * b1;
            }
            {
                const float a = t0[aoff3 + c];
                c3_0 += a * b0;
                c3_1 += a * b1;
            }
            {
                const float a = t0[aoff4 + c];
                c4_0 += a * b0;
                c4_1 += a * b1;
            }
            {
                const float a = t0[aoff5 + c];
                c5_0 += a * b0;
                c5_1 += a * b1;
            }

        }

    }
    float8 sums[12];
    sums[0] = c0_0;
    sums[1] = c0_1;
    sums[2] = c1_0;
    sums[3] = c1_1;
    sums[4] = c2_0;
    sums[5] = c2_1;
    sums[6] = c3_0;
    sums[7] = c3_1;
    sums[8] = c4_0;
    sums[9] = c4_1;
    sums[10] = c5_0;
    sums[11] = c5_1;
    const float* accs = (const float*)sums;
    /* one exit per loop (the bounds first): a loop the compiler can vectorise */
    const int rows = M - m0 < 6 ? M - m0 : 6;
    const int cols = N - n0 < 16 ? N - n0 : 16;
    for (int i = 0; i < rows; ++i) {
        const int m = m0 + i;
        for (int j = 0; j < cols; ++j) {
            const int n = n0 + j;
            int idx[2];
            idx[0] = m;
            idx[1] = n;
            float acc = accs[i * 16 + j];
            const float v0 = acc + t2[idx[1]];
            const float v1 = v0 == -INFINITY ? -0.0f : 0.5f * v0 * fs_erfc(-v0 * M_SQRT1_2_F);
            t3[idx[0] * t3_s0 + idx[1]] = v1;
        }
    }
}
