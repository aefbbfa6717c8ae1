// Direct convolution in double, the ground truth of Conv2d::check() and the tests.
// One loop nest visits every (output element, filter tap) pair once; the three
// directions differ only in which tensor accumulates the product.
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "sweeps/conv2d_problem.hpp"

namespace timeroof {

std::size_t conv2d_x_offset(const Conv2dSpec& spec, std::int64_t n, std::int64_t c, std::int64_t h,
                            std::int64_t w) {
  const std::int64_t offset = spec.layout == Layout::nchw
                                  ? ((n * spec.c + c) * spec.h + h) * spec.w + w
                                  : ((n * spec.h + h) * spec.w + w) * spec.c + c;
  return static_cast<std::size_t>(offset);
}

std::size_t conv2d_w_offset(const Conv2dSpec& spec, std::int64_t k, std::int64_t c, std::int64_t r,
                            std::int64_t s) {
  const std::int64_t cg = spec.c / spec.groups;
  const std::int64_t offset = spec.layout == Layout::nchw
                                  ? ((k * cg + c) * spec.r + r) * spec.s + s
                                  : ((k * spec.r + r) * spec.s + s) * cg + c;
  return static_cast<std::size_t>(offset);
}

std::size_t conv2d_y_offset(const Conv2dSpec& spec, std::int64_t n, std::int64_t k, std::int64_t p,
                            std::int64_t q) {
  const Conv2dOutputShape out = conv2d_output_shape(spec);
  const std::int64_t offset = spec.layout == Layout::nchw
                                  ? ((n * spec.k + k) * out.p + p) * out.q + q
                                  : ((n * out.p + p) * out.q + q) * spec.k + k;
  return static_cast<std::size_t>(offset);
}

namespace {

enum class Accumulate { y, x, w };

// For each output position (n, k, p, q) and tap (c within the group, r, s) whose
// input position lies inside the image: y += x * w (fwd), dx += dy * w
// (bwd_data), dw += x * dy (bwd_filter).
void direct(const Conv2dSpec& spec, Accumulate into, std::span<double> x, std::span<double> w,
            std::span<double> y) {
  const Conv2dOutputShape out = conv2d_output_shape(spec);
  const std::int64_t cg = spec.c / spec.groups;
  const std::int64_t kg = spec.k / spec.groups;
  for (std::int64_t n = 0; n < spec.n; ++n)
    for (std::int64_t k = 0; k < spec.k; ++k) {
      const std::int64_t group = k / kg;
      for (std::int64_t p = 0; p < out.p; ++p)
        for (std::int64_t q = 0; q < out.q; ++q) {
          const std::size_t yi = conv2d_y_offset(spec, n, k, p, q);
          double sum = 0;
          for (std::int64_t r = 0; r < spec.r; ++r) {
            const std::int64_t ih = p * spec.stride_h - spec.pad_h + r * spec.dilation_h;
            if (ih < 0 || ih >= spec.h) continue;
            for (std::int64_t s = 0; s < spec.s; ++s) {
              const std::int64_t iw = q * spec.stride_w - spec.pad_w + s * spec.dilation_w;
              if (iw < 0 || iw >= spec.w) continue;
              for (std::int64_t c = 0; c < cg; ++c) {
                const std::size_t xi = conv2d_x_offset(spec, n, group * cg + c, ih, iw);
                const std::size_t wi = conv2d_w_offset(spec, k, c, r, s);
                switch (into) {
                  case Accumulate::y:
                    sum += x[xi] * w[wi];
                    break;
                  case Accumulate::x:
                    x[xi] += y[yi] * w[wi];
                    break;
                  case Accumulate::w:
                    w[wi] += x[xi] * y[yi];
                    break;
                }
              }
            }
          }
          if (into == Accumulate::y) y[yi] = sum;
        }
    }
}

std::size_t count(double elements) {
  return static_cast<std::size_t>(elements);
}

void require(std::size_t got, double expected, const char* name) {
  if (got != count(expected))
    throw usage_error(std::string("conv2d reference: tensor ") + name + " has " +
                      std::to_string(got) + " elements, the spec needs " +
                      std::to_string(count(expected)));
}

}  // namespace

std::vector<double> conv2d_reference_forward(const Conv2dSpec& spec, std::span<const double> x,
                                             std::span<const double> w) {
  validate(spec);
  require(x.size(), conv2d_input_elements(spec), "x");
  require(w.size(), conv2d_filter_elements(spec), "w");
  std::vector<double> xs(x.begin(), x.end()), ws(w.begin(), w.end());
  std::vector<double> y(count(conv2d_output_elements(spec)), 0.0);
  direct(spec, Accumulate::y, xs, ws, y);
  return y;
}

std::vector<double> conv2d_reference_backward_data(const Conv2dSpec& spec,
                                                   std::span<const double> dy,
                                                   std::span<const double> w) {
  validate(spec);
  require(dy.size(), conv2d_output_elements(spec), "dy");
  require(w.size(), conv2d_filter_elements(spec), "w");
  std::vector<double> ys(dy.begin(), dy.end()), ws(w.begin(), w.end());
  std::vector<double> dx(count(conv2d_input_elements(spec)), 0.0);
  direct(spec, Accumulate::x, dx, ws, ys);
  return dx;
}

std::vector<double> conv2d_reference_backward_filter(const Conv2dSpec& spec,
                                                     std::span<const double> x,
                                                     std::span<const double> dy) {
  validate(spec);
  require(x.size(), conv2d_input_elements(spec), "x");
  require(dy.size(), conv2d_output_elements(spec), "dy");
  std::vector<double> xs(x.begin(), x.end()), ys(dy.begin(), dy.end());
  std::vector<double> dw(count(conv2d_filter_elements(spec)), 0.0);
  direct(spec, Accumulate::w, xs, dw, ys);
  return dw;
}

}  // namespace timeroof
