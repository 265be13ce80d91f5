//===- DeclaredAttrs.cpp - Value kinds of the built-in attributes --------===//
//
// Registers, for the verifier and `fastci-opt --list-attributes`, every
// attribute the built-in passes exchange: the node kinds it may sit on, the
// kind of its value, its writer and its readers. The names are the constants
// of each area's <Area>Attrs.h; this table only adds what the verifier
// checks and the docs show (docs/IR.md, "Attributes passes exchange"). A new
// constant gets its row here in the same change.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/DiffAttrs.h"
#include "fastci/Evidence/EvidenceAttrs.h"
#include "fastci/History/HistoryAttrs.h"
#include "fastci/IR/AttrSchema.h"
#include "fastci/IR/IRAttrs.h"
#include "fastci/Python/PythonAttrs.h"
#include "fastci/Schedule/ScheduleAttrs.h"
#include "fastci/Select/SelectAttrs.h"
#include "fastci/Workload/WorkloadAttrs.h"

using namespace fastci;

namespace {
using K = AttrValueKind;
constexpr unsigned kModule = unsigned(AttrHost::Module);
constexpr unsigned kEntity = unsigned(AttrHost::Entity);
constexpr unsigned kTest = unsigned(AttrHost::Test);
constexpr unsigned kRecord = unsigned(AttrHost::Evidence);
constexpr unsigned kChange = unsigned(AttrHost::Change);
constexpr unsigned kFile = unsigned(AttrHost::ChangedFile);
} // namespace

namespace fastci {
void registerDeclaredAttributes() {
  namespace ir = ir::attr;
  namespace ev = evidence::attr;
  namespace sel = select::attr;
  namespace dif = diff::attr;
  namespace wl = workload::attr;
  namespace hist = history::attr;
  namespace sch = schedule::attr;
  namespace py = python::attr;
  static const AttrDecl decls[] = {
      {ir::kRevision, kModule, K::String, "the snapshot's producer",
       "merge-evidence"},

      {ev::kState, kTest | kRecord, K::String, "merge-evidence",
       "select-affected, prune-context-equiv, emit-plan"},
      {ev::kStaleEntities, kTest | kRecord, K::NameList, "merge-evidence",
       "select-affected"},
      {ev::kStaleSamples, kTest | kRecord, K::Int, "merge-evidence",
       "select-affected"},
      {ev::kFromEvidence, kTest, K::Bool, "merge-evidence", "emit-plan"},
      {ev::kContextDepth, kModule, K::Int, "merge-evidence", "EvidenceGraph"},
      {ev::kFiles, kRecord, K::Int, "merge-evidence", "users"},
      {ev::kPids, kRecord, K::IntList, "merge-evidence", "users"},
      {ev::kExternalSamples, kRecord, K::Int, "merge-evidence", "users"},
      {ev::kWallSeconds, kRecord, K::Number, "merge-evidence", "users"},
      {ev::kComplete, kRecord, K::Bool, "merge-evidence", "users"},
      {ev::kEvidencePython, kModule, K::String, "merge-evidence", "emit-plan"},
      {ev::kCoverage, kRecord, K::String, "merge-evidence", "select-affected"},
      {ev::kFunctions, kRecord, K::NameList, "merge-evidence", "EvidenceGraph"},
      {ev::kImportFunctions, kRecord, K::NameList, "merge-evidence",
       "EvidenceGraph"},
      {ev::kImports, kRecord, K::NameList, "merge-evidence", "EvidenceGraph"},
      {ev::kReads, kRecord, K::StringList, "merge-evidence",
       "select-affected, mark-changed"},
      {ev::kImportSamples, kRecord, K::Int, "merge-evidence", "users"},
      {ev::kEvidenceSuperseded, kModule, K::Int, "merge-evidence", "users"},
      {ev::kImportTimeEntities, kModule, K::Dict, "merge-evidence",
       "EvidenceGraph"},
      {ev::kExternalImports, kRecord, K::StringList, "merge-evidence",
       "mark-changed"},
      {ev::kDistributionModules, kModule, K::Dict, "merge-evidence",
       "mark-changed"},
      {ev::kDistributionRequires, kModule, K::Dict, "merge-evidence",
       "mark-changed"},
      {ev::kDistributionVersions, kModule, K::Dict, "merge-evidence",
       "mark-changed"},

      {sel::kSelected, kTest, K::Bool, "select-affected",
       "prune-context-equiv, lower-workload, score-risk, schedule, emit-plan"},
      {sel::kRule, kTest, K::String, "select-affected",
       "prune-context-equiv, emit-plan, fastci plan --explain"},
      {sel::kReason, kTest, K::String, "select-affected (parse-python)",
       "emit-plan, fastci plan --explain"},
      {sel::kSelectionSummary, kModule, K::Dict, "select-affected",
       "emit-plan"},
      {sel::kUnreached, kModule, K::StringList, "select-affected", "emit-plan"},
      {sel::kPruned, kTest, K::Bool, "prune-context-equiv",
       "lower-workload, schedule, emit-plan"},
      {sel::kPrunedBy, kTest, K::NameList, "prune-context-equiv",
       "emit-plan, fastci plan --explain"},
      {sel::kWitnesses, kTest, K::Dict, "prune-context-equiv",
       "emit-plan, fastci plan --explain"},
      {sel::kPruningSummary, kModule, K::Dict, "prune-context-equiv",
       "emit-plan"},
      {sel::kEnclosedBy, kTest, K::String, "select-affected", "emit-plan"},
      {sel::kEvidenceTests, kTest, K::Int, "select-affected", "users"},

      {dif::kCategory, kFile, K::String, "mark-changed", "emit-plan"},
      {dif::kDecision, kFile, K::String, "mark-changed", "select-affected"},
      {dif::kReason, kFile | kChange, K::String, "mark-changed",
       "select-affected"},
      {dif::kRule, kFile, K::String, "mark-changed", "users"},
      {dif::kTests, kFile, K::StringList, "mark-changed", "select-affected"},
      {dif::kTags, kFile, K::StringList, "mark-changed", "users"},
      {dif::kModules, kFile, K::StringList, "mark-changed", "users"},
      {dif::kExtensions, kFile, K::StringList, "mark-changed", "users"},
      {dif::kInModule, kFile, K::Bool, "mark-changed", "users"},
      {dif::kModule, kFile, K::String, "mark-changed", "users"},
      {dif::kOldModule, kFile, K::String, "mark-changed", "users"},
      {dif::kOldPath, kFile, K::String, "mark-changed", "users"},
      {dif::kBinary, kFile, K::Bool, "mark-changed", "users"},
      {dif::kMode, kFile, K::String, "mark-changed", "users"},
      {dif::kMovedFrom, kChange, K::String, "mark-changed",
       "select-affected (ChangeSet)"},
      {dif::kMovedFromFile, kChange, K::String, "mark-changed", "users"},
      {dif::kModified, kChange, K::Bool, "mark-changed", "users"},
      {dif::kSimilarity, kChange, K::Int, "mark-changed", "users"},
      {dif::kRemovedLines, kChange, K::StringList, "mark-changed", "users"},
      {dif::kVia, kChange, K::String, "mark-changed", "select-affected"},
      {dif::kDecoratorLine, kEntity, K::Int, "mark-changed",
       "mark-changed (ChangeMapper)"},
      {dif::kChangePolicy, kModule, K::String, "mark-changed", "emit-plan"},
      {dif::kPolicyAll, kModule, K::Bool, "mark-changed", "select-affected"},
      {dif::kPolicyAllReasons, kModule, K::StringList, "mark-changed",
       "select-affected"},
      {dif::kChangeSource, kModule, K::String, "mark-changed", "users"},
      {dif::kGitCommands, kModule, K::StringList, "mark-changed", "users"},
      {dif::kModuleLevel, kChange, K::String, "mark-changed",
       "select-affected"},
      {dif::kDefines, kChange, K::StringList, "mark-changed",
       "select-affected"},
      {dif::kEffectStatement, kChange, K::String, "mark-changed",
       "select-affected"},
      {dif::kChangedImports, kChange, K::StringList, "mark-changed",
       "select-affected"},
      {dif::kImportsOnly, kChange, K::Bool, "mark-changed", "select-affected"},
      {dif::kRegisteredBy, kChange, K::StringList, "mark-changed",
       "select-affected"},
      {dif::kReaders, kFile, K::Any, "mark-changed", "select-affected"},
      {dif::kDistributions, kFile, K::StringList, "mark-changed", "users"},
      {dif::kPackages, kFile, K::StringList, "mark-changed", "users"},
      {dif::kImporters, kFile, K::StringList, "mark-changed",
       "select-affected"},

      {wl::kCommand, kTest, K::String, "load-manifest",
       "lower-workload, emit-plan"},
      {wl::kConfig, kTest, K::String, "load-manifest",
       "lower-workload, emit-plan"},
      {wl::kNproc, kTest, K::Int, "load-manifest",
       "prune-context-equiv (ConfigSignature), emit-plan"},
      {wl::kGolden, kTest, K::String, "load-manifest", "lower-workload"},
      {wl::kTolerant, kTest, K::Bool, "load-manifest", "lower-workload"},
      {wl::kEnv, kTest, K::Dict, "load-manifest", "emit-plan"},
      {wl::kDialect, kTest, K::String, "load-manifest",
       "lower-workload, prune-context-equiv (ConfigSignature)"},
      {wl::kScopeSource, kTest, K::String, "load-manifest, lower-workload",
       "users"},
      // parse-python records a bad `floors` mark as a string saying why, for
      // lower-workload to reject with that reason.
      {wl::kFloorOverrides, kTest, K::Any, "load-manifest, parse-python",
       "lower-workload"},
      {wl::kLowered, kTest, K::Bool, "lower-workload", "emit-plan"},
      {wl::kPinned, kTest, K::Dict, "lower-workload", "users"},
      {wl::kFloors, kTest, K::Dict, "lower-workload", "users"},
      {wl::kLoweringReason, kTest, K::String, "lower-workload", "users"},
      {wl::kOverrides, kTest, K::Dict, "lower-workload", "emit-plan"},
      {wl::kOverrideArgs, kTest, K::StringList, "lower-workload", "emit-plan"},
      {wl::kOverrideEnv, kTest, K::Dict, "lower-workload", "emit-plan"},
      {wl::kGoldenSteps, kTest, K::Int, "lower-workload", "emit-plan"},
      {wl::kGoldenInvalidated, kTest, K::Bool, "lower-workload", "users"},
      {wl::kOriginalSeconds, kTest, K::Number, "lower-workload", "emit-plan"},

      {wl::kTestType, kTest, K::String, "load-manifest", "lower-workload"},
      {wl::kMode, kTest, K::String, "load-manifest", "lower-workload"},
      {wl::kMetrics, kTest, K::Any, "load-manifest", "lower-workload"},
      {wl::kGoldens, kTest, K::Any, "load-manifest", "lower-workload"},
      {wl::kGoldenLastStep, kTest, K::Dict, "load-manifest", "lower-workload"},
      {wl::kNodes, kTest, K::Int, "load-manifest", "users"},
      {wl::kRecipes, kTest, K::Any, "load-manifest", "users"},
      {wl::kRunVariants, kTest, K::Any, "load-manifest", "lower-workload"},
      {wl::kManifest, kTest, K::String, "load-manifest", "lower-workload"},
      {wl::kGoldenMetrics, kTest, K::Any, "lower-workload", "users"},
      {wl::kUnknownFlags, kTest, K::Any, "lower-workload", "users"},

      {py::kRoot, kModule, K::String, "parse-python",
       "merge-evidence, mark-changed"},
      {py::kParseError, kEntity, K::Bool, "parse-python", "select-affected"},
      {py::kEnclosing, kTest, K::Bool, "parse-python",
       "select-affected, emit-plan"},
      {py::kEnclosingReason, kTest, K::String, "parse-python", "emit-plan"},
      {py::kNames, kEntity, K::StringList, "parse-python", "select-affected"},
      {py::kFlows, kEntity, K::Dict, "parse-python", "select-affected"},
      {py::kEffectNames, kEntity, K::StringList, "parse-python",
       "select-affected"},
      {py::kStatementsHash, kEntity, K::String, "parse-python",
       "merge-evidence"},
      {py::kParametrized, kTest, K::Bool, "parse-python", "users"},
      {py::kInheritedUnknown, kTest, K::Bool, "parse-python", "users"},
      {py::kDecorators, kEntity, K::StringList, "parse-python", "mark-changed"},
      {py::kAsync, kEntity, K::Bool, "parse-python", "users"},
      {py::kLambda, kEntity, K::Bool, "parse-python", "users"},
      {py::kFixture, kEntity, K::Bool, "parse-python", "users"},

      {hist::kCostSource, kTest, K::String, "load-history", "emit-plan"},
      {hist::kCostRuns, kTest, K::Int, "load-history", "users"},

      {sch::kRisk, kTest, K::Number, "score-risk",
       "schedule, prune-context-equiv, emit-plan"},
      {sch::kRiskFailures, kTest, K::Number, "score-risk", "users"},
      {sch::kRiskChange, kTest, K::Number, "score-risk", "users"},
      {sch::kRiskFlakiness, kTest, K::Number, "score-risk", "users"},
      {sch::kRiskNew, kTest, K::Bool, "score-risk", "users"},
      {sch::kRank, kTest, K::Int, "schedule", "compute-metrics, emit-plan"},
      {sch::kRunner, kTest, K::Int, "schedule", "emit-plan"},
      {sch::kStart, kTest, K::Number, "schedule", "compute-metrics, emit-plan"},
      {sch::kEnd, kTest, K::Number, "schedule", "compute-metrics"},
      {sch::kSchedulePolicy, kModule, K::String, "schedule", "emit-plan"},
      {sch::kScheduleRunners, kModule, K::Int, "schedule", "emit-plan"},
      {sch::kScheduleGpusPerRunner, kModule, K::Int, "schedule", "emit-plan"},
      {sch::kScheduleTests, kModule, K::Int, "schedule", "users"},
      {sch::kScheduleMakespan, kModule, K::Number, "schedule", "emit-plan"},
      {sch::kScheduleGpuSeconds, kModule, K::Number, "schedule", "users"},
      {sch::kScheduleFailureProbability, kModule, K::Number, "schedule",
       "users"},
      {sch::kScheduleExpectedFirstFailureTime, kModule, K::Number, "schedule",
       "users"},
      {sch::kScheduleExpectedFirstFailureGpuSeconds, kModule, K::Number,
       "schedule", "users"},
      {sch::kMetricsFailing, kModule, K::Int, "compute-metrics", "utils/eval"},
      {sch::kMetricsDetected, kModule, K::Int, "compute-metrics", "utils/eval"},
      {sch::kMetricsAPFD, kModule, K::Number, "compute-metrics", "utils/eval"},
      {sch::kMetricsAPFDc, kModule, K::Number, "compute-metrics", "utils/eval"},
      {sch::kMetricsNAPFD, kModule, K::Number, "compute-metrics", "utils/eval"},
      {sch::kMetricsFirstFailureTime, kModule, K::Number, "compute-metrics",
       "utils/eval"},
      {sch::kMetricsFirstFailureGpuSeconds, kModule, K::Number,
       "compute-metrics", "utils/eval"},
  };
  registerAttrDecls(decls);
}
} // namespace fastci
