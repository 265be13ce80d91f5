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
  /// `nproc` when the value is the test's process count; `timing-window`
  /// when it is the last step of the harness's timing comparison window
  /// (Dialect::timing), computed from the test's golden values.
  std::string source;
  /// Other spellings of the dimension in a workload (NeMo-style
  /// `trainer.max_steps` for `--train-iters`).
  std::vector<std::string> aliases;
  /// The dimension whose original value this one takes when the workload
  /// does not name it (`lr-decay-iters` follows `train-iters` in
  /// Megatron-LM). When lowering changes that dimension and this one is
  /// pinned, its original value is emitted explicitly, so what depends on
  /// it (the learning-rate schedule) stays as it was.
  std::string follows;
  /// For derived dimensions: value = prod(deriveNum) / prod(deriveDen);
  /// an entry that is an integer is that constant.
  std::vector<std::string> deriveNum, deriveDen;
  /// For derived dimensions: round the quotient down (`round: down`, the
  /// harness's `train_iters // 2`) instead of requiring it to be exact.
  bool deriveRoundDown = false;
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
  /// The constraint applies only when these dimensions are all zero or
  /// absent (`--moe-router-pre-softmax` lifts the top-k rule).
  std::vector<std::string> unless;
  /// The constraint applies only to tests of these harness test types
  /// (Megatron's TEST_TYPE); empty for all.
  std::vector<std::string> ifTestTypes;
  /// Like a floor, the bound is capped at the constrained dimension's
  /// original value: the relation may only stop lowering, never ask for
  /// more than the test had (`capped: true`).
  bool capped = false;
  /// Human-readable statement, used in reasons.
  std::string why;
};

/// What the dialect knows about one non-dimension flag, one harness test
/// type or one harness mode: the scopes it adds, the dimensions it pins and
/// frees, or that the test is kept as it is.
struct HarnessRule {
  /// The flag, test type or mode it describes.
  std::string name;
  /// Scopes every test it applies to validates.
  std::vector<std::string> scopes;
  /// Dimensions it keeps at their original value.
  std::vector<std::string> pins;
  /// Roles whose dimensions it keeps (`[depth, width]`: the model shape).
  std::vector<DimensionRole> pinRoles;
  /// Dimensions it lets shrink although a scope or `lower: false` would
  /// keep them (Megatron's own lightweight mode shrinks the save interval
  /// of resume tests).
  std::vector<std::string> unpins;
  /// Dimensions the workload must name; a test lacking one is kept, with a
  /// warning.
  std::vector<std::string> required;
  /// For flags: when the value is a list, it has one entry per unit of this
  /// dimension (`--moe-layer-freq` per layer), which is then pinned.
  std::string layerList;
  /// Non-empty: tests it applies to keep their whole workload, for this
  /// reason.
  std::string keep;
  /// For test types: the harness compares the test with golden values
  /// even where no golden file is at hand.
  bool goldens = false;
  /// Why it pins what it pins; includes the source location of the rule.
  std::string why;
};

/// The harness's timing comparison: which steps of a timing metric it
/// compares, chosen by the golden values' last step.
struct TimingWindow {
  /// The window applies when the goldens' last step is at most this (none:
  /// always).
  std::optional<int64_t> upTo;
  /// First and last compared step.
  int64_t first = 0, last = 0;
};

/// A test-id pattern that names a validation scope (`8experts`).
struct NameScope {
  /// Regular expression matched against each token of the test id.
  std::string regex;
  /// The scope a matching token adds.
  std::string scope;
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
  /// Test-id token patterns that add scopes.
  std::vector<NameScope> nameScopes;
  /// Flags that are no dimension but which the dialect knows: rules for
  /// those that constrain lowering, and an empty rule for those that do not
  /// depend on any dimension lowering changes.
  llvm::StringMap<HarnessRule> flags;
  /// The harness's test types (Megatron's TEST_TYPE) and modes (MODE).
  llvm::StringMap<HarnessRule> testTypes, modes;
  /// The metrics the harness compares when a test names none.
  std::vector<std::string> defaultMetrics;
  /// The timing metric and its comparison windows, in order of preference.
  std::string timingMetric;
  std::vector<TimingWindow> timingWindows;
  /// For a flag the dialect does not know: word of its name -> dimensions
  /// it could depend on, whose lowering it blocks; a flag matching no word
  /// blocks the dimensions of unknownFlagRoles.
  std::vector<std::pair<std::string, std::vector<std::string>>>
      unknownFlagWords;
  std::vector<DimensionRole> unknownFlagRoles;

  /// True if \p flag is a dimension's spelling or a known flag.
  bool knowsFlag(llvm::StringRef flag) const;
  /// The dimensions an unknown \p flag could depend on.
  std::vector<std::string> unknownFlagDimensions(llvm::StringRef flag) const;

  /// The dimension named \p name, or nullptr.
  const Dimension *lookup(llvm::StringRef name) const;
  /// The dimension spelled \p flag (or one of its aliases), or nullptr.
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
