/* n / d.x for 0 <= n < 2**31 as a multiply and a shift (d from the host: divisor, multiplier,
   shift): vectorises like a division by a constant, where a division by an argument does not */
inline int fs_div(int n, uint4 d) { return (int)(((ulong)(uint)n * d.y) >> d.z); }

inline int fs_mod(int n, uint4 d) { return n - fs_div(n, d) * (int)d.x; }

__kernel void fs_elementwise(
    __global const float* restrict t0,
    const long t0_s0,
    const long t0_s1,
    const long t0_s2,
    __global const float* restrict t1,
    const uint4 idx_in1_div,
    const uint4 idx_n1_div,
    __global const float* restrict t2,
    const uint4 idx_in0_div,
    const int t2_s0,
    const uint4 idx_n2_div,
    __global float* restrict t3,
    const int idx_size)
{
    const int i = get_global_id(0);
    if (i < idx_size) {
        const int idx0 = fs_div(i, idx_in0_div);
        const int idx1 = fs_mod(fs_div(i, idx_in1_div), idx_n1_div);
        const int idx2 = fs_mod(i, idx_n2_div);
        const float v0 = t0[idx0 * t0_s0 + idx1 * t0_s1 + idx2 * t0_s2];
        const float v1 = t1[fs_mod(fs_div(i, idx_in1_div), idx_n1_div)];
        const float v2 = v0 + v1;
        const float v3 = t2[(fs_div(i, idx_in0_div)) * t2_s0 + fs_mod(i, idx_n2_div)];
        const float v4 = v2 * v3;
        const float v5 = v4 > 0.0f ? v4 : (v4 == -INFINITY ? -0.0f : v4 * 0.0f);
        t3[i] = v5;
    }
}
