// SPDX-License-Identifier: GPL-2.0-or-later
// Reference for gpup2p-verify's figures: a plain cudaMemcpyPeerAsync loop
// between every ordered pair, events around 8 copies, median of 3 samples,
// unidirectional and bidirectional. Prints one JSON line per figure.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

int main(int argc, char **argv)
{
    size_t bytes = (argc > 1 ? atol(argv[1]) : 512) << 20;
    const int loops = 8, samples = 3;
    int n;

    CHECK(cudaGetDeviceCount(&n));
    void **buf = (void **)calloc(n, sizeof(void *));
    void **buf2 = (void **)calloc(n, sizeof(void *));
    for (int d = 0; d < n; d++) {
        CHECK(cudaSetDevice(d));
        CHECK(cudaMalloc(&buf[d], bytes));
        CHECK(cudaMalloc(&buf2[d], bytes));
        for (int p = 0; p < n; p++) {
            int can = 0;
            if (p != d && cudaDeviceCanAccessPeer(&can, d, p) == cudaSuccess && can) {
                cudaDeviceEnablePeerAccess(p, 0);
            }
        }
    }
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            if (a == b) continue;
            for (int bidir = 0; bidir < 2; bidir++) {
                if (bidir && a > b) continue;
                float t[samples];
                cudaStream_t s1, s2;
                cudaEvent_t e0, e1, e2;
                CHECK(cudaSetDevice(a));
                CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
                CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
                CHECK(cudaEventCreate(&e0));
                CHECK(cudaEventCreate(&e1));
                CHECK(cudaEventCreate(&e2));
                CHECK(cudaMemcpyPeerAsync(buf[b], b, buf[a], a, bytes, s1));
                CHECK(cudaStreamSynchronize(s1));
                for (int s = 0; s < samples; s++) {
                    CHECK(cudaEventRecord(e0, s1));
                    CHECK(cudaStreamWaitEvent(s2, e0, 0));
                    for (int i = 0; i < loops; i++) {
                        CHECK(cudaMemcpyPeerAsync(buf[b], b, buf[a], a, bytes, s1));
                        if (bidir)
                            CHECK(cudaMemcpyPeerAsync(buf2[a], a, buf2[b], b, bytes, s2));
                    }
                    CHECK(cudaEventRecord(e1, s1));
                    CHECK(cudaEventRecord(e2, s2));
                    CHECK(cudaEventSynchronize(e1));
                    CHECK(cudaEventSynchronize(e2));
                    float m1, m2 = 0;
                    CHECK(cudaEventElapsedTime(&m1, e0, e1));
                    if (bidir) CHECK(cudaEventElapsedTime(&m2, e0, e2));
                    t[s] = std::max(m1, m2);
                }
                std::sort(t, t + samples);
                double gbps = (double)bytes * loops * (bidir ? 2 : 1) / (t[samples / 2] / 1e3) / 1e9;
                printf("{\"ref\": \"cudaMemcpyPeer\", \"a\": %d, \"b\": %d, \"bidirectional\": %s, \"gbps\": %.1f}\n",
                       a, b, bidir ? "true" : "false", gbps);
            }
        }
    }
    return 0;
}
