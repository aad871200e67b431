#pragma OPENCL EXTENSION cl_khr_fp16 : enable

__kernel void fs_elementwise(
    __global const float* restrict t1,
    const long t1_s0,
    __global const float* restrict t2,
    const long t2_s0,
    __global const float* restrict t3,
    const long t3_s0,
    __global const float* restrict t4,
    const long t4_s0,
    __global const half* restrict t0,
    const long t0_s0,
    const long t0_s1,
    const long t0_s2,
    const long t0_s3,
    __global half* restrict t6)
{
    for (int i = get_global_id(0); i < 400; i += get_global_size(0)) {
        int idx[4];
        int rest = i;
        idx[3] = rest % 8;
        rest /= 8;
        idx[2] = rest % 5;
        rest /= 5;
        idx[1] = rest % 5;
        rest /= 5;
        idx[0] = rest;
        const float e1 = t1[(idx[3]) * t1_s0];
        const float e2 = t2[(idx[3]) * t2_s0];
        const float e3 = t3[(idx[3]) * t3_s0];
        const float e4 = t4[(idx[3]) * t4_s0];
        const float v0 = convert_float(t0[idx[0] * t0_s0 + idx[1] * t0_s1 + idx[2] * t0_s2 + idx[3] * t0_s3]);
        const float v5 = e1 * (v0 - e3) / sqrt(e4 + 0x1.0624dep-10f) + e2;
        const float v6 = v5 > 0.0f ? v5 : (isinf(v5) ? -0.0f : v5 * 0.0f);
        t6[i] = convert_half_rte(v6);
    }
}
