#!/usr/bin/env bash
# The final call: build; the GPU matmul test (every rung at odd shapes); the GEMM ladder with its
# peers; every rung at the 64 odd shapes, as far as the time allows.
out=$OUT
start=$SECONDS
timeout 120 bash scripts/gpu-check.sh build > $out/console.log 2>&1 || { tail -20 $out/console.log; exit 1; }
timeout 60 build-gpu/tests/gpu_tests -tc="matmuls verify*" > $out/gputest.log 2>&1; echo "matmul gpu test rc=$? at $((SECONDS-start)) s"; tail -2 $out/gputest.log
timeout 200 bash scripts/gpu-check.sh gemm >> $out/console.log 2>&1; echo "gemm rc=$? at $((SECONDS-start)) s"
timeout $(( 460 - (SECONDS - start) )) bash scripts/gpu-check.sh gemm-odd >> $out/console.log 2>&1; echo "gemm-odd rc=$? at $((SECONDS-start)) s"
cd $out && tar czf gemm-data.tgz gemm gemm_odd 2>/dev/null && rm -rf gemm gemm_odd; gzip -f gemm.log gemm_odd.log console.log
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > env.txt; date >> env.txt
