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

// Megatron-LM functional-test harness (load-manifest writes these on imported
// configurations; lower-workload writes golden_metrics and unknown_flags).

/// String: the harness test type (Megatron's TEST_TYPE: `regular`,
/// `ckpt-resume`, ...). Written by load-manifest (`test_type:` or a
/// config's TEST_TYPE); lower-workload applies the dialect's rules for it.
inline constexpr llvm::StringLiteral kTestType = "test_type";

/// String: the harness mode (a config's MODE: `pretraining`, `inference`,
/// `rl`). Written by load-manifest; read by lower-workload.
inline constexpr llvm::StringLiteral kMode = "mode";

/// List of strings: the metrics the harness compares (a config's METRICS).
/// Written by load-manifest; lower-workload falls back to the dialect's
/// default metrics without it.
inline constexpr llvm::StringLiteral kMetrics = "metrics";

/// List of strings: every golden-values file beside a config
/// (`golden_values_{environment}_{platform}.json`). Written by
/// load-manifest; `golden` names the preferred one.
inline constexpr llvm::StringLiteral kGoldens = "goldens";

/// Dict metric -> int: the last step any golden file records for the
/// metric. Written by load-manifest; lower-workload derives the timing
/// window from it.
inline constexpr llvm::StringLiteral kGoldenLastStep = "golden_last_step";

/// Int: nodes a run spans (from Megatron's recipes). Written by
/// load-manifest; `nproc` is nodes x GPUs per node.
inline constexpr llvm::StringLiteral kNodes = "nodes";

/// List of strings: the recipes (`h100/gpt.yaml`) that run the test.
/// Written by load-manifest, for whoever reads the plan.
inline constexpr llvm::StringLiteral kRecipes = "recipes";

/// List of strings: further argument sets of a config (`MODEL_ARGS_2`, used
/// by later runs of the same test). Written by load-manifest; lower-workload
/// keeps such tests, since it lowers one argument set.
inline constexpr llvm::StringLiteral kRunVariants = "run_variants";

/// String: the manifest a test came from. Written by load-manifest;
/// lower-workload reports each unknown flag once per manifest.
inline constexpr llvm::StringLiteral kManifest = "manifest";

/// List of strings: the metrics that stay comparable with the test's
/// golden values after lowering, over its first `golden_steps` steps.
/// Written by lower-workload; emit-plan copies it into the plan.
inline constexpr llvm::StringLiteral kGoldenMetrics = "golden_metrics";

/// List of strings: flags of the test's workload the dialect does not know.
/// Written by lower-workload, which blocks the dimensions they could depend
/// on unless the flag is allowed (`allow-flags`).
inline constexpr llvm::StringLiteral kUnknownFlags = "unknown_flags";

} // namespace fastci::workload::attr

#endif // FASTCI_WORKLOAD_WORKLOADATTRS_H
