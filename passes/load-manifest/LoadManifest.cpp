//===- LoadManifest.cpp - The load-manifest pass --------------------------===//
//
// load-manifest{file=<yaml>} adds the CI jobs of a test manifest (end-to-end
// training tests with their command, GPUs, duration, workload, validation
// scope and golden values) to the module as tests. The format is in
// docs/Workloads.md; the reader is loadTestManifest() in lib/Workload.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Module.h"
#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Workload/Manifest.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace fastci;

namespace {

struct LoadManifestPass : PassWrapper<LoadManifestPass> {
  llvm::StringRef getArgument() const override { return "load-manifest"; }
  llvm::StringRef getSummary() const override {
    return "Add the CI jobs of a test manifest to the module as tests";
  }
  llvm::StringRef getDescription() const override {
    return "Reads a YAML test manifest (docs/Workloads.md): each job's id, "
           "command template, process and GPU counts, expected duration, "
           "workload flags, validation scope, golden-values file and "
           "environment. `import-megatron` entries load Megatron-LM "
           "functional-test `model_config.yaml` files as they are. A test "
           "already in the module (from parse-python) is updated in place.";
  }

  ListOption<std::string> files{
      *this, "file", llvm::cl::desc("Manifest files to read (required)")};
  Statistic numAdded{this, "num-added", "Tests added"};
  Statistic numUpdated{this, "num-updated", "Tests already present, updated"};

  LogicalResult initialize(DiagnosticEngine &diag) override {
    if (files.empty()) {
      diag.error(getLoc(), "load-manifest needs 'file=<manifest.yaml>'");
      return failure();
    }
    return success();
  }

  void runOnModule() override {
    DiagnosticEngine &diag = getDiagnostics();
    for (const std::string &file : files) {
      llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
          llvm::MemoryBuffer::getFile(file, /*IsText=*/true);
      if (!buffer) {
        diag.emit(Severity::Error, file, 0, 0,
                  "could not open manifest: " + buffer.getError().message());
        return signalPassFailure();
      }
      unsigned bufferId = diag.addBuffer(std::move(*buffer));
      ManifestLoadStats stats;
      if (failed(loadTestManifest(bufferId, getModule(), diag, stats)))
        return signalPassFailure();
      numAdded += stats.added;
      numUpdated += stats.updated;
    }
  }
};

} // namespace

namespace fastci {
void registerLoadManifestPasses() { PassRegistration<LoadManifestPass>(); }
} // namespace fastci
