/* n / d.x for 0 <= n < 2**31 as a multiply and a shift (d from the host: divisor, multiplier,
   shift): vectorises like a division by a constant, where a division by an argument does not */
inline int fs_div(int n, uint4 d) { return (int)(((ulong)(uint)n * d.y) >> d.z); }

inline int fs_mod(int n, uint4 d) { return n - fs_div(n, d) * (int)d.x; }

/* B of product z as panels of 16 columns: panel p holds rows k = 0..K-1 of columns
   p*16.., zero past N, so the GEMM kernel reads it as one contiguous stream. A work-item
   packs 8 consecutive columns of one row (one vector's worth: contiguous stores, and
   contiguous loads where B is row-major). */
__kernel void fs_gemm_pack_b(
    const uint4 out0_div,
    const uint4 out1_div,
    const uint4 ker1_div,
    const uint4 icg_div,
    const int dil0,
    const int pad0,
    const int in0,
    const int stride0,
    const int dil1,
    const int pad1,
    const int in1,
    const int stride1,
    const int icg,
    const int ocg,
    const int M,
    const int N,
    const int K,
    __global const float* restrict t0,
    const int t0_s0,
    const int t0_s1,
    const int t0_s2,
    __global const float* restrict t1,
    const int t1_s0,
    const int t1_s1,
    const int t1_s2,
    __global float* restrict t2,
    const int t2_s0,
    const int t2_s1,
    const int t2_s2,
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
            int b_kr = k;
            const int b_k2 = fs_mod(b_kr, icg_div);
            b_kr = fs_div(b_kr, icg_div);
            const int b_k1 = fs_mod(b_kr, ker1_div);
            b_kr = fs_div(b_kr, ker1_div);
            const int b_k0 = b_kr;
            int bi[4];
            bi[0] = z * ocg + n;
            bi[1] = b_k2;
            bi[2] = b_k0;
            bi[3] = b_k1;
            v = t1[bi[0] * t1_s0 + bi[1] * t1_s1 + bi[2] * t1_s2 + bi[3]];
        }
        out[e] = v;
    }
}

/* vec_type_hint: the kernel is vectorised by hand; a driver that vectorises across work-items
   (Intel's) would otherwise widen every accumulator again and spill them all. */
__kernel __attribute__((vec_type_hint(float8)))
void fs_gemm(
    const uint4 out0_div,
    const uint4 out1_div,
    const uint4 ker1_div,
    const uint4 icg_div,
    const int dil0,
    const int pad0,
    const int in0,
    const int stride0,
    const int dil1,
    const int pad1,
    const int in1,
    const int stride1,
    const int icg,
    const int ocg,
    const int M,
    const int N,
    const int K,
    __global const float* restrict t0,
    const int t0_s0,
    const int t0_s1,
    const int t0_s2,
    __global const float* restrict t1,
    const int t1_s0,
    const int t1_s1,
    const int t1_s2,
    __global float* restrict t2,
    const int t2_s0,
    const int t2_s1,
    const int t2_s2,
    __global float* restrict packed_b,
    const int panels,
    const int blocks)
{
    const int block = get_global_id(0);
    const int panel = get_global_id(1);
    const int z = get_global_id(2);
    const int m0 = block * 4;
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
    /* A in runs along k (a convolution: the input channels of one tap; a MatMul: all of K):
       each row's window is decoded once per run, then read at a fixed stride. A run whose
       rows all lie inside the input takes a loop without the padding test (a select per
       element that kept one driver's compiler from folding the load into the multiply-add) */
    for (int kt = 0; kt < K; kt += icg) {
        int aok0 = 1;
        int aoff0 = 0;
        {
            const int m = row0;
            const int k = kt;
            int aok = 1;
            int aoff = 0;
            int a_mr = m;
            const int a_m2 = fs_mod(a_mr, out1_div);
            a_mr = fs_div(a_mr, out1_div);
            const int a_m1 = fs_mod(a_mr, out0_div);
            a_mr = fs_div(a_mr, out0_div);
            const int a_m0 = a_mr;
            int a_kr = k;
            const int a_k2 = fs_mod(a_kr, icg_div);
            a_kr = fs_div(a_kr, icg_div);
            const int a_k1 = fs_mod(a_kr, ker1_div);
            a_kr = fs_div(a_kr, ker1_div);
            const int a_k0 = a_kr;
            const int a_i0 = a_m1 * stride0 + a_k0 * dil0 - pad0;
            const int a_i1 = a_m2 * stride1 + a_k1 * dil1 - pad1;
            int ai[4];
            ai[0] = a_m0;
            ai[1] = z * icg + a_k2;
            ai[2] = a_i0;
            ai[3] = a_i1;
            aok = a_i0 >= 0 && a_i0 < in0 && a_i1 >= 0 && a_i1 < in1;
            aoff = aok ? ai[0] * t0_s0 + ai[1] * t0_s1 + ai[2] * t0_s2 + ai[3] : 0;
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
            int a_mr = m;
            const int a_m2 = fs_mod(a_mr, out1_div);
            a_mr = fs_div(a_mr, out1_div);
            const int a_m1 = fs_mod(a_mr, out0_div);
            a_mr = fs_div(a_mr, out0_div);
            const int a_m0 = a_mr;
            int a_kr = k;
            const int a_k2 = fs_mod(a_kr, icg_div);
            a_kr = fs_div(a_kr, icg_div);
            const int a_k1 = fs_mod(a_kr, ker1_div);
            a_kr = fs_div(a_kr, ker1_div);
            const int a_k0 = a_kr;
            const int a_i0 = a_m1 * stride0 + a_k0 * dil0 - pad0;
            const int a_i1 = a_m2 * stride1 + a_k1 * dil1 - pad1;
            int ai[4];
            ai[0] = a_m0;
            ai[1] = z * icg + a_k2;
            ai[2] = a_i0;
            ai[3] = a_i1;
            aok = a_i0 >= 0 && a_i0 < in0 && a_i1 >= 0 && a_i1 < in1;
            aoff = aok ? ai[0] * t0_s0 + ai[1] * t0_s1 + ai[2] * t0_s2 + ai[3] : 0;
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
            int a_mr = m;
            const int a_m2 = fs_mod(a_mr, out1_div);
            a_mr = fs_div(a_mr, out1_div);
            const int a_m1 = fs_mod(a_mr, out0_div);
            a_mr = fs_div(a_mr, out0_div);
            const int a_m0 = a_mr;
            int a_kr = k;
            const int a_k2 = fs_mod(a_kr, icg_div);
            a_kr = fs_div(a_kr, icg_div);
            const int a_k1 = fs_mod(a_kr, ker1_div);
            a_kr = fs_div(a_kr, ker1_div);
            const int a_k0 = a_kr;
            const int a_i0 = a_m1 * stride0 + a_k0 * dil0 - pad0;
            const int a_i1 = a_m2 * stride1 + a_k1 * dil1 - pad1;
            int ai[4];
            ai[0] = a_m0;
            ai[1] = z * icg + a_k2;
            ai[2] = a_i0;
            ai[3] = a_i1;
            aok = a_i0 >= 0 && a_i0 < in0 && a_i1 >= 0 && a_i1 < in1;
            aoff = aok ? ai[0] * t0_s0 + ai[1] * t0_s1 + ai[2] * t0_s2 + ai[3] : 0;
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
            int a_mr = m;
            const int a_m2 = fs_mod(a_mr, out1_div);
            a_mr = fs_div(a_mr, out1_div);
            const int a_m1 = fs_mod(a_mr, out0_div);
            a_mr = fs_div(a_mr, out0_div);
            const int a_m0 = a_mr;
            int a_kr = k;
            const int a_k2 = fs_mod(a_kr, icg_div);
            a_kr = fs_div(a_kr, icg_div);
            const int a_k1 = fs_mod(a_kr, ker1_div);
            a_kr = fs_div(a_kr, ker1_div);
            const int a_k0 = a_kr;
            const int a_i0 = a_m1 * stride0 + a_k0 * dil0 - pad0;
            const int a_i1 = a_m2 * stride1 + a_k1 * dil1 - pad1;
            int ai[4];
            ai[0] = a_m0;
            ai[1] = z * icg + a_k2;
            ai[2] = a_i0;
            ai[3] = a_i1;
            aok = a_i0 >= 0 && a_i0 < in0 && a_i1 >= 0 && a_i1 < in1;
            aoff = aok ? ai[0] * t0_s0 + ai[1] * t0_s1 + ai[2] * t0_s2 + ai[3] : 0;
            aok3 = aok;
            aoff3 = aoff;
        }
        if (aok0 && aok1 && aok2 && aok3) {
            for (int c = 0; c < icg; ++c) {
                const int k = kt + c;
                /* element loads, not vload: vload is a library call on some CPU drivers */
                const __global float* restrict bk = bp + k * 16;
                const float8 b0 = (float8)(bk[0], bk[1], bk[2], bk[3], bk[4], bk[5], bk[6], bk[7]);
                const float8 b1 = (float8)(bk[8], bk[9], bk[10], bk[11], bk[12], bk[13], bk[14], bk[15]);
                {
                    const float a = t0[aoff0 + c * t0_s1];
                    c0_0 += a * b0;
                    c0_1 += a * b1;
                }
                {
                    const float a = t0[aoff1 + c * t0_s1];
                    c1_0 += a * b0;
                    c1_1 += a * b1;
                }
                {
                    const float a = t0[aoff2 + c * t0_s1];
                    c2_0 += a * b0;
                    c2_1 += a * b1;
                }
                {
                    const float a = t0[aoff3 + c * t0_s1];
                    c3_0 += a * b0;
                    c3_1 += a * b1;
                }

            }

        } else {
            for (int c = 0; c < icg; ++c) {
                const int k = kt + c;
                /* element loads, not vload: vload is a library call on some CPU drivers */
                const __global float* restrict bk = bp + k * 16;
                const float8 b0 = (float8)(bk[0], bk[1], bk[2], bk[3], bk[4], bk[5], bk[6], bk[7]);
                const float8 b1 = (float8)(bk[8], bk[9], bk[10], bk[11], bk[12], bk[13], bk[14], bk[15]);
                {
                    const float x = t0[aoff0 + c * t0_s1];
                    const float a = aok0 ? x : 0.0f;
                    c0_0 += a * b0;
                    c0_1 += a * b1;
                }
                {
                    const float x = t0[aoff1 + c * t0_s1];
                    const float a = aok1 ? x : 0.0f;
                    c1_0 += a * b0;
                    c1_1 += a * b1;
                }
                {
                    const float x = t0[aoff2 + c * t0_s1];
                    const float a = aok2 ? x : 0.0f;
                    c2_0 += a * b0;
                    c2_1 += a * b1;
                }
                {
                    const float x = t0[aoff3 + c * t0_s1];
                    const float a = aok3 ? x : 0.0f;
                    c3_0 += a * b0;
                    c3_1 += a * b1;
                }

            }

        }
    }
    float8 sums[8];
    sums[0] = c0_0;
    sums[1] = c0_1;
    sums[2] = c1_0;
    sums[3] = c1_1;
    sums[4] = c2_0;
    sums[5] = c2_1;
    sums[6] = c3_0;
    sums[7] = c3_1;
    const float* accs = (const float*)sums;
    /* one exit per loop (the bounds first): a loop the compiler can vectorise */
    const int rows = M - m0 < 4 ? M - m0 : 4;
    const int cols = N - n0 < 16 ? N - n0 : 16;
    for (int i = 0; i < rows; ++i) {
        const int m = m0 + i;
        for (int j = 0; j < cols; ++j) {
            const int n = n0 + j;
            int d_mr = m;
            const int d_m2 = fs_mod(d_mr, out1_div);
            d_mr = fs_div(d_mr, out1_div);
            const int d_m1 = fs_mod(d_mr, out0_div);
            d_mr = fs_div(d_mr, out0_div);
            const int d_m0 = d_mr;
            int idx[4];
            idx[0] = d_m0;
            idx[1] = z * ocg + n;
            idx[2] = d_m1;
            idx[3] = d_m2;
            float acc = accs[i * 16 + j];
            const float v0 = acc > 0.0f ? acc : (acc == -INFINITY ? -0.0f : acc * 0.0f);
            t2[idx[0] * t2_s0 + idx[1] * t2_s1 + idx[2] * t2_s2 + idx[3]] = v0;
        }
    }
}
