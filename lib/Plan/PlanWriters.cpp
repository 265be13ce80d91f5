//===- PlanWriters.cpp - JSON, pytest, GitHub, GitLab and shell plans -----===//
//
// Every format is derived from the same Plan; the machine-readable ones (JSON,
// GitHub matrix, GitLab YAML) are produced through llvm::json so that quoting
// is never hand-rolled. The GitLab pipeline is YAML whose scalars are JSON
// strings, which YAML 1.2 reads as double-quoted scalars: any test name or
// command survives intact.
//
//===----------------------------------------------------------------------===//
#include "fastci/Plan/PlanWriters.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <map>

using namespace fastci;

std::optional<PlanFormat> fastci::parsePlanFormat(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<PlanFormat>>(name)
      .Case("json", PlanFormat::Json)
      .Case("pytest", PlanFormat::Pytest)
      .Case("github-matrix", PlanFormat::GithubMatrix)
      .Case("gitlab", PlanFormat::Gitlab)
      .Case("shell", PlanFormat::Shell)
      .Default(std::nullopt);
}

llvm::StringRef fastci::getPlanFormatNames() {
  return "json, pytest, github-matrix, gitlab, shell";
}

std::string fastci::shellQuote(llvm::StringRef word) {
  auto isSafe = [](char c) {
    return llvm::isAlnum(c) || llvm::StringRef("@%+=:,./_-").contains(c);
  };
  if (!word.empty() && llvm::all_of(word, isSafe))
    return word.str();
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'')
      quoted += "'\\''";
    else
      quoted += c;
  }
  return quoted + "'";
}

std::string fastci::shellCommandLine(const PlannedTest &test) {
  std::string line;
  if (!test.env.empty()) {
    line = "env";
    for (const auto &[name, value] : test.env)
      line += " " + shellQuote(name + "=" + value);
  }
  for (const std::string &arg : test.argv) {
    if (!line.empty())
      line += ' ';
    line += shellQuote(arg);
  }
  return line;
}

/// \p text as a JSON string; bytes that are not UTF-8 become U+FFFD rather
/// than tripping llvm::json's precondition.
static llvm::json::Value jsonString(llvm::StringRef text) {
  if (llvm::json::isUTF8(text))
    return text.str();
  return llvm::json::fixUTF8(text);
}

static llvm::json::Object
jsonStringMap(const std::map<std::string, std::string> &map) {
  llvm::json::Object object;
  for (const auto &[key, value] : map)
    object[llvm::json::isUTF8(key) ? key : llvm::json::fixUTF8(key)] =
        jsonString(value);
  return object;
}

static llvm::json::Array jsonStrings(llvm::ArrayRef<std::string> strings) {
  llvm::json::Array array;
  for (const std::string &text : strings)
    array.push_back(jsonString(text));
  return array;
}

template <typename T>
static llvm::json::Value jsonOptional(std::optional<T> v) {
  return v ? llvm::json::Value(*v) : llvm::json::Value(nullptr);
}

static llvm::StringRef stringifyTestKind(TestKind kind) {
  return kind == TestKind::Pytest ? "pytest" : "job";
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

// The JSON plan is written through json::OStream rather than built as a
// json::Object, whose keys print sorted: the schema tag and summary come
// first and each test reads name, placement, cost, command, reason.

static void writeJsonSummary(const PlanSummary &summary,
                             llvm::json::OStream &json) {
  constexpr double kSecondsPerHour = 3600;
  json.attribute("tests", summary.totalTests);
  json.attribute("planned", summary.plannedTests);
  json.attribute("skipped", summary.skippedTests);
  json.attribute("pruned", summary.prunedTests);
  json.attribute("scheduled", summary.scheduled);
  json.attribute("observe", summary.observe);
  json.attribute("runners", summary.runners);
  json.attribute("gpus_per_runner", summary.gpusPerRunner);
  json.attribute("predicted_seconds", summary.makespanSeconds);
  json.attribute("full_serial_seconds", summary.fullSerialSeconds);
  json.attribute("planned_gpu_hours",
                 summary.plannedGpuSeconds / kSecondsPerHour);
  json.attribute("full_gpu_hours", summary.fullGpuSeconds / kSecondsPerHour);
}

static void writeJsonTest(const PlannedTest &test, llvm::json::OStream &json) {
  json.attribute("position", test.position);
  json.attribute("name", jsonString(test.name));
  json.attribute("kind", stringifyTestKind(test.kind));
  json.attribute("runner", jsonOptional(test.runner));
  json.attribute("start", jsonOptional(test.start));
  json.attribute("seconds", test.seconds);
  json.attribute("original_seconds", test.originalSeconds);
  json.attribute("gpus", test.gpus);
  json.attribute("risk", jsonOptional(test.risk));
  json.attribute("argv", jsonStrings(test.argv));
  json.attribute("command", jsonString(shellCommandLine(test)));
  json.attribute("env", jsonStringMap(test.env));
  json.attribute("overrides", jsonStringMap(test.overrides));
  if (test.goldenSteps)
    json.attribute("golden_steps", *test.goldenSteps);
  if (!test.goldenMetrics.empty())
    json.attribute("golden_metrics", jsonStrings(test.goldenMetrics));
  json.attribute("rule", jsonString(test.rule));
  json.attribute("reason", jsonString(test.reason));
  if (!test.observedAs.empty())
    json.attribute("observed_as", test.observedAs);
}

static void writeJsonDropped(const DroppedTest &test,
                             llvm::json::OStream &json) {
  json.attribute("name", jsonString(test.name));
  if (test.pruned) {
    json.attribute("pruned_by", jsonStrings(test.prunedBy));
    json.attribute("witnesses", jsonStringMap(test.witnesses));
  } else {
    json.attribute("rule", jsonString(test.rule));
    json.attribute("reason", jsonString(test.reason));
  }
  json.attribute("seconds", test.seconds);
  json.attribute("gpus", test.gpus);
}

static void writeJson(const Plan &plan, llvm::raw_ostream &os) {
  llvm::json::OStream json(os, /*IndentSize=*/2);
  auto writeDropped = [&](bool pruned) {
    for (const DroppedTest &test : plan.dropped)
      if (test.pruned == pruned)
        json.object([&] { writeJsonDropped(test, json); });
  };
  json.object([&] {
    json.attribute("schema", kPlanSchema);
    json.attribute("python", jsonString(plan.python));
    json.attributeObject("summary",
                         [&] { writeJsonSummary(plan.summary, json); });
    json.attributeArray("tests", [&] {
      for (const PlannedTest &test : plan.tests)
        json.object([&] { writeJsonTest(test, json); });
    });
    json.attributeArray("skipped", [&] { writeDropped(false); });
    json.attributeArray("pruned", [&] { writeDropped(true); });
  });
  os << '\n';
}

//===----------------------------------------------------------------------===//
// pytest, GitHub Actions, GitLab
//===----------------------------------------------------------------------===//

/// One node id per line, in plan order: `pytest $(cat plan.txt)` when ids
/// have no spaces, `xargs -d '\n' pytest < plan.txt` always. Jobs are not
/// pytest items and are left out; so is per-test environment, which a single
/// pytest command line cannot carry (emit-plan warns about it).
static void writePytest(const Plan &plan, llvm::raw_ostream &os) {
  for (const PlannedTest &test : plan.tests)
    if (test.kind == TestKind::Pytest)
      os << test.name << '\n';
}

static void writeGithubMatrix(const Plan &plan, llvm::raw_ostream &os) {
  llvm::json::Array include;
  for (const PlannedTest &test : plan.tests)
    include.push_back(llvm::json::Object{
        {"test", jsonString(test.name)},
        {"position", test.position},
        {"runner", jsonOptional(test.runner)},
        {"command", jsonString(shellCommandLine(test))},
        {"env", jsonStringMap(test.env)},
    });
  os << llvm::json::Value(llvm::json::Object{{"include", std::move(include)}})
     << '\n';
}

/// One job per runner, each running its tests in plan order; tests with no
/// runner (unscheduled plans, observe-mode extras) share a `fastci-serial`
/// job. Jobs declare `needs: []` so they start as soon as the child pipeline
/// does rather than waiting for a stage.
static void writeGitlab(const Plan &plan, llvm::raw_ostream &os) {
  std::map<std::string, std::vector<const PlannedTest *>> jobs;
  for (const PlannedTest &test : plan.tests) {
    std::string job = test.runner
                          ? "fastci-runner-" + std::to_string(*test.runner)
                          : "fastci-serial";
    jobs[job].push_back(&test);
  }
  auto quote = [](llvm::StringRef text) {
    std::string quoted;
    llvm::raw_string_ostream(quoted) << jsonString(text);
    return quoted;
  };
  os << "# FastCI child pipeline (" << kPlanSchema << "): " << plan.tests.size()
     << " tests, predicted "
     << llvm::formatv("{0:f0}", plan.summary.makespanSeconds) << " s.\n";
  os << "stages:\n  - fastci\n";
  if (jobs.empty()) {
    // GitLab rejects a pipeline without jobs; an empty plan still passes.
    os << "fastci-nothing-to-run:\n  stage: fastci\n  needs: []\n"
       << "  script:\n    - " << quote("echo 'fastci: no tests selected'")
       << '\n';
    return;
  }
  for (const auto &[job, tests] : jobs) {
    os << job << ":\n  stage: fastci\n  needs: []\n  script:\n";
    for (const PlannedTest *test : tests)
      os << "    - " << quote(shellCommandLine(*test)) << '\n';
  }
}

//===----------------------------------------------------------------------===//
// Shell
//===----------------------------------------------------------------------===//

static constexpr llvm::StringLiteral kShellPrologue = R"(
# Usage: sh plan.sh [--fail-fast]   (or FASTCI_FAIL_FAST=1 sh plan.sh)
# Runs every test in order and exits 1 if any failed; with --fail-fast it
# stops at the first failure.
fastci_fail_fast=${FASTCI_FAIL_FAST:-0}
[ "${1:-}" = --fail-fast ] && fastci_fail_fast=1
fastci_failed=0
fastci_run() {
  fastci_position=$1
  fastci_name=$2
  shift 2
  printf '==> [%s/%s] %s\n' "$fastci_position" "$fastci_total" "$fastci_name"
  "$@"
  fastci_status=$?
  if [ "$fastci_status" -ne 0 ]; then
    printf 'FAILED: %s (exit %s)\n' "$fastci_name" "$fastci_status" >&2
    fastci_failed=$((fastci_failed + 1))
    [ "$fastci_fail_fast" = 1 ] && exit 1
  fi
  return 0
}
)";

static void writeShell(const Plan &plan, llvm::raw_ostream &os) {
  os << "#!/bin/sh\n# FastCI plan (" << kPlanSchema
     << "): " << plan.tests.size() << " tests, predicted "
     << llvm::formatv("{0:f0}", plan.summary.makespanSeconds) << " s.";
  os << kShellPrologue;
  os << "fastci_total=" << plan.tests.size() << '\n';
  for (const PlannedTest &test : plan.tests)
    os << "fastci_run " << test.position << ' ' << shellQuote(test.name) << ' '
       << shellCommandLine(test) << '\n';
  os << "if [ \"$fastci_failed\" -ne 0 ]; then\n"
     << "  printf '%s of %s tests failed\\n' \"$fastci_failed\" "
        "\"$fastci_total\" >&2\n"
     << "  exit 1\nfi\n";
}

void fastci::writePlan(const Plan &plan, PlanFormat format,
                       llvm::raw_ostream &os) {
  switch (format) {
  case PlanFormat::Json:
    return writeJson(plan, os);
  case PlanFormat::Pytest:
    return writePytest(plan, os);
  case PlanFormat::GithubMatrix:
    return writeGithubMatrix(plan, os);
  case PlanFormat::Gitlab:
    return writeGitlab(plan, os);
  case PlanFormat::Shell:
    return writeShell(plan, os);
  }
  llvm_unreachable("unknown plan format");
}
