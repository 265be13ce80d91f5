//===- Manifest.h - Test manifests for CI jobs that are not pytest items -*-===//
//
// End-to-end GPU tests of LLM frameworks are CI jobs, not pytest items: a
// command template, a GPU count, an expected duration, a workload written as
// framework flags, what the test validates and a golden-values file. A test
// manifest lists them (format in docs/Workloads.md); it can also import
// Megatron-LM's own functional-test configurations (`model_config.yaml`
// files) so real suites load without rewriting.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_WORKLOAD_MANIFEST_H
#define FASTCI_WORKLOAD_MANIFEST_H

#include "fastci/IR/Module.h"
#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"

namespace fastci {

/// How many tests a manifest added and updated.
struct ManifestLoadStats {
  unsigned added = 0;
  unsigned updated = 0;
};

/// Reads the manifest in buffer \p bufferId and adds its tests to \p module
/// (a test already in the module, e.g. from parse-python, gets the
/// manifest's fields). Relative paths in the manifest are resolved against
/// the manifest's directory. Reports problems at their location.
LogicalResult loadTestManifest(unsigned bufferId, Module &module,
                               DiagnosticEngine &diag,
                               ManifestLoadStats &stats);

class YAMLNode;

/// Reads a test's floor overrides, its own adjustments of its dialect's
/// behaviour floors: per floor, `off: <reason>` or `at-least: <n>` with an
/// optional `why`. Sets \p out to floor name -> {off | at-least, why}, the
/// form lower-workload reads from the test's `floor_overrides`. A manifest's
/// `floors:` and a pytest marker's `floors=` (converted to a YAMLNode) both
/// come here, so they accept the same and say the same. Problems are errors
/// at the offending node. Which floors exist depends on the schema
/// lower-workload is given, so names are checked there.
LogicalResult readFloorOverrideSpec(const YAMLNode &node, AttrDict &out,
                                    DiagnosticEngine &diag);

} // namespace fastci

#endif // FASTCI_WORKLOAD_MANIFEST_H
