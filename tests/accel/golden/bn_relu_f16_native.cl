#pragma OPENCL EXTENSION cl_khr_fp16 : enable

__kernel void fs_elementwise(
    __global const float* restrict t1,
    __global const float* restrict t2,
    __global const float* restrict t3,
    __global const float* restrict t4,
    __global const half* restrict t0,
    __global half* restrict t6)
{
    const int i = get_global_id(0);
    if (i < 400) {
        const int idx3 = i % 8;
        const float e1 = t1[idx3];
        const float e2 = t2[idx3];
        const float e3 = t3[idx3];
        const float e4 = t4[idx3];
        const float v0 = convert_float(t0[i]);
        const float v5 = e1 * (v0 - e3) / sqrt(e4 + 0x1.0624dep-10f) + e2;
        const float v6 = v5 > 0.0f ? v5 : (v5 == -INFINITY ? -0.0f : v5 * 0.0f);
        t6[i] = convert_half_rte(v6);
    }
}
