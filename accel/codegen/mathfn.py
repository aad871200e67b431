"""Transcendental functions written out in arithmetic, for the code paths where a builtin costs
more than the work around it.

On PoCL's CPU device a builtin such as ``erfc`` or ``exp`` is a call into its kernel library:
the call alone keeps the work-item loop from being vectorised (``erfc`` took 60-70 ns per element,
``exp`` 6 ns, against 0.5 ns for a vectorised ``exp`` of the same library), and even ``fabs``,
``rint`` and ``fma`` are calls there. The helpers below use only
``+ - * /``, comparisons, selects and bit casts, so they inline and vectorise on every driver.
They are marked ``always_inline``: PoCL keeps a plain ``inline`` function of this size as a
call.

Accuracy (checked against SciPy in float64 over the whole f32 range, on PoCL and on Intel's
CPU runtime; see tests/accel/test_mathfn.py):

- ``fs_exp_hl(hi, lo)``: exp(hi + lo) for hi <= 0 and |lo| below an ulp of hi (the rounding
  error of a difference, carried separately): within 1 ulp on normal results, 0 below
  exp(-104). Cody-Waite reduction by ln 2 (the high part of ln 2 has 16 bits, so k * ln2_hi is
  exact), a degree-6 polynomial fitted on [-ln2/2, ln2/2], and the power of two applied in two
  halves so that results in the denormal range keep their scale. The nearest integer is taken
  with the 1.5 * 2**23 trick (exact without fast-math options, which are never used).
- ``fs_erfc(z)``: within 3e-7 relative (about 4 ulp) wherever erfc(z) is a normal f32; 0 past
  z = 10.0546875 (erfc is below the smallest denormal there). For |z| < 0.5, 1 - z * P(z**2);
  beyond, exp(-z**2) * (1 + P(q)) / (1 + 2|z|) with q = (|z| - 2) / (|z| + 2), the form of
  Norbert Juffa's erfcf, with coefficients fitted here; exp(-z**2) gets z**2 as an exact
  high part and a low part, so its argument carries no rounding error. Negative z: 2 - erfc(-z).

The OpenCL builtins promise 3 ulp (``exp``) and 16 ulp (``erfc``), so these are at least as
accurate as the functions they replace; the suite allows 4e-5 relative for GELU.
"""

from __future__ import annotations

__all__ = ["MATH_HELPERS", "MATH_DEPS", "exp_helper_name"]

#: exp's polynomial: exp(r) = 1 + r + r**2 * (c0 + c1 r + ... + c4 r**4) on [-ln2/2, ln2/2]
#: (a least-squares fit; its error is far below the f32 roundings of the evaluation).
_EXP_COEFFS = ("0x1.fffff8p-2f", "0x1.55547ep-3f", "0x1.555bd4p-5f", "0x1.12479cp-7f",
               "0x1.68592ep-10f")
#: erf(a) / a as a polynomial in a**2 on [0, 0.25].
_ERF_SMALL = ("0x1.20dd76p+0f", "(-0x1.812746p-2f)", "0x1.ce2ef2p-4f", "(-0x1.b8201p-6f)",
              "0x1.54ce26p-8f", "(-0x1.934cb8p-11f)")
#: (1 + 2a) exp(a**2) erfc(a) - 1 as a polynomial in q = (a - 2) / (a + 2), a in [0.5, 10.06].
_ERFC_LARGE = ("0x1.1ba038p-2f", "(-0x1.7bf5dep-4f)", "(-0x1.5407fep-3f)", "0x1.4ff8fcp-3f",
               "(-0x1.bc1822p-5f)", "(-0x1.0671ccp-7f)", "0x1.1baa28p-7f", "0x1.2fba3cp-10f",
               "(-0x1.4ae014p-10f)", "(-0x1.f6606ep-13f)")


def _horner(name: str, var: str, coeffs: tuple[str, ...], ctype: str) -> str:
    lines = [f"    {ctype} {name} = {coeffs[-1]};"]
    lines += [f"    {name} = {name} * {var} + {c};" for c in reversed(coeffs[:-1])]
    return "\n".join(lines)


def exp_helper_name(width: int) -> str:
    """The name of ``fs_exp_hl`` for a vector width (1: the scalar)."""
    return "fs_exp_hl" if width == 1 else f"fs_exp_hl{width}"


def _exp_helper(width: int) -> str:
    f = "float" if width == 1 else f"float{width}"
    i = "int" if width == 1 else f"int{width}"
    cvt = "(int)" if width == 1 else f"convert_int{width}"
    as_f = "as_float" if width == 1 else f"as_float{width}"
    name = exp_helper_name(width)
    return f"""\
/* exp(hi + lo) for hi <= 0, lo the rounding error of hi (fusionspec.accel.codegen.mathfn) */
inline __attribute__((always_inline)) {f} {name}({f} hi, {f} lo) {{
    const {f} h = hi > -104.0f ? hi : -104.0f;
    const {f} k = (h * 0x1.715476p+0f + 12582912.0f) - 12582912.0f;
    const {f} r = ((h - k * 0x1.62e4p-1f) + lo) - k * 0x1.7f7d1cp-20f;
{_horner("p", "r", _EXP_COEFFS, f)}
    const {f} e = 1.0f + (r + r * r * p);
    const {i} ki = {cvt}(k);
    const {i} k1 = ki / 2;
    const {f} v = e * {as_f}((k1 + 127) << 23) * {as_f}((ki - k1 + 127) << 23);
    return hi != hi ? hi : (hi < -104.0f ? ({f})(0.0f) : v);
}}"""


_ERFC = f"""\
/* erfc(z) in arithmetic only (fusionspec.accel.codegen.mathfn) */
inline __attribute__((always_inline)) float fs_erfc(float z) {{
    const float a = as_float(as_uint(z) & 0x7fffffffu);  /* fabs is a call on some drivers */
    const float s = a * a;
{_horner("ps", "s", _ERF_SMALL, "float")}
    const float small = 1.0f - a * ps;
    const float q = (a - 2.0f) / (a + 2.0f);
{_horner("pl", "q", _ERFC_LARGE, "float")}
    const float ah = as_float(as_uint(a) & 0xfffff000u);  /* 12 bits: ah * ah is exact */
    const float al = a - ah;
    const float large = (1.0f + pl) / (2.0f * a + 1.0f)
                        * fs_exp_hl(-(ah * ah), -(al * (a + ah)));
    const float r = a < 0.5f ? small : (a > 10.0546875f ? 0.0f : large);
    return z < 0.0f ? 2.0f - r : r;
}}"""

#: Helper name -> C text; merged into `fusionspec.accel.codegen.types.HELPERS`.
MATH_HELPERS: dict[str, str] = {
    "fs_exp_hl": _exp_helper(1),
    "fs_exp_hl4": _exp_helper(4),
    "fs_exp_hl8": _exp_helper(8),
    "fs_erfc": _ERFC,
}
#: Helper name -> the helpers it calls.
MATH_DEPS: dict[str, tuple[str, ...]] = {"fs_erfc": ("fs_exp_hl",)}
