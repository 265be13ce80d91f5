//===- LoadHistory.cpp - The load-history pass ----------------------------===//
//
// load-history{junit=<files or dirs>,results=<files>} reads test outcome
// history from pytest JUnit XML reports and CI job-result exports (JSON or
// CSV) into Test::history, then replaces declared costs with the median of
// recent measured durations. The readers and the merge live in lib/History;
// this file binds them to the pipeline and decides what a bad file costs: a
// warning and the file skipped, never the pipeline. docs/Risk.md has the
// rules.
//
//===----------------------------------------------------------------------===//
#include "fastci/History/History.h"
#include "fastci/History/HistoryAttrs.h"
#include "fastci/History/HistoryReaders.h"
#include "fastci/IR/Module.h"
#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassRegistry.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace fastci;

namespace {

struct LoadHistoryPass : PassWrapper<LoadHistoryPass> {
  llvm::StringRef getArgument() const override { return "load-history"; }
  llvm::StringRef getSummary() const override {
    return "Read test outcome history from JUnit XML and CI results";
  }
  llvm::StringRef getDescription() const override {
    return "Reads pytest `--junitxml` reports (files, or every `*.xml` of a "
           "directory, in name order) and CI job results (`.json` or `.csv`), "
           "matches them to the module's tests, and merges them into each "
           "test's history, sorted by time and deduplicated. A test with "
           "timed runs gets the median of its recent durations as its cost "
           "(`cost_source = \"history\"`). Malformed files are skipped with a "
           "warning. See docs/Risk.md.";
  }

  ListOption<std::string> junit{
      *this, "junit",
      llvm::cl::desc("JUnit XML reports or directories of them, oldest first")};
  ListOption<std::string> results{
      *this, "results", llvm::cl::desc("CI job results (.json or .csv)")};
  Option<unsigned> recent{
      *this, "recent",
      llvm::cl::desc("Recent runs whose median duration becomes the cost"),
      llvm::cl::init(10)};

  Statistic numFiles{this, "num-files", "History files read"};
  Statistic numSkippedFiles{this, "num-skipped-files",
                            "History files skipped as malformed"};
  Statistic numRecords{this, "num-records", "Outcomes merged"};
  Statistic numDuplicates{this, "num-duplicates", "Repeated outcomes dropped"};
  Statistic numUnknown{this, "num-unknown-tests",
                       "Records of tests not in the module (ignored)"};
  Statistic numMeasured{this, "num-measured-costs",
                        "Tests whose cost was measured from history"};

  LogicalResult initialize(DiagnosticEngine &diag) override {
    if (junit.empty() && results.empty()) {
      diag.error(getLoc(), "load-history needs 'junit=<files>' or "
                           "'results=<files>'");
      return failure();
    }
    if (recent == 0) {
      diag.error(getLoc(), "load-history option 'recent' must be at least 1");
      return failure();
    }
    return success();
  }

  void runOnModule() override;

private:
  /// Loads \p path into the source manager; reports and fails when it
  /// cannot be read.
  std::optional<unsigned> addFile(llvm::StringRef path);
  /// Expands directories into their `*.xml` files, in name order.
  LogicalResult expandJUnitPaths(std::vector<std::string> &paths);
  /// Says that the file of \p bufferId was skipped after a reader warning.
  void noteSkipped(unsigned bufferId);
  void updateCosts(const HistoryMergeStats &stats);
};

} // namespace

std::optional<unsigned> LoadHistoryPass::addFile(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer) {
    getDiagnostics().emit(Severity::Error, path, 0, 0,
                          "cannot read history file: " +
                              buffer.getError().message());
    return std::nullopt;
  }
  ++numFiles;
  return getDiagnostics().addBuffer(std::move(*buffer));
}

LogicalResult
LoadHistoryPass::expandJUnitPaths(std::vector<std::string> &paths) {
  for (const std::string &path : junit) {
    if (!llvm::sys::fs::is_directory(path)) {
      paths.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(path, ec), end; it != end && !ec;
         it.increment(ec))
      if (llvm::sys::path::extension(it->path()) == ".xml")
        found.push_back(it->path());
    if (ec) {
      getDiagnostics().emit(Severity::Error, path, 0, 0,
                            "cannot list directory: " + ec.message());
      return failure();
    }
    // Directory order is arbitrary; names (CI writes run numbers or dates
    // into them) are the order runs happened in.
    llvm::sort(found);
    llvm::append_range(paths, found);
  }
  return success();
}

void LoadHistoryPass::noteSkipped(unsigned bufferId) {
  ++numSkippedFiles;
  getDiagnostics().emit(Severity::Note,
                        getDiagnostics()
                            .getSourceMgr()
                            .getMemoryBuffer(bufferId)
                            ->getBufferIdentifier(),
                        0, 0, "skipped this history file; the others are used");
}

void LoadHistoryPass::updateCosts(const HistoryMergeStats &stats) {
  for (Test &test : getModule().getTests()) {
    int64_t gpus = stats.observedGpus[test.index].value_or(test.cost.gpus);
    std::optional<MeasuredCost> measured =
        measureCost(test.history, recent, gpus);
    if (!measured) {
      if (!test.attrs.contains(history::attr::kCostSource))
        test.attrs.set(history::attr::kCostSource,
                       Attribute::getString("declared"));
      continue;
    }
    test.cost = measured->cost;
    test.attrs.set(history::attr::kCostSource, Attribute::getString("history"));
    test.attrs.set(history::attr::kCostRuns, Attribute::getInt(measured->runs));
    ++numMeasured;
  }
}

void LoadHistoryPass::runOnModule() {
  std::vector<std::string> junitPaths;
  if (failed(expandJUnitPaths(junitPaths)))
    return signalPassFailure();

  std::vector<HistoryRecord> records;
  // Reports without a timestamp are ordered by their position: each is one
  // second after the run before it.
  int64_t previousTime = 0;
  bool failedToRead = false;
  for (const std::string &path : junitPaths) {
    std::optional<unsigned> id = addFile(path);
    if (!id) {
      failedToRead = true;
      continue;
    }
    int64_t runTime;
    if (failed(readJUnitXML(*id, getDiagnostics(), previousTime + 1, records,
                            runTime, Severity::Warning))) {
      noteSkipped(*id);
      continue;
    }
    previousTime = runTime;
  }
  for (const std::string &path : results) {
    std::optional<unsigned> id = addFile(path);
    if (!id) {
      failedToRead = true;
      continue;
    }
    llvm::StringRef text =
        getDiagnostics().getSourceMgr().getMemoryBuffer(*id)->getBuffer();
    llvm::StringRef extension = llvm::sys::path::extension(path);
    bool isJSON = extension == ".json" ||
                  (extension != ".csv" && (text.ltrim().starts_with("[") ||
                                           text.ltrim().starts_with("{")));
    LogicalResult read =
        isJSON
            ? readResultsJSON(*id, getDiagnostics(), records, Severity::Warning)
            : readResultsCSV(*id, getDiagnostics(), records, Severity::Warning);
    if (failed(read))
      noteSkipped(*id);
  }
  if (failedToRead)
    return signalPassFailure();

  HistoryMergeStats stats = mergeHistory(getModule(), records);
  numRecords += stats.merged;
  numDuplicates += stats.duplicates;
  numUnknown += stats.unknownTests;
  if (stats.unknownTests)
    getDiagnostics().emit(Severity::Remark, getLoc(),
                          "ignored " + llvm::Twine(stats.unknownTests) +
                              " history records of " +
                              llvm::Twine(stats.unknownNames.size()) +
                              " tests not in the module (first: '" +
                              stats.unknownNames.front() + "')");
  updateCosts(stats);
}

namespace fastci {
void registerLoadHistoryPasses() {
  static PassRegistration<LoadHistoryPass> registration;
}
} // namespace fastci
