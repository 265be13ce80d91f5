//===- WorkloadAttrs.h - Test attributes of load-manifest, lower-workload -===//
//
// The names of the test attributes the workload passes write, with their
// value kind, meaning and readers. They are a contract between load-manifest
// (which reads Megatron-LM's functional-test configurations), lower-workload
// and the plan, so each is declared once here and used through the constant.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_WORKLOAD_WORKLOADATTRS_H
#define FASTCI_WORKLOAD_WORKLOADATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::workload::attr {

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
