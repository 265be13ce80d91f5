//===- Schema.h - Workload dimensions, roles and constraints ----*- C++ -*-===//
//
// A workload schema tells lower-workload how a framework spells its workload
// dimensions, what each one is for (its role), how small it may get, how it
// enters the cost model, and which constraints the framework enforces
// between dimensions (layers divisible by pp x vp, heads by tp, ...). FastCI
// ships a default schema with Megatron-LM and torchtitan dialects
// (passes/lower-workload/default-schema.yaml); users may pass their own. The
// format is documented in docs/Workloads.md.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_WORKLOAD_SCHEMA_H
#define FASTCI_WORKLOAD_SCHEMA_H

#include "fastci/Support/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include <optional>
#include <string>
#include <vector>

namespace fastci {

/// What a workload dimension is for. Only steps, depth, width, sequence,
/// batch and checkpoint dimensions are ever lowered; parallel and precision
/// dimensions define what a test runs and never change.
enum class DimensionRole {
  Steps,
  Depth,
  Width,
  Sequence,
  Batch,
  Checkpoint,
  Parallel,
  Precision
};

/// The schema spelling of \p role (`steps`, `depth`, ...).
llvm::StringRef stringifyDimensionRole(DimensionRole role);

/// True for roles that lower-workload may shrink.
bool isShrinkableRole(DimensionRole role);

/// One workload dimension of a dialect.
struct Dimension {
  /// Its name in the schema (`num-layers`).
  std::string name;
  /// Its spelling in the test's workload (`--num-layers`); empty for
  /// dimensions that are derived or come from the test itself.
  std::string flag;
  /// What it is for.
  DimensionRole role = DimensionRole::Steps;
  /// The smallest value lowering may give it.
  int64_t min = 1;
  /// The value it has when the workload does not name it, if any.
  std::optional<int64_t> defaultValue;
  /// Exponent of new/old in the predicted run time.
  double costExponent = 0;
  /// False to keep the dimension as it is even when its role could shrink.
  bool lower = true;
  /// `nproc` when the value is the test's process count.
  std::string source;
  /// The dimension whose original value this one takes when the workload
  /// does not name it (`lr-decay-iters` follows `train-iters` in
  /// Megatron-LM). When lowering changes that dimension and this one is
  /// pinned, its original value is emitted explicitly, so what depends on
  /// it (the learning-rate schedule) stays as it was.
  std::string follows;
  /// For derived dimensions: value = prod(deriveNum) / prod(deriveDen).
  std::vector<std::string> deriveNum, deriveDen;
};

/// A relation the framework enforces between dimensions.
struct Constraint {
  /// The kinds of relation.
  enum class Kind {
    /// value % (factor * prod(operands)) == 0
    Divisible,
    /// value < bound, with bound = factor * prod(operands) + offset, or
    /// constant + offset when `than` is an integer.
    Less,
    /// value >= bound (as for Less).
    AtLeast,
    /// prod(operands) / prod(denominators) keeps its original value, with
    /// value unused.
    Preserve,
  };
  Kind kind = Kind::Divisible;
  /// The constrained dimension (unused for Preserve).
  std::string value;
  /// The other dimensions (numerator for Preserve).
  std::vector<std::string> operands;
  /// Denominator dimensions, for Preserve.
  std::vector<std::string> denominators;
  /// Constant multiplier of the operands (Divisible, Less, AtLeast).
  int64_t factor = 1;
  /// Added to the bound of Less and AtLeast.
  int64_t offset = 0;
  /// For Less and AtLeast: an integer bound instead of dimensions.
  std::optional<int64_t> constant;
  /// For floors: the floor's name, used in reasons.
  std::string name;
  /// The constraint applies only when this dimension is non-zero.
  std::string when;
  /// The constraint applies only to tests whose scope includes this.
  std::string ifScope;
  /// Human-readable statement, used in reasons.
  std::string why;
};

/// One framework's dimensions, constraints and scope vocabulary.
struct Dialect {
  /// The dialect's name (`megatron`).
  std::string name;
  /// Share of run time that does not scale with any dimension.
  double fixedFraction = 0.15;
  /// Dimensions, in the order lowering decides them.
  std::vector<Dimension> dimensions;
  /// Constraints between dimensions.
  std::vector<Constraint> constraints;
  /// Behaviour floors: `at-least` relations that keep a lowered test able
  /// to catch what it catches at full size (enough compared steps, steps
  /// after a resume, width per tensor-parallel rank...). Unlike constraints
  /// they never ask for more than the original workload: a floor's bound is
  /// capped at the constrained dimension's original value.
  std::vector<Constraint> floors;
  /// Validation scope name -> dimensions it pins.
  llvm::StringMap<std::vector<std::string>> scopes;

  /// The dimension named \p name, or nullptr.
  const Dimension *lookup(llvm::StringRef name) const;
  /// The dimension spelled \p flag, or nullptr.
  const Dimension *lookupFlag(llvm::StringRef flag) const;
};

/// A set of dialects.
struct WorkloadSchema {
  std::vector<Dialect> dialects;
  /// The dialect named \p name, or nullptr.
  const Dialect *lookup(llvm::StringRef name) const;
};

/// Parses buffer \p bufferId as a workload schema; reports errors at their
/// location and returns std::nullopt.
std::optional<WorkloadSchema> parseWorkloadSchema(unsigned bufferId,
                                                  DiagnosticEngine &diag);

/// Loads the workload schema at \p path, or the one FastCI ships when
/// \p path is empty; reports an unreadable file at \p loc (the option that
/// named it) and schema errors at their location.
std::optional<WorkloadSchema> loadWorkloadSchema(llvm::StringRef path,
                                                 llvm::SMLoc loc,
                                                 DiagnosticEngine &diag);

/// The text of the schema FastCI ships (default-schema.yaml, embedded at
/// build time).
llvm::StringRef getDefaultWorkloadSchemaText();

} // namespace fastci

#endif // FASTCI_WORKLOAD_SCHEMA_H
