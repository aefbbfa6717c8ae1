// The interconnect roofs (kernels/interconnect.hpp says what each one is).
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/ceiling_names.hpp"
#include "core/format.hpp"
#include "gpu/check.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "gpu/nccl.hpp"
#include "gpu/nvml.hpp"
#include "kernels/ceiling_support.hpp"
#include "kernels/interconnect.hpp"

namespace timeroof {

namespace {

using ceiling_support::concat;

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::string pair_name(const char* what, int from, int to) {
  return std::string("p2p_") + what + "_" + std::to_string(from) + "to" + std::to_string(to);
}

// Lets `from` read and write `to`'s memory; false where the GPUs have no P2P path.
bool enable_peer_access(int from, int to) {
  int can = 0;
  TR_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to));
  if (!can) return false;
  TR_CUDA_CHECK(cudaSetDevice(from));
  const cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // clear the sticky-free error the call left
  } else {
    TR_CUDA_CHECK(status);
  }
  return true;
}

// Per device: a stream, a copy buffer and the pointer chain, allocated once,
// and where its NVLinks go (NVML, read once).
struct DeviceSide {
  int device = 0;
  int sms = 0;
  std::optional<PciAddress> address;
  std::optional<Nvml::NvLinks> nvlinks;  // nullopt where NVML cannot say
  Stream stream;
  DeviceBuffer<std::uint8_t> buffer;
  DeviceBuffer<unsigned> sink;
};

// The NVLink rate one way from `from` to `to`: the active links of `from` that
// end at `to` or at an NVSwitch (which reaches every GPU behind it), times one
// link's rate. nullopt where NVML cannot say or no link leads there (PCIe peers:
// their rate is not NVML's to give).
struct LinkRate {
  double bytes_per_s = 0;
  std::string source;
};
std::optional<LinkRate> nvlink_rate(const DeviceSide& from, const DeviceSide& to) {
  if (!from.nvlinks || !to.address) return std::nullopt;
  const Nvml::NvLinks& links = *from.nvlinks;
  int toward = 0, through_switch = 0;
  for (const std::optional<PciAddress>& peer : links.peers) {
    if (!peer) ++through_switch;
    if (!peer || *peer == *to.address) ++toward;
  }
  if (toward == 0) return std::nullopt;
  return LinkRate{
      toward * links.link_bytes_per_s,
      concat("NVML: ", toward, " active NVLinks of GPU ", from.device,
             through_switch > 0 ? " (through NVSwitches)" : " to GPU " + std::to_string(to.device),
             " x ", links.link_bytes_per_s / 1e9, " GB/s per link and direction (",
             links.rate_source, ")")};
}

void measure_pairs(std::vector<DeviceSide>& sides, bool quick, CeilingResults& out) {
  const std::size_t bytes = (quick ? 64 : 256) * kMiB;
  const std::string size_text = format_binary_bytes(static_cast<double>(bytes));
  const TimingPolicy policy = ceiling_timing(quick);
  // The chain for the latency roofs: 2^16 nodes 4 KiB apart over the same 256 MiB.
  const unsigned stride_words = 4096 / sizeof(unsigned);
  const unsigned nodes = static_cast<unsigned>(bytes / 4096);
  for (DeviceSide& side : sides) {
    TR_CUDA_CHECK(cudaSetDevice(side.device));
    launch_chain_init(reinterpret_cast<unsigned*>(side.buffer.get()), nodes, stride_words,
                      side.stream.get());
    side.stream.synchronize();
  }
  const int hops = quick ? 2000 : 10000;
  for (DeviceSide& from : sides) {
    for (DeviceSide& to : sides) {
      if (from.device == to.device) continue;
      const int a = from.device, b = to.device;
      if (!enable_peer_access(a, b)) {
        const std::string why = concat("GPU ", a, " cannot access GPU ", b,
                                       "'s memory (cudaDeviceCanAccessPeer: 0, no NVLink or PCIe "
                                       "peer path)");
        for (const char* what : {"ce", "sm", "latency"})
          out.skipped.push_back({pair_name(what, a, b), why, false});
        continue;
      }
      TR_CUDA_CHECK(cudaSetDevice(a));
      // The chain in b's memory is rewritten by the copies below, so chase it first.
      const unsigned* chain = reinterpret_cast<const unsigned*>(to.buffer.get());
      Measurement latency = measure_on_stream(
          [&](cudaStream_t s) { launch_pointer_chase(chain, hops, from.sink.get(), s); },
          from.stream.get(), policy);
      latency = ceiling_support::per_unit(latency, hops);
      out.ceilings.push_back(
          make_ceiling(pair_name("latency", a, b), CeilingKind::latency, "s", 1, latency,
                       concat("one thread on GPU ", a, " following ", hops,
                              " dependent loads (ld.global.cg) "
                              "through a pointer chain in GPU ",
                              b, "'s memory (", nodes,
                              " nodes 4 KiB apart "
                              "over ",
                              size_text, ", full-period LCG order); seconds per load, median of ",
                              latency.repeats, " chases")));

      const std::optional<LinkRate> link = nvlink_rate(from, to);
      const auto with_link_rate = [&link](Ceiling c) {
        if (link) {
          c.theoretical = link->bytes_per_s;
          c.theoretical_source = link->source;
        }
        return c;
      };
      const Measurement ce = measure_on_stream(
          [&](cudaStream_t s) {
            TR_CUDA_CHECK(cudaMemcpyPeerAsync(to.buffer.get(), b, from.buffer.get(), a, bytes, s));
          },
          from.stream.get(), policy);
      out.ceilings.push_back(with_link_rate(make_ceiling(
          pair_name("ce", a, b), CeilingKind::bandwidth, "B/s", static_cast<double>(bytes), ce,
          concat("cudaMemcpyPeerAsync of ", size_text, " from GPU ", a, " to GPU ", b,
                 " (copy engine, peer access on), issued on GPU ", a,
                 "'s stream and timed with events; median of ", ce.repeats, " copies"))));

      const int blocks = from.sms * 4;
      const Measurement sm = measure_on_stream(
          [&](cudaStream_t s) {
            launch_vector_copy(from.buffer.get(), to.buffer.get(), bytes / 16, blocks, s);
          },
          from.stream.get(), policy);
      out.ceilings.push_back(with_link_rate(make_ceiling(
          pair_name("sm", a, b), CeilingKind::bandwidth, "B/s", static_cast<double>(bytes), sm,
          concat("copy kernel on GPU ", a, " (", blocks,
                 " blocks of 512 threads, 16-byte "
                 "vectors) writing ",
                 size_text, " into GPU ", b, "'s memory; median of ", sm.repeats, " copies"))));
      // Restore b's chain for the pairs still to come.
      TR_CUDA_CHECK(cudaSetDevice(b));
      launch_chain_init(reinterpret_cast<unsigned*>(to.buffer.get()), nodes, stride_words,
                        to.stream.get());
      to.stream.synchronize();
    }
  }
}

void measure_all_reduce(std::vector<DeviceSide>& sides, bool quick, CeilingResults& out) {
  const Nccl nccl;
  if (!nccl.loaded()) {
    out.skipped.push_back({ceiling::kAllreduceNccl, nccl.why_not(), false});
    return;
  }
  std::vector<int> devices;
  std::vector<cudaStream_t> streams;
  for (const DeviceSide& side : sides) {
    devices.push_back(side.device);
    streams.push_back(side.stream.get());
  }
  const Nccl::Communicators comms(nccl, devices);
  const std::vector<std::size_t> sizes =
      quick ? std::vector<std::size_t>{32 * kMiB, 256 * kMiB}
            : std::vector<std::size_t>{32 * kMiB, 128 * kMiB, 512 * kMiB, 1024 * kMiB};
  std::vector<DeviceBuffer<float>> buffers;
  std::vector<float*> pointers;
  for (const DeviceSide& side : sides) {
    TR_CUDA_CHECK(cudaSetDevice(side.device));
    buffers.emplace_back(sizes.back() / sizeof(float));
    TR_CUDA_CHECK(cudaMemsetAsync(buffers.back().get(), 0, sizes.back(), side.stream.get()));
    pointers.push_back(buffers.back().get());
  }
  auto synchronize_all = [&] {
    for (const DeviceSide& side : sides) side.stream.synchronize();
  };
  synchronize_all();
  const double n = static_cast<double>(sides.size());
  const double bus_factor = 2 * (n - 1) / n;
  double best = 0;
  Measurement best_m;
  std::string per_size;
  for (std::size_t size : sizes) {
    const std::size_t count = size / sizeof(float);
    for (int i = 0; i < 3; ++i) comms.all_reduce(pointers, count, streams);
    synchronize_all();
    // As nccl-tests: host clock around back-to-back iterations, all streams synchronized.
    TimingPolicy policy;
    policy.round = 5;
    policy.min_repeats = quick ? 5 : 10;
    policy.max_repeats = quick ? 10 : 40;
    policy.max_seconds = quick ? 0.5 : 2.0;
    const int iterations = size >= 512 * kMiB ? 5 : 20;
    Measurement m = measure_on_host(
        [&] {
          for (int i = 0; i < iterations; ++i) comms.all_reduce(pointers, count, streams);
          synchronize_all();
        },
        policy);
    m = ceiling_support::per_unit(m, iterations);
    const double bus = static_cast<double>(size) * bus_factor / m.median_s;
    per_size += concat(per_size.empty() ? "" : ", ", format_binary_bytes(static_cast<double>(size)),
                       " ", format_si(bus, "B/s"));
    if (bus > best) {
      best = bus;
      best_m = m;
    }
  }
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  Ceiling c = make_ceiling(
      ceiling::kAllreduceNccl, CeilingKind::bandwidth, "B/s", 0, best_m,
      concat("NCCL ", nccl.version(), " (", nccl.path(), ") all-reduce, fp32 sum in place over ",
             sides.size(),
             " GPUs, one communicator per GPU in one process; bus bandwidth = "
             "bytes x 2(n-1)/n / time, host clock over back-to-back iterations; best of: ",
             per_size, "; NCCL_NVLS_ENABLE=", nvls ? nvls : "unset"));
  c.measured = best;
  out.ceilings.push_back(c);
}

}  // namespace

const std::vector<std::string>& interconnect_ceiling_names() {
  static const std::vector<std::string> names = {"p2p_ce", "p2p_sm", "p2p_latency",
                                                 ceiling::kAllreduceNccl};
  return names;
}

CeilingResults measure_interconnect_ceilings(const std::vector<int>& devices, bool quick) {
  CeilingResults out;
  std::vector<DeviceSide> sides;
  const std::size_t bytes = (quick ? 64 : 256) * kMiB;
  const Nvml nvml;
  for (int device : devices) {
    TR_CUDA_CHECK(cudaSetDevice(device));
    DeviceSide side;
    side.device = device;
    const std::string bus_id = pci_bus_id(device);
    side.address = parse_pci_address(bus_id);
    if (nvml.available()) side.nvlinks = nvml.nvlinks(bus_id);
    TR_CUDA_CHECK(cudaDeviceGetAttribute(&side.sms, cudaDevAttrMultiProcessorCount, device));
    side.buffer = DeviceBuffer<std::uint8_t>(bytes);
    side.sink = DeviceBuffer<unsigned>(1);
    sides.push_back(std::move(side));
  }
  try {
    measure_pairs(sides, quick, out);
  } catch (const Error& error) {
    out.skipped.push_back({"p2p", std::string("peer roofs failed: ") + error.what(), true});
  }
  try {
    measure_all_reduce(sides, quick, out);
  } catch (const Error& error) {
    out.skipped.push_back({ceiling::kAllreduceNccl, std::string("failed: ") + error.what(), true});
  }
  return out;
}

}  // namespace timeroof
