// The words of the model a report uses, each with what it means: the
// quantities (times, bounds, rates, shares, parts of a call's time) and every
// name a bottleneck class, a class rule, a precision class or a memory level can
// take. The names are listed from the model's own enums (kAllBottlenecks,
// kAllComputeUnits, kAllClassRules, kAllPrecisionClasses, kAllLevels), each
// meaning from a switch without a default, so a new value does not compile
// without its entry; tests/cpu/report_test checks that every class label the
// model can produce has one.
#pragma once

#include <string>
#include <vector>

namespace timeroof::roofline {

struct GlossaryEntry {
  std::string term;  // as the report writes it: "T_k", "memory_bound(l2)", "tensor_fp16"
  std::string meaning;
};

// Quantities first, then the classes (Classification::label() spellings), the
// rules that decide them, the precision classes and the memory levels.
std::vector<GlossaryEntry> glossary();

}  // namespace timeroof::roofline
