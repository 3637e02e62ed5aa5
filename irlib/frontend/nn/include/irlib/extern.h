/*
 * Helpers for C/C++ kernels loaded by irlib's nn extern modules.
 *
 *   #include <irlib/extern.h>
 *   IRLIB_EXTERN_C int my_kernel(DLTensor* x, DLTensor* y, DLTensor* out) {
 *     ...
 *     return 0;            // 0: success; anything else is reported as an error
 *   }
 *
 * IRLIB_EXTERN_C gives the function C linkage (so ctypes finds it by its plain name, also
 * from C++) and default visibility. Arguments: one DLTensor* per tensor (inputs, then the
 * pre-allocated outputs), int64_t for ints and symbolic sizes, double for floats,
 * const char* for strings.
 */
#ifndef IRLIB_EXTERN_H_
#define IRLIB_EXTERN_H_

#include <dlpack/dlpack.h>

#if defined(_WIN32)
#define IRLIB_DLL __declspec(dllexport)
#else
#define IRLIB_DLL __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
#define IRLIB_EXTERN_C extern "C" IRLIB_DLL
#else
#define IRLIB_EXTERN_C IRLIB_DLL
#endif

/* The number of elements of a compact tensor. */
static inline int64_t irlib_numel(const DLTensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

/* Whether t has the element type {code, bits, 1}. */
static inline int irlib_is_dtype(const DLTensor* t, uint8_t code, uint8_t bits) {
  return t->dtype.code == code && t->dtype.bits == bits && t->dtype.lanes == 1;
}

#endif  /* IRLIB_EXTERN_H_ */
