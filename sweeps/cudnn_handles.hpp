// Move-only RAII owners for cuDNN's handle and the legacy convolution API's
// descriptors. Creation throws GpuError; destruction never throws.
#pragma once

#include <cudnn.h>

#include "gpu/check.hpp"
#include "gpu/check_cudnn.hpp"
#include "gpu/handles.hpp"

namespace timeroof {

namespace cudnn_detail {
struct HandleRelease {
  void operator()(cudnnHandle_t h) const noexcept { TR_CUDNN_WARN(cudnnDestroy(h)); }
};
struct TensorRelease {
  void operator()(cudnnTensorDescriptor_t d) const noexcept {
    TR_CUDNN_WARN(cudnnDestroyTensorDescriptor(d));
  }
};
struct FilterRelease {
  void operator()(cudnnFilterDescriptor_t d) const noexcept {
    TR_CUDNN_WARN(cudnnDestroyFilterDescriptor(d));
  }
};
struct ConvolutionRelease {
  void operator()(cudnnConvolutionDescriptor_t d) const noexcept {
    TR_CUDNN_WARN(cudnnDestroyConvolutionDescriptor(d));
  }
};

// One owner type per cuDNN object: `Create` makes it, `Release` frees it.
template <typename T, typename Release, cudnnStatus_t (*Create)(T*)>
class Owned {
 public:
  Owned() {
    T raw{};
    TR_CUDNN_CHECK(Create(&raw));
    handle_ = UniqueHandle<T, Release>(raw);
  }
  T get() const noexcept { return handle_.get(); }

 private:
  UniqueHandle<T, Release> handle_;
};
}  // namespace cudnn_detail

// cudnnCreate is slow (tens of ms): share one handle between operators of a sweep.
using CudnnHandle = cudnn_detail::Owned<cudnnHandle_t, cudnn_detail::HandleRelease, cudnnCreate>;
using TensorDescriptor = cudnn_detail::Owned<cudnnTensorDescriptor_t, cudnn_detail::TensorRelease,
                                             cudnnCreateTensorDescriptor>;
using FilterDescriptor = cudnn_detail::Owned<cudnnFilterDescriptor_t, cudnn_detail::FilterRelease,
                                             cudnnCreateFilterDescriptor>;
using ConvolutionDescriptor =
    cudnn_detail::Owned<cudnnConvolutionDescriptor_t, cudnn_detail::ConvolutionRelease,
                        cudnnCreateConvolutionDescriptor>;

}  // namespace timeroof
