/*
 * irlib's DLPack-compatible tensor descriptor, for C/C++ kernels called by irlib's nn
 * extern modules (irlib.frontend.nn.SourceModule / ObjectModule).
 *
 * Written for irlib from DLPack's documented layout (v0.8); only the declarations an
 * extern kernel needs: DLDevice, DLDataType and DLTensor, with their enum constants.
 * The field order and types match DLPack's, so code written against dlpack.h compiles.
 *
 * irlib passes one DLTensor* per tensor argument: data points at the first element
 * (byte_offset is 0), device is {kDLCPU, 0}, strides is NULL (compact row-major).
 */
#ifndef IRLIB_DLPACK_DLPACK_H_
#define IRLIB_DLPACK_DLPACK_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where a tensor's memory lives. irlib only ever passes kDLCPU. */
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

/* The element kind of DLDataType.code. */
typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6
} DLDataTypeCode;

/* An element type: float32 is {kDLFloat, 32, 1}, int64 is {kDLInt, 64, 1},
   bool is {kDLBool, 8, 1}. */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/* A borrowed view of an n-dimensional array. */
typedef struct {
  void* data;            /* the first element (plus byte_offset) */
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;        /* ndim sizes */
  int64_t* strides;      /* ndim strides in elements, or NULL for compact row-major */
  uint64_t byte_offset;
} DLTensor;

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* IRLIB_DLPACK_DLPACK_H_ */
