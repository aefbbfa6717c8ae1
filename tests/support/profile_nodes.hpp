// Lookups into a profile's analysis (roofline/profile_analysis.hpp) for the
// profile tests: a kernel summary by name, a range node's child by name; each
// throws (a test error naming what is missing) rather than return nothing.
// Header-only: each test that includes it links timeroof_roofline already.
#pragma once

#include <stdexcept>
#include <string>

#include "roofline/profile_analysis.hpp"

namespace timeroof::test {

inline const roofline::KernelSummary& kernel(const roofline::ProfileAnalysis& a,
                                             const std::string& name) {
  for (const roofline::KernelSummary& k : a.kernels)
    if (k.name == name) return k;
  throw std::runtime_error("no kernel " + name);
}

inline const roofline::RangeNode& child(const roofline::RangeNode& n, const std::string& name) {
  for (const roofline::RangeNode& c : n.children)
    if (c.name == name) return c;
  throw std::runtime_error(n.path + " has no child " + name);
}

}  // namespace timeroof::test
