__kernel void fs_elementwise(
    __global const float* restrict t0,
    const long t0_s0,
    const long t0_s1,
    const long t0_s2,
    __global const float* restrict t1,
    const int idx_in1,
    const int idx_n1,
    __global const float* restrict t2,
    const int idx_in0,
    const int t2_s0,
    const int idx_n2,
    __global float* restrict t3,
    const int idx_size)
{
    const int i = get_global_id(0);
    if (i < idx_size) {
        const int idx0 = i / idx_in0;
        const int idx1 = (i / idx_in1) % idx_n1;
        const int idx2 = i % idx_n2;
        const float v0 = t0[idx0 * t0_s0 + idx1 * t0_s1 + idx2 * t0_s2];
        const float v1 = t1[(i / idx_in1) % idx_n1];
        const float v2 = v0 + v1;
        const float v3 = t2[(i / idx_in0) * t2_s0 + i % idx_n2];
        const float v4 = v2 * v3;
        const float v5 = v4 > 0.0f ? v4 : (v4 == -INFINITY ? -0.0f : v4 * 0.0f);
        t3[i] = v5;
    }
}
