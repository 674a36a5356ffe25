"""The integer form of a fully connected layer's output scaling
(kernels/s8_scale_once.h) against the double arithmetic it replaces
(requantize.h's mynpu_scale_once), on the host: every accumulator and
scale drawn, the ones whose scaled value is a half-integer or lies within
one rounding of binary64 from one, ties of the product's rounding to 53
bits beside a half-integer, saturating ones, and zero and non-normal scales
(which the integer form declines); and its one-multiply fast path
(npukit_s8_scale_fast) at every binary64 exponent around its range, for
accumulators on both sides of rounding boundaries and at int32's ends."""

from __future__ import annotations

import subprocess

from npukit.cpu.layer_kernels import KERNELS_DIR
from npukit.runtime.sources import runtime_source_root

PROGRAM = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "requantize.h"
#include "s8_scale_once.h"

static uint64_t state = 0x9e3779b97f4a7c15ull;
static uint64_t draw(void) {
  state ^= state << 13, state ^= state >> 7, state ^= state << 17;
  return state;
}

static int32_t accumulator(void) {
  switch (draw() % 4) {
    case 0: return (int32_t)draw();
    case 1: return (int32_t)(draw() % 2001) - 1000;
    case 2: return (draw() % 2 ? INT32_MIN : INT32_MAX) + (int32_t)(draw() % 3) * (draw() % 2 ? 1 : -1);
    default: return (int32_t)(draw() % (1u << (draw() % 31))) * (draw() % 2 ? 1 : -1);
  }
}

static long differ = 0, fast_checked = 0, fast_taken = 0;

// npukit_s8_scale_fast where it answers, and npukit_s8_scale_bits always, against the double arithmetic.
static void check_fast(int32_t acc, double scale) {
  uint32_t bits[2];
  memcpy(bits, &scale, sizeof bits);
  const int32_t want = mynpu_scale_once(acc, scale);
  int32_t fast = 0;
  ++fast_checked;
  if (npukit_s8_scale_fast(acc, bits, &fast)) {
    ++fast_taken;
    if (fast != want && differ++ < 5) printf("fast: acc %d scale %a: %d, not %d\n", acc, scale, fast, want);
  }
  const int32_t got = npukit_s8_scale_bits(acc, bits);
  if (got != want && differ++ < 5) printf("bits: acc %d scale %a: %d, not %d\n", acc, scale, got, want);
}

int main(void) {
  long checked = 0, declined = 0;
  for (long i = 0; i < 4000000; ++i) {
    int32_t acc = accumulator();
    double scale;
    switch (i % 4) {  // (3: half of the draws are ties, the other half large)
      case 0:  // any 53-bit mantissa
        scale = ldexp((double)(draw() >> 11) / 9007199254740992.0 + 0.5, (int)(draw() % 90) - 70);
        break;
      case 1:  // short mantissas: exact half-integers and ties
        scale = ldexp(1.0 + (double)(draw() % 16) / 16.0, (int)(draw() % 90) - 70);
        break;
      case 2: {  // acc * scale within one rounding of a half-integer
        acc = (int32_t)(draw() % (1u << (1 + draw() % 30))) | 1;
        const double half = (double)((int64_t)(draw() % 4000) - 2000) + 0.5;
        scale = nextafter(half / acc, (draw() % 3 == 0) ? INFINITY : (draw() % 2 ? -INFINITY : half / acc));
        if (draw() % 2) acc = -acc;
        break;
      }
      default:
        if (draw() % 2) {  // large: saturating results
          scale = ldexp((double)(draw() >> 11) / 9007199254740992.0 + 0.5, (int)(draw() % 60) - 20);
          break;
        }
        // A tie of the product's rounding to 53 bits that decides the result: acc = 3 * 2^j and an odd
        // mantissa m in [2^52, 2^54 / 3) give |acc| * m = 3m * 2^j of 54 + j bits, whose lowest 1 + j bits are
        // 2^j (half of their unit), so binary64 rounds it to (3m +- 1) * 2^j, the even one. With m chosen so
        // that 3m + 1 is an odd r times 2^k, and scale = m * 2^-(k + j + 1), the first is the half-integer
        // r / 2 (rounded away from zero) and the second is below it.
        {
          const int k = 30 + (int)(draw() % 22), j = (int)(draw() % 29);
          const uint64_t low = (3ull << 52) >> k, high = (1ull << 54) >> k;
          uint64_t r = (low + draw() % (high - low)) | 1;
          while ((r << k) % 3 != 1) r += 2;
          const uint64_t m = ((r << k) - 1) / 3;
          if (m >> 52 != 1) continue;
          scale = ldexp((double)m, -(k + j + 1));
          acc = (int32_t)(3u << j) * (draw() % 2 ? 1 : -1);
        }
        break;
    }
    if (draw() % 8 == 0) scale = -scale;
    uint32_t bits[2];
    memcpy(bits, &scale, sizeof bits);
    npukit_s8_scale_t s;
    if (!npukit_s8_scale_parts(bits, &s)) {
      ++declined;
      continue;
    }
    ++checked;
    const int32_t want = mynpu_scale_once(acc, scale), got = npukit_s8_scale_once(acc, &s);
    if (want != got && differ++ < 5) printf("acc %d scale %a: %d, not %d\n", acc, scale, got, want);
    check_fast(acc, scale);
  }
  // The one-multiply path at each binary64 exponent around its range (r = -(e + 21) = 31..65; it takes
  // 33..63), for accumulators drawn, at the extremes, and on both sides of every rounding boundary near a
  // drawn one: acc = (k + 1/2) / scale rounded, +- 0..2.
  for (long i = 0; i < 2000000; ++i) {
    const int r = 31 + (int)(i % 35);
    uint64_t bits = (uint64_t)(1054 - r) << 52 | (draw() & 0xfffffffffffffull);
    switch (draw() % 4) {  // mantissas whose top 32 bits or low 21 bits are all ones or all zeros
      case 0: bits |= 0x1fffff; break;
      case 1: bits &= ~0x1fffffull; break;
      case 2: bits |= 0xfffffffe00000ull; break;
      default: break;
    }
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    int32_t acc;
    switch (draw() % 4) {
      case 0: acc = accumulator(); break;
      case 1: {
        const int32_t extremes[] = {INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1, 1, -1, 0};
        acc = extremes[draw() % 7];
        break;
      }
      default: {
        const double limit = 2147483647.0 * scale, k = floor((double)(draw() >> 11) / 9007199254740992.0 * limit);
        const double at = nearbyint((k + 0.5) / scale) + (double)((int)(draw() % 5) - 2);
        acc = at > 2147483647.0 ? INT32_MAX : (int32_t)at;
        if (draw() % 2) acc = acc == INT32_MIN ? INT32_MAX : -acc;
      }
    }
    if (draw() % 8 == 0) scale = -scale;
    check_fast(acc, scale);
  }
  // Zero is taken; subnormal, infinite and NaN scales are declined.
  const double special[] = {0.0, -0.0, 4.9e-324, 2.2e-308, INFINITY, -INFINITY, NAN};
  for (int j = 0; j < 7; ++j) {
    uint32_t bits[2];
    memcpy(bits, &special[j], sizeof bits);
    npukit_s8_scale_t s;
    const int32_t taken = npukit_s8_scale_parts(bits, &s);
    if (taken != (j < 2)) printf("scale %a %s\n", special[j], taken ? "taken" : "declined"), ++differ;
    if (taken && npukit_s8_scale_once(123456, &s) != 0) printf("zero scale: not 0\n"), ++differ;
    int32_t v;
    if (npukit_s8_scale_fast(123456, bits, &v)) printf("scale %a: fast path taken\n", special[j]), ++differ;
    if (j != 6 && npukit_s8_scale_bits(-123456, bits) != mynpu_scale_once(-123456, special[j])) {
      printf("scale %a: scale_bits differs\n", special[j]), ++differ;
    }
  }
  printf("fast checked %ld taken %ld\n", fast_checked, fast_taken);
  printf("checked %ld differ %ld declined %ld\n", checked, differ, declined);
  return 0;
}
"""


def test_integer_scaling_equals_the_double_arithmetic(tmp_path):
    source = tmp_path / "scale_once.c"
    source.write_text(PROGRAM)
    binary = tmp_path / "scale_once"
    mynpu = runtime_source_root() / "hal_driver" / "src" / "mynpu"
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-ffp-contract=off", f"-I{KERNELS_DIR}", f"-I{mynpu}",
                    str(source), "-o", str(binary), "-lm"], check=True)
    out = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    lines = out.strip().splitlines()
    last, fast = lines[-1].split(), lines[-2].split()
    checked, differ = int(last[1]), int(last[3])
    assert differ == 0 and checked > 3_000_000, out
    # The one-multiply path answered most draws, and left some (near boundaries, outside its exponents).
    fast_checked, fast_taken = int(fast[2]), int(fast[4])
    assert fast_checked // 4 < fast_taken < fast_checked, out
