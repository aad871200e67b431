#pragma OPENCL EXTENSION cl_khr_fp16 : enable

__kernel void fs_elementwise(
    __global const float* restrict t0,
    __global const float* restrict t1,
    __global const float* restrict t2,
    __global const float* restrict t3,
    const float epsilon0,
    __global const half* restrict t4,
    __global half* restrict t5,
    const int idx_size,
    const int idx_n3)
{
    const int i = get_global_id(0);
    if (i < idx_size) {
        const int idx3 = i % idx_n3;
        const float e0 = t0[idx3];
        const float e1 = t1[idx3];
        const float e2 = t2[idx3];
        const float e3 = t3[idx3];
        const float v0 = convert_float(t4[i]);
        const float v1 = e0 * (v0 - e2) / sqrt(e3 + epsilon0) + e1;
        const float v2 = v1 > 0.0f ? v1 : (v1 == -INFINITY ? -0.0f : v1 * 0.0f);
        t5[i] = convert_half_rte(v2);
    }
}
