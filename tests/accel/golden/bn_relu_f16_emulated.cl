/* n / d.x for 0 <= n < 2**31 as a multiply and a shift (d from the host: divisor, multiplier,
   shift): vectorises like a division by a constant, where a division by an argument does not */
inline int fs_div(int n, uint4 d) { return (int)(((ulong)(uint)n * d.y) >> d.z); }

inline int fs_mod(int n, uint4 d) { return n - fs_div(n, d) * (int)d.x; }

__kernel void fs_elementwise(
    __global const float* restrict t0,
    __global const float* restrict t1,
    __global const float* restrict t2,
    __global const float* restrict t3,
    const float epsilon0,
    __global const half* restrict t4,
    __global half* restrict t5,
    const int idx_size,
    const uint4 idx_n3_div)
{
    const int i = get_global_id(0);
    if (i < idx_size) {
        const int idx3 = fs_mod(i, idx_n3_div);
        const float e0 = t0[idx3];
        const float e1 = t1[idx3];
        const float e2 = t2[idx3];
        const float e3 = t3[idx3];
        const float v0 = vload_half(i, t4);
        const float v1 = e0 * (v0 - e2) / sqrt(e3 + epsilon0) + e1;
        const float v2 = v1 > 0.0f ? v1 : (v1 == -INFINITY ? -0.0f : v1 * 0.0f);
        vstore_half_rte(v2, i, t5);
    }
}
