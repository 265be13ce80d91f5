//===- ChangeMapperDependencies.cpp - Changed dependency pins -------------===//
//
// mark-changed's `dependencies` action (docs/Changes.md, "Dependency
// files"). A changed requirement line names a distribution; the tests it can
// affect are those whose processes imported one of the distribution's
// modules, or tried to (evidence attribute `external_imports`), with the
// distributions it requires followed through the installed metadata the
// evidence carries (a new pin may move them too). What cannot be mapped
// keeps the conservative answer, every test: a line naming no distribution,
// a distribution newly required that the recording environment lacks (it
// may plug into every process: a pytest plugin, a `.pth` file), a
// `pytest` plugin by name. A record that did not say what it imported is
// selected.
//
//===----------------------------------------------------------------------===//
#include "ChangeMapperImpl.h"
#include "fastci/Diff/Requirements.h"
#include <set>

using namespace fastci;
using namespace fastci::detail;
using llvm::StringRef;

/// The module's table \p name (distribution -> strings), or an empty dict.
static const AttrDict *getTable(const Module &module, StringRef name) {
  const Attribute *table = module.getAttrs().lookup(name);
  return table && table->isDict() ? &table->getDict() : nullptr;
}

static void forEachString(const AttrDict *table, StringRef key,
                          llvm::function_ref<void(StringRef)> fn) {
  if (!table)
    return;
  if (const Attribute *list = table->lookup(key); list && list->isList())
    for (const Attribute &entry : list->getList())
      if (std::optional<StringRef> text = entry.asString())
        fn(*text);
}

void ChangeMapper::Impl::mapDependencies(const FileDiff &file,
                                         const PolicyRule &rule,
                                         ChangedFile &record) {
  std::string all =
      "the policy selects every test for " + rule.category + " files";
  if (file.isBinary)
    return forceAll(record, all + " (a binary patch)");
  std::vector<std::string> changed;
  std::string blocking;
  VisitStop stop = forEachChangedLine(file, [&](const DiffLine &, bool added,
                                                llvm::ArrayRef<StringRef> text,
                                                uint32_t number) {
    RequirementLine what = locateRequirementLine(text, number);
    if (what.kind == RequirementLine::Kind::Insignificant)
      return true;
    if (what.kind == RequirementLine::Kind::Unknown) {
      blocking = llvm::formatv("line {0} {1} '{2}', which names no "
                               "distribution",
                               number, added ? "adds" : "removes", what.text)
                     .str();
      return false;
    }
    if (!llvm::is_contained(changed, what.name))
      changed.push_back(what.name);
    return true;
  });
  if (stop == VisitStop::NoText)
    return forceAll(record, all + " (a text of it is not available)");
  if (stop == VisitStop::Visitor)
    return forceAll(record, all + " (" + blocking + ")");
  if (changed.empty()) {
    setDecision(record, FileDecision::Ignore);
    record.attrs.set(
        diff::attr::kReason,
        Attribute::getString("only blank and comment lines changed"));
    return;
  }

  const AttrDict *modules =
      getTable(module, evidence::attr::kDistributionModules);
  const AttrDict *requirements =
      getTable(module, evidence::attr::kDistributionRequires);
  const AttrDict *installed =
      getTable(module, evidence::attr::kDistributionVersions);
  std::vector<std::string> required;
  if (!file.oldPath.empty())
    if (const SourceText &old = getOldText(file.oldPath); old.text)
      required = getRequiredDistributions(old.lines);
  for (const std::string &name : changed) {
    // A plugin pytest loads by entry point runs in every test's process
    // without anybody importing it.
    if (StringRef(name).starts_with("pytest"))
      return forceAll(record, all + " ('" + name +
                                  "' is a pytest plugin or pytest itself)");
    bool isInstalled = installed && installed->lookup(name);
    if (!isInstalled && !llvm::is_contained(required, name))
      return forceAll(
          record, all + " ('" + name +
                      "' is newly required and not installed where the "
                      "evidence was recorded: it may act in every process)");
  }

  // The changed distributions and, transitively, what they require.
  std::set<std::string> distributions(changed.begin(), changed.end());
  std::vector<std::string> work(changed.begin(), changed.end());
  while (!work.empty()) {
    std::string name = work.back();
    work.pop_back();
    forEachString(requirements, name, [&](StringRef dependency) {
      if (distributions.insert(dependency.str()).second)
        work.push_back(dependency.str());
    });
  }
  // Module names, normalized: what the metadata says each installs, and
  // the conventional spellings of its name.
  std::set<std::string> packages;
  for (const std::string &name : distributions) {
    forEachString(modules, name, [&](StringRef module) {
      packages.insert(normalizeDistributionName(module));
    });
    for (std::string &module : getConventionalModuleNames(name))
      packages.insert(std::move(module));
  }

  std::set<TestId> importers;
  std::set<TestId> unknown;
  for (const EvidenceRecord &evidence : module.getEvidence()) {
    if (evidence.test == kNoTest)
      continue;
    const Attribute *names =
        evidence.attrs.lookup(evidence::attr::kExternalImports);
    if (!names || !names->isList()) {
      unknown.insert(evidence.test);
      continue;
    }
    for (const Attribute &name : names->getList())
      if (std::optional<StringRef> text = name.asString();
          text && packages.count(normalizeDistributionName(*text))) {
        importers.insert(evidence.test);
        break;
      }
  }
  importers.insert(unknown.begin(), unknown.end());

  std::vector<std::string> names;
  for (TestId test : importers)
    names.push_back(module.getTest(test).name.str());
  setDecision(record, FileDecision::Packages);
  record.attrs.set(diff::attr::kDistributions,
                   Attribute::getStringList(std::vector<std::string>(
                       distributions.begin(), distributions.end())));
  record.attrs.set(diff::attr::kPackages,
                   Attribute::getStringList(std::vector<std::string>(
                       packages.begin(), packages.end())));
  record.attrs.set(diff::attr::kImporters, Attribute::getStringList(names));
  std::string reason = llvm::formatv("changes the requirements of {0}; {1} "
                                     "test(s) imported their packages",
                                     llvm::join(changed, ", "),
                                     importers.size() - unknown.size())
                           .str();
  if (!unknown.empty())
    reason +=
        llvm::formatv(", {0} more recorded no imports", unknown.size()).str();
  record.attrs.set(diff::attr::kReason, Attribute::getString(reason));
}
