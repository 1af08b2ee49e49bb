// Test harness for emitted CUDA kernels (compiled by the tests together with the kernels): copies host
// buffers and tables to the device, calls a kernel through its C ABI, copies the destination back.
#include <cuda_runtime.h>
#include <stdint.h>

#include <vector>

typedef int (*Kernel)(void* const*, void* const*, const int32_t* const*, const int32_t* const*, int64_t, int);

extern "C" int harness_devices() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

// Buffers are given as host pointers with their byte sizes; returns the kernel's code, or 100 + a CUDA
// failure in the harness itself.
extern "C" int harness_run(Kernel kernel, int ns, void* const* src, const int64_t* src_bytes, int nt, void* const* dst,
                           const int64_t* dst_bytes, int nst, const int32_t* const* st, const int64_t* st_len, int ndt,
                           const int32_t* const* dt, const int64_t* dt_len, int64_t num_tokens) {
  std::vector<void*> ds(ns), dd(nt);
  std::vector<int32_t*> dst_t(nst), ddt(ndt);
  int code = 0;
  for (int i = 0; i < ns && code == 0; ++i)
    if (cudaMalloc(&ds[i], src_bytes[i]) != cudaSuccess || cudaMemcpy(ds[i], src[i], src_bytes[i], cudaMemcpyHostToDevice) != cudaSuccess) code = 101;
  for (int i = 0; i < nt && code == 0; ++i)
    if (cudaMalloc(&dd[i], dst_bytes[i]) != cudaSuccess || cudaMemcpy(dd[i], dst[i], dst_bytes[i], cudaMemcpyHostToDevice) != cudaSuccess) code = 102;
  for (int i = 0; i < nst && code == 0; ++i)
    if (cudaMalloc(&dst_t[i], st_len[i] * 4) != cudaSuccess || cudaMemcpy(dst_t[i], st[i], st_len[i] * 4, cudaMemcpyHostToDevice) != cudaSuccess) code = 103;
  for (int i = 0; i < ndt && code == 0; ++i)
    if (cudaMalloc(&ddt[i], dt_len[i] * 4) != cudaSuccess || cudaMemcpy(ddt[i], dt[i], dt_len[i] * 4, cudaMemcpyHostToDevice) != cudaSuccess) code = 104;
  if (code == 0) {
    std::vector<const int32_t*> cst(dst_t.begin(), dst_t.end()), cdt(ddt.begin(), ddt.end());
    code = kernel(ds.data(), dd.data(), nst ? cst.data() : nullptr, ndt ? cdt.data() : nullptr, num_tokens, 1);
    for (int i = 0; i < nt; ++i)
      if (cudaMemcpy(dst[i], dd[i], dst_bytes[i], cudaMemcpyDeviceToHost) != cudaSuccess) code = 105;
  }
  for (void* p : ds) cudaFree(p);
  for (void* p : dd) cudaFree(p);
  for (int32_t* p : dst_t) cudaFree(p);
  for (int32_t* p : ddt) cudaFree(p);
  return code;
}
