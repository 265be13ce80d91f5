//===- WorkloadAttrs.h - Attribute names the workload passes write -*- C++ -*-//
//
// The attribute names load-manifest and lower-workload (lib/Workload) set on
// tests, declared once so that every reader (selection's configuration
// signature, emit-plan, plugins) shares one spelling. Each comment gives the
// value kind, what it means and who reads it; the verifier checks the kinds
// (passes/Attributes.cpp registers them). docs/IR.md has the table of
// writers and readers, docs/Workloads.md the meaning.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_WORKLOAD_WORKLOADATTRS_H
#define FASTCI_WORKLOAD_WORKLOADATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::workload::attr {

// Written by load-manifest (and parse-python for `floor_overrides`).

/// String, on e2e tests: the shell command of the CI job. Read by
/// lower-workload (flags vs environment overrides) and emit-plan.
inline constexpr llvm::StringLiteral kCommand = "command";
/// String, on Megatron tests: the model_config.yaml the test came from.
/// Read by lower-workload and emit-plan.
inline constexpr llvm::StringLiteral kConfig = "config";
/// Int, on e2e tests: processes the job starts. Read by the configuration
/// signature (select) and emit-plan.
inline constexpr llvm::StringLiteral kNproc = "nproc";
/// String, on tests with golden values: the golden file. Read by
/// lower-workload, which keeps goldens comparable.
inline constexpr llvm::StringLiteral kGolden = "golden";
/// Bool, on tests with goldens: they tolerate fewer steps. Read by
/// lower-workload.
inline constexpr llvm::StringLiteral kTolerant = "tolerant";
/// Dict (name -> string), on e2e tests: the job's environment. Read by
/// emit-plan.
inline constexpr llvm::StringLiteral kEnv = "env";
/// String, on e2e tests: the workload dialect (`megatron`, ...). Read by
/// lower-workload and the configuration signature.
inline constexpr llvm::StringLiteral kDialect = "dialect";
/// String (`declared` | `inferred`), on tests with a scope: where the scope
/// came from (lower-workload writes `inferred`). Read by emit-plan.
inline constexpr llvm::StringLiteral kScopeSource = "scope_source";
/// Dict, on tests: the test's own floor overrides: floor name ->
/// `{off = "<reason>"}` or `{"at-least" = <n>, why = "<reason>"}` (`why`
/// optional), from a manifest's `floors:` or a `fastci` mark. Read by
/// lower-workload.
inline constexpr llvm::StringLiteral kFloorOverrides = "floor_overrides";

// Written by lower-workload.

/// Bool, on lowered-or-kept tests: whether the workload was shrunk. Read by
/// emit-plan.
inline constexpr llvm::StringLiteral kLowered = "lowered";
/// Dict, on tests: dimensions kept at their value and why.
inline constexpr llvm::StringLiteral kPinned = "pinned";
/// Dict, on tests: the behaviour floors that bounded the lowering.
inline constexpr llvm::StringLiteral kFloors = "floors";
/// String, on tests not lowered: why.
inline constexpr llvm::StringLiteral kLoweringReason = "lowering_reason";
/// Dict (dimension -> value), on lowered tests: the new workload.
inline constexpr llvm::StringLiteral kOverrides = "overrides";
/// String list (`--flag`, value, ...), on lowered tests with a command:
/// the overrides as framework flags. Read by emit-plan.
inline constexpr llvm::StringLiteral kOverrideArgs = "override_args";
/// Dict (name -> string), on lowered pytest tests: the overrides as
/// environment (FASTCI_WORKLOAD_OVERRIDES). Read by emit-plan.
inline constexpr llvm::StringLiteral kOverrideEnv = "override_env";
/// Int, on lowered tests with goldens: steps to compare. Read by
/// merge-evidence's golden options and emit-plan.
inline constexpr llvm::StringLiteral kGoldenSteps = "golden_steps";
/// Bool, on lowered tests: the goldens no longer apply.
inline constexpr llvm::StringLiteral kGoldenInvalidated = "golden_invalidated";
/// Number, on lowered tests: seconds before lowering (cost.seconds is the
/// prediction). Read by emit-plan.
inline constexpr llvm::StringLiteral kOriginalSeconds = "original_seconds";

} // namespace fastci::workload::attr

#endif // FASTCI_WORKLOAD_WORKLOADATTRS_H
