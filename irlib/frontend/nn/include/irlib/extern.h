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

#ifdef __cplusplus
/*
 * TVM_DLL_EXPORT_TYPED_FUNC(Name, Impl) (C++17): export Impl, a function of DLTensor*,
 * integer, floating-point and const char* parameters returning int or void, under the name
 * Name, as TVM's macro of that name does. The exported Name takes the arguments packed
 * (value pointers and type codes); irlib sees the marker irlib_packed__Name and packs them.
 * Impl may live in an anonymous namespace. A void Impl reports success (0).
 */
#include <cstddef>
#include <type_traits>
#include <utility>

namespace irlib {
namespace detail {

enum PackedCode : int32_t { kPackedInt = 0, kPackedFloat = 1, kPackedStr = 2, kPackedTensor = 3 };

template <typename T>
inline bool packed_arg_ok(int32_t code) {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, DLTensor*> || std::is_same_v<U, const DLTensor*>) {
    return code == kPackedTensor;
  } else if constexpr (std::is_same_v<U, const char*>) {
    return code == kPackedStr;
  } else if constexpr (std::is_integral_v<U>) {
    return code == kPackedInt;
  } else if constexpr (std::is_floating_point_v<U>) {
    return code == kPackedFloat || code == kPackedInt;
  } else {
    return false;
  }
}

template <typename T>
inline T packed_arg(void* value, int32_t code) {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, const char*>) {
    return *static_cast<const char**>(value);
  } else if constexpr (std::is_pointer_v<U>) {
    return static_cast<U>(value);
  } else if constexpr (std::is_integral_v<U>) {
    return static_cast<U>(*static_cast<int64_t*>(value));
  } else {
    return code == kPackedInt ? static_cast<U>(*static_cast<int64_t*>(value))
                              : static_cast<U>(*static_cast<double*>(value));
  }
}

template <auto F>
struct Packed;

template <typename R, typename... A, R (*F)(A...)>
struct Packed<F> {
  template <std::size_t... I>
  static int run(void** values, const int32_t* codes, std::index_sequence<I...>) {
    if (!(true && ... && packed_arg_ok<A>(codes[I]))) return -2;   /* argument kinds differ */
    if constexpr (std::is_void_v<R>) {
      F(packed_arg<A>(values[I], codes[I])...);
      return 0;
    } else {
      return static_cast<int>(F(packed_arg<A>(values[I], codes[I])...));
    }
  }
  static int call(void** values, const int32_t* codes, int32_t num) {
    if (num != static_cast<int32_t>(sizeof...(A))) return -1;       /* argument count differs */
    return run(values, codes, std::index_sequence_for<A...>{});
  }
};

}  // namespace detail
}  // namespace irlib

#define TVM_DLL_EXPORT_TYPED_FUNC(Name, Impl)                                             \
  extern "C" IRLIB_DLL const int irlib_packed__##Name = 1;                                \
  extern "C" IRLIB_DLL int Name(void** values, const int32_t* codes, int32_t num) {       \
    return ::irlib::detail::Packed<&Impl>::call(values, codes, num);                      \
  }
#define TVM_FFI_DLL_EXPORT_TYPED_FUNC(Name, Impl) TVM_DLL_EXPORT_TYPED_FUNC(Name, Impl)
#endif  /* __cplusplus */

#endif  /* IRLIB_EXTERN_H_ */
