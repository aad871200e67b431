__kernel void fs_elementwise(
    __global const float* restrict t0,
    const long t0_s0,
    const long t0_s1,
    const long t0_s2,
    __global const float* restrict t1,
    __global const float* restrict t2,
    __global float* restrict t5)
{
    const int i = get_global_id(0);
    if (i < 24) {
        const int idx0 = i / 12;
        const int idx1 = (i / 4) % 3;
        const int idx2 = i % 4;
        const float v0 = t0[idx0 * t0_s0 + idx1 * t0_s1 + idx2 * t0_s2];
        const float v1 = t1[(i / 4) % 3];
        const float v3 = v0 + v1;
        const float v2 = t2[(i / 12) * 4 + i % 4];
        const float v4 = v3 * v2;
        const float v5 = v4 > 0.0f ? v4 : (v4 == -INFINITY ? -0.0f : v4 * 0.0f);
        t5[i] = v5;
    }
}
