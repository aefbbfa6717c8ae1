#include "core/ceiling_names.hpp"

namespace timeroof::ceiling {

std::string fma(Precision precision) {
  return std::string(to_string(precision)) + "_fma";
}

std::string addmul(Precision precision) {
  return std::string(to_string(precision)) + "_addmul";
}

std::string tensor(Precision precision) {
  return std::string("tensor_") + to_string(precision);
}

std::string tensor_mma_sync(Precision precision) {
  return tensor(precision) + "_mma_sync";
}

std::string library(Precision precision) {
  if (precision == Precision::fp64) return "cublas_fp64";  // cuBLAS DGEMM: no cuBLASLt fp64
  return std::string("cublaslt_") + to_string(precision);
}

std::string transfer(TransferDirection direction, HostMemory host) {
  return std::string(to_string(direction)) + "_" + to_string(host);
}

const std::vector<Family>& families() {
  static const std::vector<Family> table = [] {
    Family transfers{"transfer", {}, true};
    for (HostMemory h : kAllHostMemories)
      for (TransferDirection d : kAllTransferDirections) transfers.names.push_back(transfer(d, h));
    Family cuda_core{"cuda_core", {}};
    for (Precision p : kCudaCorePrecisions) cuda_core.names.push_back(fma(p));
    for (Precision p : kCudaCorePrecisions) cuda_core.names.push_back(addmul(p));
    Family tensor_cores{"tensor", {}};
    for (Precision p : kTensorPrecisions) tensor_cores.names.push_back(tensor(p));
    for (Precision p : kMmaSyncPrecisions) tensor_cores.names.push_back(tensor_mma_sync(p));
    Family libraries{"library", {}};
    for (Precision p : kTensorPrecisions) libraries.names.push_back(library(p));
    return std::vector<Family>{
        {"launch", {kLaunchAsync, kLaunchSync, kLaunchGraphNode}, true},
        transfers,
        {"memory", {kHbmRead, kHbmWrite, kHbmCopy, kL2Read, kL1Read, kSharedRead, kWorkingSet}},
        cuda_core,
        tensor_cores,
        libraries,
    };
  }();
  return table;
}

bool is_interconnect(const std::string& name) {
  return name.rfind("p2p_", 0) == 0 || name.rfind("allreduce_", 0) == 0;
}

}  // namespace timeroof::ceiling
