#include "counters/theoretical_peaks.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/ceiling_names.hpp"
#include "counters/metric_host.hpp"
#include "counters/probe_kernel.hpp"
#include "counters/range_profiler.hpp"
#include "gpu/handles.hpp"

namespace timeroof {

namespace {

using Clock = PeakFormula::Clock;

struct NamedFormula {
  std::string base_name;
  PeakFormula formula;
};

// FLOP conventions: an FMA lane is 2 FLOP; packed half2 instructions carry 2
// lanes (HFMA2 = 4 FLOP, HADD2/HMUL2 = 2 FLOP); add/mul-only roofs count 1 FLOP
// per lane. Tensor "ops" are FLOPs. Choices below were settled with counters on
// an H200 (GH100, CUPTI 13):
// - HFMA2 (fp16 and bf16) is counted on both the fmaheavy and the fmalite pipe
//   and saturates both at half the FFMA instruction rate, so the packed-half
//   FMA roof equals the FP32 one; `hfma_pred_on.peak_sustained` (one HFMA2 per
//   lane-cycle) is twice what the pipes can issue. Where the chip splits the FMA
//   pipe, its peak is the fmaheavy warp-instruction rate x 32 lanes x 4 FLOP.
// - Shared memory and L1 deliver one 128-byte wavefront per SM-cycle
//   (l1tex__data_pipe_lsu_wavefronts*); l1tex__t_bytes' peak is 4x that.
// - `sm__ops_path_tensor_src_*.peak_sustained` is the 2:4-sparse rate; the
//   dense roof is the `*_sparsity_off` path (hgmma/igmma on Hopper).
const std::vector<NamedFormula> kFormulas = {
    {ceiling::fma(Precision::fp64),
     {{{"sm__sass_thread_inst_executed_op_dfma_pred_on.sum", 2, "2 FLOP per DFMA"}}, Clock::sm}},
    {ceiling::fma(Precision::fp32),
     {{{"sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 2, "2 FLOP per FFMA"}}, Clock::sm}},
    {ceiling::fma(Precision::fp16),
     {{{"sm__inst_executed_pipe_fmaheavy.sum", 128,
        "HFMA2 on both FMA pipes: 32 lanes x 4 FLOP per fmaheavy warp instruction"},
       {"sm__sass_thread_inst_executed_op_hfma_pred_on.sum", 4, "4 FLOP per HFMA2"}},
      Clock::sm}},
    {ceiling::fma(Precision::bf16),
     {{{"sm__inst_executed_pipe_fmaheavy.sum", 128,
        "HFMA2.BF16 on both FMA pipes: 32 lanes x 4 FLOP per fmaheavy warp instruction"},
       {"sm__sass_thread_inst_executed_op_hfma_pred_on.sum", 4, "4 FLOP per HFMA2.BF16"}},
      Clock::sm}},
    {ceiling::addmul(Precision::fp64),
     {{{"sm__sass_thread_inst_executed_op_dadd_pred_on.sum", 1, "1 FLOP per DADD/DMUL"}},
      Clock::sm}},
    {ceiling::addmul(Precision::fp32),
     {{{"sm__sass_thread_inst_executed_op_fadd_pred_on.sum", 1, "1 FLOP per FADD/FMUL"}},
      Clock::sm}},
    {ceiling::addmul(Precision::fp16),
     {{{"sm__sass_thread_inst_executed_op_hadd_pred_on.sum", 2, "2 FLOP per HADD2/HMUL2"}},
      Clock::sm}},
    {ceiling::addmul(Precision::bf16),
     {{{"sm__sass_thread_inst_executed_op_hadd_pred_on.sum", 2, "2 FLOP per HADD2/HMUL2.BF16"}},
      Clock::sm}},
    {ceiling::kHbmRead, {{{"dram__bytes.sum", 1, "bytes"}}, Clock::dram}},
    {ceiling::kHbmWrite, {{{"dram__bytes.sum", 1, "bytes"}}, Clock::dram}},
    {ceiling::kHbmCopy, {{{"dram__bytes.sum", 1, "bytes read + written"}}, Clock::dram}},
    {ceiling::kL2Read, {{{"lts__t_bytes.sum", 1, "bytes"}}, Clock::l2}},
    {ceiling::kL1Read,
     {{{"l1tex__data_pipe_lsu_wavefronts.sum", 128, "128 B per LSU wavefront"}}, Clock::sm}},
    {ceiling::kSharedRead,
     {{{"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 128, "128 B per shared wavefront"}},
      Clock::sm}},
    {ceiling::tensor(Precision::fp16),
     {{{"sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum", 1, "dense FLOP"},
       {"sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off.sum", 1, "dense FLOP"}},
      Clock::sm}},
    {ceiling::tensor(Precision::bf16),
     {{{"sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum", 1, "dense FLOP"},
       {"sm__ops_path_tensor_src_bf16_dst_fp32_sparsity_off.sum", 1, "dense FLOP"}},
      Clock::sm}},
    {ceiling::tensor(Precision::tf32),
     {{{"sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum", 1, "dense FLOP"},
       {"sm__ops_path_tensor_src_tf32_dst_fp32_sparsity_off.sum", 1, "dense FLOP"}},
      Clock::sm}},
    {ceiling::tensor(Precision::fp8),
     {{{"sm__ops_path_tensor_src_fp8_sparsity_off.sum", 1, "dense FLOP"}}, Clock::sm}},
    {ceiling::tensor(Precision::int8),
     {{{"sm__ops_path_tensor_op_igmma_src_int8_sparsity_off.sum", 1, "dense ops"},
       {"sm__ops_path_tensor_src_int8_sparsity_off.sum", 1, "dense ops"}},
      Clock::sm}},
    {ceiling::tensor(Precision::fp64),
     {{{"sm__ops_path_tensor_src_fp64.sum", 1, "FLOP"}}, Clock::sm}},
};

// tensor_bf16_wgmma, tensor_bf16_mma_sync, cublaslt_bf16 -> tensor_bf16; cublas_fp64 ->
// tensor_fp64.
std::string base_name(const std::string& name) {
  for (Precision p : ceiling::kTensorPrecisions)
    if (name == ceiling::tensor(p) + "_wgmma" || name == ceiling::tensor_mma_sync(p) ||
        name == ceiling::library(p))
      return ceiling::tensor(p);
  return name;
}

std::string peak_metric(const std::string& metric) {
  return metric + ".peak_sustained";
}

}  // namespace

std::optional<PeakFormula> peak_formula(const std::string& ceiling_name) {
  const std::string base = base_name(ceiling_name);
  for (const NamedFormula& f : kFormulas)
    if (base == f.base_name) return f.formula;
  return std::nullopt;
}

PeakRates read_peak_rates(ProfilerSession& session) {
  const MetricHost host(session.chip(), session.counter_availability());
  std::vector<std::string> metrics = {"sm__cycles_elapsed.avg.per_second",
                                      "dram__cycles_elapsed.avg.per_second",
                                      "lts__cycles_elapsed.avg.per_second"};
  for (const NamedFormula& f : kFormulas) {
    for (const PeakTerm& candidate : f.formula.candidates) {
      const std::string metric = peak_metric(candidate.metric);
      if (!host.has_metric(metric)) continue;
      if (std::find(metrics.begin(), metrics.end(), metric) == metrics.end())
        metrics.push_back(metric);
      break;
    }
  }
  // A probe long enough for the clocks to be read while the SMs are busy.
  const FfmaProbe probe{264, 256, 20000};
  DeviceBuffer<float> out(static_cast<std::size_t>(probe.blocks) * probe.threads);
  const ProfileResult result =
      session.profile_kernels(metrics, [&] { launch_ffma_probe(probe, out.get(), nullptr); });
  PeakRates rates;
  rates.chip = session.chip();
  if (result.ranges.empty()) return rates;
  const std::vector<double>& values = result.ranges.front().values;
  rates.sm_hz = values[0];
  rates.dram_hz = values[1];
  rates.l2_hz = values[2];
  for (std::size_t i = 3; i < metrics.size(); ++i) rates.per_cycle[metrics[i]] = values[i];
  return rates;
}

void apply_theoretical_peaks(const PeakRates& rates, std::vector<Ceiling>& ceilings) {
  for (Ceiling& ceiling : ceilings) {
    const std::optional<PeakFormula> formula = peak_formula(ceiling.name);
    if (!formula) continue;
    for (const PeakTerm& candidate : formula->candidates) {
      const auto peak = rates.per_cycle.find(peak_metric(candidate.metric));
      if (peak == rates.per_cycle.end()) continue;
      double hz = 0;
      const char* clock_name = "";
      switch (formula->clock) {
        case Clock::sm:
          hz = ceiling.sm_clock_hz.value_or(rates.sm_hz);
          clock_name =
              ceiling.sm_clock_hz ? "SM clock during the measurement" : "SM clock seen by CUPTI";
          break;
        case Clock::dram:
          hz = rates.dram_hz;
          clock_name = "DRAM clock seen by CUPTI";
          break;
        case Clock::l2:
          hz = rates.l2_hz;
          clock_name = "L2 clock seen by CUPTI";
          break;
      }
      ceiling.theoretical = peak->second * candidate.work_per_unit * hz;
      char text[640];
      std::snprintf(text, sizeof text, "%s (%.6g/cycle) x %s x %s %.4g GHz", peak->first.c_str(),
                    peak->second, candidate.note.c_str(), clock_name, hz * 1e-9);
      ceiling.theoretical_source = text;
      break;
    }
  }
}

}  // namespace timeroof
