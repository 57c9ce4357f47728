// SPDX-License-Identifier: GPL-2.0-or-later
// GPU kernels of gpup2p-verify, compiled to a fatbin and loaded at run time
// through the CUDA driver API (the tool itself links no CUDA library).

#include <stdint.h>

// Pattern word i of a buffer for seed s: distinct per offset and per run.
// A seed with its top bit set gives the inverse of the pattern of the
// rest, so the two patterns of a source differ in every byte.
__device__ __forceinline__ uint32_t pattern(uint64_t i, uint32_t s)
{
    uint64_t x = i * 0x9E3779B97F4A7C15ull + (s & 0x7fffffffu);
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(x ^ (x >> 29)) ^ (s & 0x80000000u ? ~0u : 0u);
}

extern "C" __global__ void fill_pattern(uint32_t *dst, uint64_t words,
                                        uint32_t seed)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
         i < words; i += (uint64_t)gridDim.x * blockDim.x) {
        dst[i] = pattern(i, seed);
    }
}

// The offset of the first byte that differs from the pattern, or ~0 when
// none does: found here, so that a later copy into the same buffer cannot
// hide which byte it was.
extern "C" __global__ void check_pattern(const uint32_t *buf, uint64_t words,
                                         uint32_t seed,
                                         unsigned long long *first_bad)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
         i < words; i += (uint64_t)gridDim.x * blockDim.x) {
        uint32_t diff = buf[i] ^ pattern(i, seed);

        if (diff) {
            // Little-endian: the lowest differing bit is in the first
            // differing byte.
            unsigned byte = (unsigned)(__ffs((int)diff) - 1) / 8;

            atomicMin(first_bad, (unsigned long long)(i * 4 + byte));
        }
    }
}

// SM copy: 16-byte loads and stores, coalesced, grid-stride. Launched on the
// source GPU, it writes into the peer's memory over the P2P link.
extern "C" __global__ void copy_int4(const int4 *__restrict__ src,
                                     int4 *__restrict__ dst, uint64_t n)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;

    for (; i + 3 * stride < n; i += 4 * stride) {
        int4 a = src[i], b = src[i + stride];
        int4 c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) {
        dst[i] = src[i];
    }
}

// Holds a stream until the host sets *flag (or a time limit passes), so
// that the copies queued behind it start back to back.
extern "C" __global__ void spin(volatile int *flag, uint64_t max_ns)
{
    uint64_t start, now;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (!*flag && now - start < max_ns);
}

// One thread, of block @target, follows a chain of indices through (peer)
// memory from index @start, and adds its time to *ns. Loads use
// ld.global.cv so that no cache answers: each hop is a round trip; with
// @cached (--benchmark), plain loads, as nvbandwidth's chase, which runs
// on each SM in turn.
extern "C" __global__ void pointer_chase(const uint32_t *next, uint32_t hops,
                                         uint32_t *sink,
                                         unsigned long long *ns,
                                         uint32_t cached, uint32_t start,
                                         uint32_t target)
{
    uint32_t at = start;
    uint64_t t0, t1;

    if (blockIdx.x != target) {
        return;
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    if (cached) {
        // nvbandwidth's loads: the default caching of a plain load.
        for (uint32_t h = 0; h < hops; h++) {
            asm volatile("ld.global.u32 %0, [%1];"
                         : "=r"(at) : "l"(next + at) : "memory");
        }
    } else {
        for (uint32_t h = 0; h < hops; h++) {
            asm volatile("ld.global.cv.u32 %0, [%1];"
                         : "=r"(at) : "l"(next + at) : "memory");
        }
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    *sink = at;
    atomicAdd(ns, (unsigned long long)(t1 - t0));
}
