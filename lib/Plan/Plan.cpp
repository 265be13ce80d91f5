//===- Plan.cpp - Reading the final plan off an annotated module ----------===//
//
// The passes before emit-plan leave their decisions as test attributes
// (`selected`/`rule`/`reason`, `pruned`/`pruned_by`/`witnesses`, `overrides`/
// `override_env`/`original_seconds`, `risk`, `rank`/`runner`/`start`) and
// module attributes (`schedule_*`). This file gathers them into a Plan and
// renders each test's command, so that every output format shares one reading
// of the IR and one command renderer.
//
//===----------------------------------------------------------------------===//
#include "fastci/Plan/Plan.h"
#include "fastci/IR/Module.h"
#include "fastci/Schedule/ScheduleAttrs.h"
#include "fastci/Select/SelectAttrs.h"
#include "fastci/Support/Diagnostics.h"
#include "fastci/Workload/WorkloadAttrs.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

using namespace fastci;

bool fastci::isPlanned(const Test &test) {
  Attribute selected = test.attrs.get(select::attr::kSelected);
  Attribute pruned = test.attrs.get(select::attr::kPruned);
  return !(selected.isBool() && !selected.getBool()) &&
         !(pruned.isBool() && pruned.getBool());
}

/// A scalar attribute as the text a command line or environment carries:
/// strings bare, floats in their shortest round-trip spelling (as Python's
/// str() writes them, which is how the manifest's own runner renders them).
static std::string scalarText(const Attribute &value) {
  if (value.isString())
    return value.getString().str();
  if (value.isBool())
    return value.getBool() ? "true" : "false";
  if (value.isInt())
    return std::to_string(value.getInt());
  std::string text;
  llvm::raw_string_ostream os(text);
  if (value.isFloat())
    printFloat(os, value.getNumber());
  else
    value.print(os);
  return text;
}

/// Splits \p text into words as a POSIX shell would, honouring single and
/// double quotes and backslashes but performing no expansion.
static std::optional<std::string> splitWords(llvm::StringRef text,
                                             std::vector<std::string> &words) {
  std::string word;
  bool inWord = false;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (inWord)
        words.push_back(std::move(word));
      word.clear();
      inWord = false;
      continue;
    }
    inWord = true;
    if (c == '\\' && i + 1 < e) {
      word += text[++i];
    } else if (c == '\'' || c == '"') {
      size_t close = text.find(c, i + 1);
      // A backslash inside double quotes still escapes the quote character.
      while (c == '"' && close != llvm::StringRef::npos &&
             text[close - 1] == '\\')
        close = text.find(c, close + 1);
      if (close == llvm::StringRef::npos)
        return std::string("unterminated ") + (c == '"' ? "double" : "single") +
               " quote in command template";
      word += text.slice(i + 1, close).str();
      i = close;
    } else {
      word += c;
    }
  }
  if (inWord)
    words.push_back(std::move(word));
  return std::nullopt;
}

/// Expands the `{name}` placeholders of one word (`{{`/`}}` are literal
/// braces, as in Python's str.format, which the manifest's runner uses).
static std::optional<std::string>
expandWord(llvm::StringRef word, llvm::StringRef python, llvm::StringRef nproc,
           llvm::ArrayRef<std::string> args, llvm::StringRef config,
           std::string &result) {
  for (size_t i = 0, e = word.size(); i < e; ++i) {
    char c = word[i];
    if ((c == '{' || c == '}') && i + 1 < e && word[i + 1] == c) {
      result += c;
      ++i;
      continue;
    }
    if (c == '}')
      return std::string("unmatched '}' in command template");
    if (c != '{') {
      result += c;
      continue;
    }
    size_t close = word.find('}', i);
    if (close == llvm::StringRef::npos)
      return std::string("unmatched '{' in command template");
    llvm::StringRef name = word.slice(i + 1, close);
    if (name == "python")
      result += python;
    else if (name == "nproc")
      result += nproc;
    else if (name == "args")
      result += llvm::join(args, " ");
    else if (name == "config" && !config.empty())
      result += config;
    else if (name == "config")
      return std::string("'{config}' in the command template of a test that "
                         "was not imported from a Megatron configuration");
    else
      return "unknown placeholder '{" + name.str() +
             "}' in command template (expected {python}, {nproc}, {args} or "
             "{config})";
    i = close;
  }
  return std::nullopt;
}

std::optional<std::string>
fastci::renderCommand(llvm::StringRef commandTemplate, llvm::StringRef python,
                      llvm::StringRef nproc, llvm::ArrayRef<std::string> args,
                      std::vector<std::string> &argv, llvm::StringRef config) {
  std::vector<std::string> words;
  if (std::optional<std::string> error = splitWords(commandTemplate, words))
    return error;
  if (words.empty())
    return std::string("empty command template");
  for (const std::string &word : words) {
    // `{args}` standing alone splices the flags as separate arguments, so a
    // value with spaces stays one argument.
    if (word == "{args}") {
      argv.insert(argv.end(), args.begin(), args.end());
      continue;
    }
    std::string expanded;
    if (std::optional<std::string> error =
            expandWord(word, python, nproc, args, config, expanded))
      return error;
    argv.push_back(std::move(expanded));
  }
  return std::nullopt;
}

namespace {

/// Gathers one test's part of the plan.
class TestReader {
public:
  TestReader(const PlanOptions &options, DiagnosticEngine &diag)
      : options(options), diag(diag) {}

  /// The planned form of \p test, or std::nullopt after a diagnostic.
  std::optional<PlannedTest> readPlanned(const Test &test) {
    PlannedTest planned;
    planned.name = test.name.str();
    planned.seconds = test.cost.seconds;
    planned.originalSeconds = originalSeconds(test);
    planned.gpus = test.cost.gpus;
    if (std::optional<int64_t> runner =
            test.attrs.get(schedule::attr::kRunner).asInt())
      planned.runner = runner;
    if (std::optional<double> start =
            test.attrs.get(schedule::attr::kStart).asNumber())
      planned.start = start;
    if (std::optional<double> risk =
            test.attrs.get(schedule::attr::kRisk).asNumber())
      planned.risk = risk;
    planned.rule = stringAttr(test, select::attr::kRule);
    planned.reason = stringAttr(test, select::attr::kReason);
    readEnvironment(test.attrs.get(workload::attr::kEnv), planned.env);
    readEnvironment(test.attrs.get(workload::attr::kOverrideEnv), planned.env);
    for (const auto &[flag, value] : dictAttr(test, workload::attr::kOverrides))
      planned.overrides[flag] = scalarText(value);
    planned.goldenSteps = test.attrs.get(workload::attr::kGoldenSteps).asInt();
    if (Attribute metrics = test.attrs.get(workload::attr::kGoldenMetrics);
        metrics.isList())
      for (const Attribute &metric : metrics.getList())
        planned.goldenMetrics.push_back(scalarText(metric));

    Attribute command = test.attrs.get(workload::attr::kCommand);
    if (!command) {
      planned.kind = TestKind::Pytest;
      planned.argv = {options.python, "-m", "pytest", planned.name};
      return planned;
    }
    planned.kind = TestKind::Job;
    if (!command.isString()) {
      diag.error(test.loc, "test '" + test.name +
                               "' has a non-string 'command' attribute");
      return std::nullopt;
    }
    Attribute nproc = test.attrs.get(workload::attr::kNproc);
    std::string nprocText = nproc ? scalarText(nproc) : "1";
    if (std::optional<std::string> error = renderCommand(
            command.getString(), options.python, nprocText, renderArgs(test),
            planned.argv, stringAttr(test, workload::attr::kConfig))) {
      diag.error(test.loc, "test '" + test.name + "': " + *error);
      return std::nullopt;
    }
    return planned;
  }

  /// The dropped form of \p test.
  DroppedTest readDropped(const Test &test) {
    DroppedTest dropped;
    dropped.name = test.name.str();
    Attribute pruned = test.attrs.get(select::attr::kPruned);
    dropped.pruned = pruned.isBool() && pruned.getBool();
    dropped.rule = stringAttr(test, select::attr::kRule);
    dropped.reason = stringAttr(test, select::attr::kReason);
    dropped.seconds = test.cost.seconds;
    dropped.gpus = test.cost.gpus;
    Attribute prunedBy = test.attrs.get(select::attr::kPrunedBy);
    if (prunedBy.isList())
      for (const Attribute &kept : prunedBy.getList())
        dropped.prunedBy.push_back(symbolText(kept));
    for (const auto &[symbol, kept] : dictAttr(test, select::attr::kWitnesses))
      dropped.witnesses[symbol] = symbolText(kept);
    return dropped;
  }

  /// Seconds the test took before lower-workload shrank it.
  static double originalSeconds(const Test &test) {
    if (std::optional<double> original =
            test.attrs.get(workload::attr::kOriginalSeconds).asNumber())
      return *original;
    return test.cost.seconds;
  }

private:
  /// The job's workload flags with lower-workload's overrides applied:
  /// `true` flags bare, `false` flags omitted, others as `--flag value`.
  static std::vector<std::string> renderArgs(const Test &test) {
    AttrDict flags = test.workload;
    for (const auto &[flag, value] : dictAttr(test, workload::attr::kOverrides))
      flags.set(flag, value);
    std::vector<std::string> args;
    for (const auto &[flag, value] : flags) {
      if (value.isBool()) {
        if (value.getBool())
          args.push_back(flag);
        continue;
      }
      args.push_back(flag);
      args.push_back(scalarText(value));
    }
    return args;
  }

  static void readEnvironment(const Attribute &env,
                              std::map<std::string, std::string> &into) {
    if (!env.isDict())
      return;
    for (const auto &[name, value] : env.getDict())
      into[name] = scalarText(value);
  }

  static std::string stringAttr(const Test &test, llvm::StringRef key) {
    Attribute value = test.attrs.get(key);
    return value.isString() ? value.getString().str() : std::string();
  }

  static const AttrDict &dictAttr(const Test &test, llvm::StringRef key) {
    static const AttrDict empty;
    const Attribute *value = test.attrs.lookup(key);
    return value && value->isDict() ? value->getDict() : empty;
  }

  static std::string symbolText(const Attribute &value) {
    if (value.isSymbol())
      return value.getSymbolName().str();
    return scalarText(value);
  }

  const PlanOptions &options;
  DiagnosticEngine &diag;
};

} // namespace

/// GPU-seconds of \p seconds on \p test's GPUs; a test declaring no GPUs
/// costs none (it runs on the runner's CPUs).
static double gpuSeconds(const Test &test, double seconds) {
  return double(test.cost.gpus) * seconds;
}

std::optional<Plan> fastci::buildPlan(const Module &module,
                                      const PlanOptions &options,
                                      DiagnosticEngine &diag) {
  Plan plan;
  plan.python = options.python;
  PlanSummary &summary = plan.summary;
  summary.observe = options.observe;
  TestReader reader(options, diag);

  // Order first, so that positions and the observe-mode tail are stable.
  std::vector<const Test *> planned, dropped;
  for (const Test &test : module.getTests()) {
    ++summary.totalTests;
    double original = TestReader::originalSeconds(test);
    summary.fullSerialSeconds += original;
    summary.fullGpuSeconds += gpuSeconds(test, original);
    (isPlanned(test) ? planned : dropped).push_back(&test);
  }
  auto orderKey = [](const Test *test) {
    std::optional<int64_t> rank =
        test->attrs.get(schedule::attr::kRank).asInt();
    std::optional<double> risk =
        test->attrs.get(schedule::attr::kRisk).asNumber();
    // Unranked tests follow ranked ones; higher risk first.
    return std::make_tuple(!rank.has_value(), rank.value_or(0),
                           -risk.value_or(0.0), test->name);
  };
  llvm::stable_sort(planned, [&](const Test *lhs, const Test *rhs) {
    return orderKey(lhs) < orderKey(rhs);
  });
  llvm::stable_sort(dropped, [](const Test *lhs, const Test *rhs) {
    return lhs->name < rhs->name;
  });

  // A test the evidence recorded under a static item the plan also runs
  // (`f[a]` under `f`, a case under its file or class item) runs as part of
  // that item: listing it again would run it twice.
  llvm::StringSet<> plannedNames;
  for (const Test *test : planned)
    plannedNames.insert(test->name);
  std::vector<const Test *> enclosed;
  llvm::erase_if(planned, [&](const Test *test) {
    // get() returns the attribute by value: keep it alive for the name.
    Attribute enclosedBy = test->attrs.get(select::attr::kEnclosedBy);
    std::optional<llvm::StringRef> owner = enclosedBy.asString();
    if (!owner || *owner == test->name || !plannedNames.contains(*owner))
      return false;
    enclosed.push_back(test);
    return true;
  });

  bool ok = true;
  double serialSeconds = 0;
  for (const Test *test : planned) {
    std::optional<PlannedTest> entry = reader.readPlanned(*test);
    if (!entry) {
      ok = false;
      continue;
    }
    serialSeconds += test->cost.seconds;
    summary.plannedGpuSeconds += gpuSeconds(*test, test->cost.seconds);
    entry->position = plan.tests.size() + 1;
    plan.tests.push_back(std::move(*entry));
  }
  for (const Test *test : dropped) {
    DroppedTest entry = reader.readDropped(*test);
    ++(entry.pruned ? summary.prunedTests : summary.skippedTests);
    if (options.observe) {
      std::optional<PlannedTest> observed = reader.readPlanned(*test);
      if (!observed) {
        ok = false;
        continue;
      }
      observed->observedAs = entry.pruned ? "pruned" : "skipped";
      observed->position = plan.tests.size() + 1;
      plan.tests.push_back(std::move(*observed));
    }
    plan.dropped.push_back(std::move(entry));
  }
  for (const Test *test : enclosed) {
    DroppedTest entry = reader.readDropped(*test);
    std::string owner = test->attrs.get(select::attr::kEnclosedBy)
                            .asString()
                            .value_or("")
                            .str();
    entry.rule = "enclosed";
    entry.reason = "runs as part of '" + owner + "', which the plan runs (" +
                   entry.reason + ")";
    ++summary.skippedTests;
    plan.dropped.push_back(std::move(entry));
  }
  if (!ok)
    return std::nullopt;
  summary.plannedTests = planned.size();

  const AttrDict &attrs = module.getAttrs();
  std::optional<double> makespan =
      attrs.get(schedule::attr::kScheduleMakespan).asNumber();
  summary.scheduled = makespan.has_value();
  summary.makespanSeconds = makespan.value_or(serialSeconds);
  summary.runners =
      attrs.get(schedule::attr::kScheduleRunners).asInt().value_or(0);
  summary.gpusPerRunner =
      attrs.get(schedule::attr::kScheduleGpusPerRunner).asInt().value_or(0);
  return plan;
}
