// The ceiling of the mma rung on this GPU: mma.sync.m16n8k16 (bfloat16 in, float32 accumulated)
// from registers alone, with no memory traffic at all. Each warp keeps `chains` accumulators
// independent of each other, so that no mma waits for the one before; blocks of 4 to 16 warps,
// four blocks an SM. A GEMM on the mma rung also loads, and cannot beat this figure: it is the
// denominator of "how much of the instruction's own peak the kernel reaches" (docs/gemm.md).
//
//   nvcc -O3 -gencode=arch=compute_90,code=sm_90 -o mma_sync_peak bench/ceilings/mma_sync_peak.cu
//   ./mma_sync_peak          # one JSON line per launch shape: TFLOP/s, median of 7
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

constexpr int k_chains = 8;

__global__ void mma_peak(float* sink, int steps)
{
    // bfloat16 pairs near 1, different per lane: arbitrary data, not zeros (which draw less power)
    const unsigned lane = threadIdx.x % 32;
    const unsigned a[4] = {0x3f803f81u + lane, 0x3f823f83u + lane, 0xbf843f85u, 0x3f86bf87u};
    const unsigned b[2] = {0x3f883f89u + lane, 0xbf8a3f8bu};
    float d[k_chains][4] = {};
    for (int s = 0; s < steps; ++s) {
#pragma unroll
        for (int c = 0; c < k_chains; ++c) {
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                         "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
    }
    float total = 0;
    for (int c = 0; c < k_chains; ++c) total += d[c][0] + d[c][1] + d[c][2] + d[c][3];
    if (total == 1234.5f) sink[0] = total;  // never true: keeps the work
}

int main()
{
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    float* sink = nullptr;
    cudaMalloc(&sink, sizeof(float));
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    const int steps = 4096;
    for (int warps : {4, 8, 16}) {
        const int blocks = prop.multiProcessorCount * 4;
        std::vector<float> ms;
        for (int run = 0; run < 8; ++run) {  // the first is a warm-up
            cudaEventRecord(start);
            mma_peak<<<blocks, 32 * warps>>>(sink, steps);
            cudaEventRecord(stop);
            cudaEventSynchronize(stop);
            float t = 0;
            cudaEventElapsedTime(&t, start, stop);
            if (run > 0) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const double flops = 2.0 * 16 * 8 * 16 * k_chains * steps * 32.0 * warps / 32 * blocks;
        std::printf("{\"gpu\": \"%s\", \"instruction\": \"mma.sync.m16n8k16 bf16 f32\", \"warps_per_block\": %d, "
                    "\"blocks\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f, \"tflops\": %.1f}\n",
                    prop.name, warps, blocks, ms[ms.size() / 2], ms.front(), ms.back(),
                    flops / (ms[ms.size() / 2] * 1e-3) / 1e12);
    }
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        std::fprintf(stderr, "mma_sync_peak: %s\n", cudaGetErrorString(e));
        return 1;
    }
    return 0;
}
