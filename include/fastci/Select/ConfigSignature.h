//===- ConfigSignature.h - The configuration a test validates ---*- C++ -*-===//
//
// Two end-to-end tests that run the same lines of code are still not
// interchangeable when one trains with tensor parallelism 2 and the other
// with pipeline parallelism 4, or one in bf16 and the other in fp8: the code
// takes other branches, talks to other process groups, rounds differently.
// A configuration signature captures what a test validates: the values of
// the workload dimensions the workload schema marks behaviour-changing
// (roles `parallel` and `precision`), the test's process count, and its
// validation scope. prune-context-equiv only lets a test stand in for
// another when their signatures are equal.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SELECT_CONFIGSIGNATURE_H
#define FASTCI_SELECT_CONFIGSIGNATURE_H

#include "fastci/IR/Module.h"
#include "fastci/Workload/Schema.h"
#include <string>

namespace fastci {

/// Computes configuration signatures under one workload schema.
class ConfigSignatureBuilder {
public:
  /// Uses the behaviour-changing dimensions of \p schema.
  explicit ConfigSignatureBuilder(WorkloadSchema schema);

  /// The signature of \p test: `dim=value` for every behaviour-changing
  /// dimension of its dialect (every dialect's when the test names none or
  /// an unknown one), `nproc`, and the sorted scope (inferred from the
  /// test's name, as lower-workload does, when it declares none). Dimensions the workload
  /// leaves out take their schema default, so spelling a default explicitly
  /// does not make two tests differ.
  std::string getSignature(const Test &test) const;

private:
  /// Appends the dimensions of \p dialect to \p out.
  void appendDialect(const Dialect &dialect, const Test &test,
                     std::string &out) const;

  WorkloadSchema schema;
};

} // namespace fastci

#endif // FASTCI_SELECT_CONFIGSIGNATURE_H
