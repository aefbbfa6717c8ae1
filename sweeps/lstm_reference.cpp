// The LSTM's CPU reference in double (forward and backward), host only: the
// output check of small shapes (sweeps/lstm.hpp declares it).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sweeps/lstm_problem.hpp"

namespace timeroof {

// ---------------------------------------------------------------------------
// CPU reference in double.

LstmWeights lstm_zero_weights(const LstmSpec& spec) {
  const auto h = static_cast<std::size_t>(spec.hidden_size);
  LstmWeights weights;
  for (std::int64_t l = 0; l < spec.layers; ++l)
    for (std::int64_t dir = 0; dir < lstm_directions(spec); ++dir) {
      LstmLayerWeights layer;
      layer.input_width = lstm_layer_input_size(spec, l);
      layer.w.assign(4 * h * static_cast<std::size_t>(layer.input_width), 0.0);
      layer.r.assign(4 * h * h, 0.0);
      layer.bw.assign(4 * h, 0.0);
      layer.br.assign(4 * h, 0.0);
      weights.push_back(std::move(layer));
    }
  return weights;
}

std::vector<double> flatten(const LstmWeights& weights) {
  std::vector<double> all;
  for (const LstmLayerWeights& layer : weights)
    for (const std::vector<double>* part : {&layer.w, &layer.r, &layer.bw, &layer.br})
      all.insert(all.end(), part->begin(), part->end());
  return all;
}

namespace {

double sigmoid(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

using Size = std::size_t;

Size z(std::int64_t v) {
  return static_cast<Size>(v);
}

void require_size(const char* name, std::span<const double> data, double expected) {
  if (static_cast<double>(data.size()) != expected)
    throw std::invalid_argument(std::string("lstm reference: ") + name + " has " +
                                std::to_string(data.size()) + " elements, expected " +
                                std::to_string(static_cast<Size>(expected)));
}

void require_weights(const LstmSpec& spec, const LstmWeights& weights) {
  const LstmWeights shape = lstm_zero_weights(spec);
  bool ok = weights.size() == shape.size();
  for (Size i = 0; ok && i < shape.size(); ++i)
    ok = weights[i].w.size() == shape[i].w.size() && weights[i].r.size() == shape[i].r.size() &&
         weights[i].bw.size() == shape[i].bw.size() && weights[i].br.size() == shape[i].br.size();
  if (!ok) throw std::invalid_argument("lstm reference: weights do not match the spec's shapes");
}

// Everything the forward pass computes, kept for the backward pass.
struct ForwardRecord {
  std::vector<std::vector<double>> inputs;   // per layer: its input sequence, T x B x I_l
  std::vector<std::vector<double>> outputs;  // per layer: its output sequence, T x B x D H
  std::vector<std::vector<double>> gates;    // per pseudo layer: T x B x 4 x H (i f g o)
  std::vector<std::vector<double>> cells;    // per pseudo layer: T x B x H (c_t)
  std::vector<double> hy, cy;
};

ForwardRecord forward_record(const LstmSpec& spec, std::span<const double> x,
                             std::span<const double> hx, std::span<const double> cx,
                             const LstmWeights& weights) {
  validate(spec);
  require_size("x", x, lstm_x_elements(spec));
  require_size("hx", hx, lstm_state_elements(spec));
  require_size("cx", cx, lstm_state_elements(spec));
  require_weights(spec, weights);
  const Size t_count = z(spec.seq_length), b_count = z(spec.batch), h = z(spec.hidden_size);
  const Size dirs = z(lstm_directions(spec)), width = dirs * h;
  ForwardRecord record;
  record.hy.assign(hx.size(), 0.0);
  record.cy.assign(cx.size(), 0.0);
  std::vector<double> input(x.begin(), x.end());
  std::vector<double> pre(4 * h);
  for (Size l = 0; l < z(spec.layers); ++l) {
    const Size in_width = z(lstm_layer_input_size(spec, static_cast<std::int64_t>(l)));
    std::vector<double> output(t_count * b_count * width, 0.0);
    for (Size dir = 0; dir < dirs; ++dir) {
      const Size pl = l * dirs + dir;
      const LstmLayerWeights& wt = weights[pl];
      std::vector<double> gates(t_count * b_count * 4 * h), cells(t_count * b_count * h);
      std::vector<double> hs(hx.begin() + static_cast<std::ptrdiff_t>(pl * b_count * h),
                             hx.begin() + static_cast<std::ptrdiff_t>((pl + 1) * b_count * h));
      std::vector<double> cs(cx.begin() + static_cast<std::ptrdiff_t>(pl * b_count * h),
                             cx.begin() + static_cast<std::ptrdiff_t>((pl + 1) * b_count * h));
      for (Size s = 0; s < t_count; ++s) {
        const Size t = dir == 0 ? s : t_count - 1 - s;
        for (Size b = 0; b < b_count; ++b) {
          const double* in = &input[(t * b_count + b) * in_width];
          const double* hp = &hs[b * h];
          for (Size gj = 0; gj < 4 * h; ++gj) {
            double sum = wt.bw[gj] + wt.br[gj];
            const double* wrow = &wt.w[gj * in_width];
            for (Size k = 0; k < in_width; ++k) sum += wrow[k] * in[k];
            const double* rrow = &wt.r[gj * h];
            for (Size k = 0; k < h; ++k) sum += rrow[k] * hp[k];
            pre[gj] = sum;
          }
          double* gate = &gates[(t * b_count + b) * 4 * h];
          for (Size j = 0; j < h; ++j) {
            const double i = sigmoid(pre[j]);
            const double f = sigmoid(pre[h + j]);
            const double g = std::tanh(pre[2 * h + j]);
            const double o = sigmoid(pre[3 * h + j]);
            gate[j] = i;
            gate[h + j] = f;
            gate[2 * h + j] = g;
            gate[3 * h + j] = o;
            const double c = f * cs[b * h + j] + i * g;
            cs[b * h + j] = c;
            cells[(t * b_count + b) * h + j] = c;
            hs[b * h + j] = o * std::tanh(c);
            output[(t * b_count + b) * width + dir * h + j] = hs[b * h + j];
          }
        }
      }
      std::copy(hs.begin(), hs.end(),
                record.hy.begin() + static_cast<std::ptrdiff_t>(pl * b_count * h));
      std::copy(cs.begin(), cs.end(),
                record.cy.begin() + static_cast<std::ptrdiff_t>(pl * b_count * h));
      record.gates.push_back(std::move(gates));
      record.cells.push_back(std::move(cells));
    }
    record.inputs.push_back(std::move(input));
    input = output;
    record.outputs.push_back(std::move(output));
  }
  return record;
}

}  // namespace

LstmForwardResult lstm_reference_forward(const LstmSpec& spec, std::span<const double> x,
                                         std::span<const double> hx, std::span<const double> cx,
                                         const LstmWeights& weights) {
  ForwardRecord record = forward_record(spec, x, hx, cx, weights);
  return {std::move(record.outputs.back()), std::move(record.hy), std::move(record.cy)};
}

LstmBackwardResult lstm_reference_backward(const LstmSpec& spec, std::span<const double> x,
                                           std::span<const double> hx, std::span<const double> cx,
                                           const LstmWeights& weights, std::span<const double> dy,
                                           std::span<const double> dhy,
                                           std::span<const double> dcy) {
  const ForwardRecord record = forward_record(spec, x, hx, cx, weights);
  require_size("dy", dy, lstm_y_elements(spec));
  require_size("dhy", dhy, lstm_state_elements(spec));
  require_size("dcy", dcy, lstm_state_elements(spec));
  const Size t_count = z(spec.seq_length), b_count = z(spec.batch), h = z(spec.hidden_size);
  const Size dirs = z(lstm_directions(spec)), width = dirs * h;
  LstmBackwardResult result;
  result.dhx.assign(hx.size(), 0.0);
  result.dcx.assign(cx.size(), 0.0);
  result.dw = lstm_zero_weights(spec);
  std::vector<double> dout(dy.begin(), dy.end());  // gradient of the layer's output
  std::vector<double> dgate(4 * h), dh_prev(h);
  for (Size l = z(spec.layers); l-- > 0;) {
    const Size in_width = z(lstm_layer_input_size(spec, static_cast<std::int64_t>(l)));
    const std::vector<double>& input = record.inputs[l];
    const std::vector<double>& output = record.outputs[l];
    std::vector<double> din(t_count * b_count * in_width, 0.0);
    for (Size dir = 0; dir < dirs; ++dir) {
      const Size pl = l * dirs + dir;
      const LstmLayerWeights& wt = weights[pl];
      LstmLayerWeights& dwt = result.dw[pl];
      const std::vector<double>& gates = record.gates[pl];
      const std::vector<double>& cells = record.cells[pl];
      const Size state = pl * b_count * h;
      std::vector<double> dh_next(dhy.begin() + static_cast<std::ptrdiff_t>(state),
                                  dhy.begin() + static_cast<std::ptrdiff_t>(state + b_count * h));
      std::vector<double> dc_next(dcy.begin() + static_cast<std::ptrdiff_t>(state),
                                  dcy.begin() + static_cast<std::ptrdiff_t>(state + b_count * h));
      // Walk the direction's steps backwards: its last step first.
      for (Size s = t_count; s-- > 0;) {
        const Size t = dir == 0 ? s : t_count - 1 - s;
        const bool first = s == 0;                 // h_{t-1} = hx, c_{t-1} = cx
        const Size tp = dir == 0 ? t - 1 : t + 1;  // the previous step's time index
        for (Size b = 0; b < b_count; ++b) {
          const double* gate = &gates[(t * b_count + b) * 4 * h];
          for (Size j = 0; j < h; ++j) {
            const double i = gate[j], f = gate[h + j], g = gate[2 * h + j], o = gate[3 * h + j];
            const double c = cells[(t * b_count + b) * h + j];
            const double c_prev = first ? cx[state + b * h + j] : cells[(tp * b_count + b) * h + j];
            const double tc = std::tanh(c);
            const double dh = dout[(t * b_count + b) * width + dir * h + j] + dh_next[b * h + j];
            const double d_o = dh * tc;
            const double dc = dc_next[b * h + j] + dh * o * (1 - tc * tc);
            const double d_i = dc * g, d_g = dc * i, d_f = dc * c_prev;
            dc_next[b * h + j] = dc * f;
            dgate[j] = d_i * i * (1 - i);
            dgate[h + j] = d_f * f * (1 - f);
            dgate[2 * h + j] = d_g * (1 - g * g);
            dgate[3 * h + j] = d_o * o * (1 - o);
          }
          const double* in = &input[(t * b_count + b) * in_width];
          double* d_in = &din[(t * b_count + b) * in_width];
          std::fill(dh_prev.begin(), dh_prev.end(), 0.0);
          for (Size gj = 0; gj < 4 * h; ++gj) {
            const double dg = dgate[gj];
            const double* wrow = &wt.w[gj * in_width];
            double* dwrow = &dwt.w[gj * in_width];
            for (Size k = 0; k < in_width; ++k) {
              d_in[k] += wrow[k] * dg;
              dwrow[k] += dg * in[k];
            }
            const double* rrow = &wt.r[gj * h];
            double* drrow = &dwt.r[gj * h];
            for (Size k = 0; k < h; ++k) {
              const double h_prev =
                  first ? hx[state + b * h + k] : output[(tp * b_count + b) * width + dir * h + k];
              dh_prev[k] += rrow[k] * dg;
              drrow[k] += dg * h_prev;
            }
            dwt.bw[gj] += dg;
            dwt.br[gj] += dg;
          }
          std::copy(dh_prev.begin(), dh_prev.end(),
                    dh_next.begin() + static_cast<std::ptrdiff_t>(b * h));
        }
      }
      std::copy(dh_next.begin(), dh_next.end(),
                result.dhx.begin() + static_cast<std::ptrdiff_t>(state));
      std::copy(dc_next.begin(), dc_next.end(),
                result.dcx.begin() + static_cast<std::ptrdiff_t>(state));
    }
    dout = std::move(din);
  }
  result.dx = std::move(dout);
  return result;
}

}  // namespace timeroof
