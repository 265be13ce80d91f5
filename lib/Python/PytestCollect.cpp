//===- PytestCollect.cpp - pytest's collectors, statically ----------------===//
//
// Mirrors _pytest/python.py's and _pytest/unittest.py's collectors: which
// classes and functions of a module's namespace are collected, in which
// order, along the MRO (inherited tests, `__init__`, `__test__`), with
// which marks, parametrize and fixture-param ids; the file and class items
// that stand for tests FastCI cannot name (`enclosing`). Runs on the facts
// PytestFacts.cpp records, first with the file alone, then with the whole
// repository (linkPytestItems).
//
//===----------------------------------------------------------------------===//
#include "PytestInternal.h"
#include "fastci/Pass/Parallel.h"
#include "fastci/Python/Pytest.h"
#include "fastci/Support/YAML.h"
#include "fastci/Workload/Manifest.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <mutex>

using namespace fastci;
using namespace fastci::python;
using namespace fastci::python::detail;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Collection
//===----------------------------------------------------------------------===//

namespace {
/// An entity of some file of the repository.
struct EntityRef {
  uint32_t file = 0;
  LocalId id = kModuleScope;
  bool operator==(const EntityRef &other) const {
    return file == other.file && id == other.id;
  }
};

/// One file as collection sees it, with indexes over its summary. The
/// indexes are built on first use: an incremental link collects a few files
/// and reads a few others, and building them for every file of a large
/// repository was most of its time.
struct FileView {
  StringRef path, moduleName;
  FileSummary *summary = nullptr;

  FileView(StringRef path, StringRef moduleName, FileSummary *summary)
      : path(path), moduleName(moduleName), summary(summary) {}

  struct Index {
    /// Children of each entity (index parent + 1), in source order.
    std::vector<std::vector<LocalId>> children;
    llvm::DenseMap<LocalId, const PytestEntitySummary *> facts;
    llvm::StringMap<std::vector<Binding>> bindings;
  };
  /// Safe to call from the collectors' threads at once.
  const Index &index() const {
    std::call_once(indexBuilt, [&] {
      index_.children.resize(summary->entities.size() + 1);
      for (auto [id, entity] : llvm::enumerate(summary->entities))
        index_.children[entity.parent + 1].push_back(static_cast<LocalId>(id));
      for (const PytestEntitySummary &entry : summary->pytestEntities)
        index_.facts[entry.entity] = &entry;
      index_.bindings = getModuleBindings(*summary);
    });
    return index_;
  }
  const std::vector<LocalId> &children(LocalId parent) const {
    return index().children[parent + 1];
  }
  const llvm::StringMap<std::vector<Binding>> &bindings() const {
    return index().bindings;
  }

  const EntitySummary &entity(LocalId id) const {
    return summary->entities[id];
  }
  const PytestEntitySummary *getFacts(LocalId id) const {
    return index().facts.lookup(id);
  }

private:
  mutable std::once_flag indexBuilt;
  mutable Index index_;
};

/// The files collection can see: one (a file analysed alone) or all.
class Repository {
public:
  explicit Repository(const PytestConfig &config) : config(config) {}
  const PytestConfig &config;

  void addFile(StringRef path, StringRef moduleName, FileSummary *summary) {
    uint32_t index = files.size();
    files.emplace_back(path, moduleName, summary);
    modules.try_emplace(moduleName, index);
    // Only what collection looks up: base classes, imported tests and
    // imported fixtures.
    for (auto [id, entity] : llvm::enumerate(summary->entities))
      if (entity.kind == EntityKind::Class || entity.isFixture ||
          StringRef(entity.name).starts_with("test") ||
          config.isTestFunctionName(entity.name))
        symbols.try_emplace(symbolOf(moduleName, entity),
                            EntityRef{index, static_cast<LocalId>(id)});
  }

  /// The class or function a dotted name denotes, following re-exports
  /// (`from .common import Base` in a package's `__init__.py`). \p onRead
  /// is told every file whose contents could change the answer: the module
  /// of each dotted prefix of every name looked up, so that a lookup that
  /// fails now but would succeed after an edit of that file is recorded too.
  std::optional<EntityRef>
  resolve(StringRef dotted,
          llvm::function_ref<void(uint32_t)> onRead = nullptr) const {
    std::string name = dotted.str();
    for (unsigned hop = 0; hop < 8; ++hop) {
      if (onRead)
        // (From the empty prefix: a module without a name holds symbols
        // that are bare names.)
        for (size_t dot = 0; dot != std::string::npos;
             dot = name.find('.', dot + 1)) {
          auto module = modules.find(StringRef(name).take_front(dot));
          if (module != modules.end())
            onRead(module->second);
        }
      auto it = symbols.find(name);
      if (it != symbols.end())
        return it->second;
      auto [module, last] = StringRef(name).rsplit('.');
      auto file = modules.find(module);
      if (last.empty() || file == modules.end())
        return std::nullopt;
      const auto &bindings = files[file->second].bindings();
      auto binding = bindings.find(last);
      if (binding == bindings.end() ||
          binding->second.back().entity != kModuleScope)
        return std::nullopt;
      name = binding->second.back().target;
    }
    return std::nullopt;
  }

  /// A deque: views do not move (each holds a once_flag).
  std::deque<FileView> files;

private:
  llvm::StringMap<uint32_t> modules;
  llvm::StringMap<EntityRef> symbols;
};

/// unittest.TestCase subclasses of test frameworks outside the repository
/// that add no tests of their own: torch's (1.13-2.x), read from its source.
bool isKnownFrameworkTestCase(StringRef name) {
  return name == "torch.testing._internal.common_utils.TestCase" ||
         name == "expecttest.TestCase";
}

/// Class decorators that give the class an `__init__` (pytest then refuses
/// to collect it): dataclasses and attrs.
bool isInitGeneratingDecorator(StringRef name) {
  static const char *const kDecorators[] = {"dataclass",
                                            "dataclasses.dataclass",
                                            "pydantic.dataclasses.dataclass",
                                            "attr.s",
                                            "attr.attrs",
                                            "attr.define",
                                            "attr.mutable",
                                            "attr.frozen",
                                            "attrs.define",
                                            "attrs.mutable",
                                            "attrs.frozen"};
  return llvm::is_contained(kDecorators, name);
}

/// Base classes that are known to contribute no tests, `__init__` or
/// `__test__` pytest would see.
bool isInertBase(StringRef name) {
  static const char *const kInert[] = {"object",
                                       "abc.ABC",
                                       "typing.Generic",
                                       "typing.Protocol",
                                       "unittest.TestCase",
                                       "unittest.IsolatedAsyncioTestCase"};
  return llvm::is_contained(kInert, name) || isKnownFrameworkTestCase(name);
}

/// Collects the items of one test file.
class ItemCollector {
public:
  ItemCollector(const Repository &repo, uint32_t file)
      : repo(repo), file(file), view(repo.files[file]) {}

  std::vector<TestSummary> run();
  /// The files other than its own whose summaries the collection read
  /// (indexes into the repository), in no particular order.
  const llvm::DenseSet<uint32_t> &getReads() const { return reads; }

private:
  /// Marks in iteration order, and whether their parametrize order
  /// differs between pytest versions.
  struct MarkChain {
    std::vector<const MarkSummary *> marks;
    bool ambiguousOrder = false;
  };

  std::vector<EntityRef> getMro(EntityRef cls, bool &unknown,
                                unsigned depth = 0);
  /// A namespace's names in order of first binding, each with its last
  /// value (an entity of the namespace's file, or an imported one).
  std::vector<std::pair<std::string, std::optional<EntityRef>>>
  getNamespace(EntityRef scope) const;
  /// Whether a class derives from unittest.TestCase, as far as the
  /// repository shows.
  enum class CaseKind {
    /// No base leads to unittest.TestCase.
    No,
    /// Some base is unittest.TestCase or a repository class deriving it.
    Yes,
    /// Some base outside the repository is named like a TestCase
    /// (`absltest.TestCase`, `django.test.SimpleTestCase`).
    Maybe,
  };
  CaseKind getCaseKind(EntityRef cls, unsigned depth = 0) const;
  /// Collects the class or function \p value bound to \p name in a module
  /// or class namespace, if pytest would.
  void collectMember(EntityRef value, StringRef name, const std::string &prefix,
                     const MarkChain &outer, unsigned depth);
  /// Whether the first `__test__` along \p mro is False.
  bool isDisabled(llvm::ArrayRef<EntityRef> mro) const;
  /// The marks of the classes of \p mro (base-first), then \p outer's.
  MarkChain getClassMarks(llvm::ArrayRef<EntityRef> mro,
                          const MarkChain &outer) const;
  /// The item for a whole class whose inherited tests are not known.
  void addUnknownClassItem(EntityRef cls, const std::string &prefix,
                           const MarkChain &chain);
  /// The class item that stands for tests whose names are not known: the
  /// whole class when its bases are not known (\p unknown), else the
  /// enclosing item when one of \p mro has import-time members.
  void addUncertainClassItem(EntityRef cls, const std::string &prefix,
                             llvm::ArrayRef<EntityRef> mro,
                             const MarkChain &chain, bool unknown) {
    if (unknown)
      addUnknownClassItem(cls, prefix, chain);
    else if (llvm::any_of(
                 mro, [&](EntityRef ref) { return hasUnknownMembers(ref); }))
      addEnclosingItem(prefix, cls, "dynamic-tests", chain.marks);
  }
  void collectClass(EntityRef cls, StringRef name, const std::string &prefix,
                    const MarkChain &outer, unsigned depth);
  /// A unittest.TestCase subclass, as pytest's unittest plugin collects it.
  void collectUnittestClass(EntityRef cls, const std::string &prefix,
                            const MarkChain &outer, bool maybe);
  /// \p unittest: an item of a TestCase, which pytest does not parametrize.
  void collectFunction(EntityRef function, StringRef name,
                       const std::string &prefix, const MarkChain &outer,
                       bool unittest = false);
  /// A fixture definition and the names it requests.
  struct FixtureDef {
    EntityRef ref;
    const PytestEntitySummary *facts;
  };
  /// Fixtures by name, each name's definitions from the outermost scope to
  /// the innermost (pytest's `getfixturedefs` order).
  using FixtureMap = llvm::StringMap<std::vector<FixtureDef>>;
  /// Adds the fixtures of the namespace \p scope (a module, or a class along
  /// \p mro) to \p map and the autouse ones to \p autouse.
  void addScopeFixtures(llvm::ArrayRef<EntityRef> mro, FixtureMap &map,
                        std::vector<std::string> &autouse) const;
  /// What the fixtures the test \p function (its marks \p marks) uses
  /// directly or through other fixtures do to its ids.
  struct FixtureParamsInfo {
    /// Some fixture it uses is declared with `params=`.
    bool parametrized = false;
    /// The ids are known: those of \c applied, in pytest's order.
    bool exact = false;
    std::vector<const PytestEntitySummary *> applied;
  };
  FixtureParamsInfo getFixtureParams(EntityRef function,
                                     llvm::ArrayRef<const MarkSummary *> marks);
  /// pytest's argnames of a function: its recorded parameters less `self`
  /// for a method.
  llvm::ArrayRef<std::string> getArgnames(EntityRef function) const {
    const FileView &owner = at(function.file);
    const EntitySummary &entity = owner.entity(function.id);
    llvm::ArrayRef<std::string> names = entity.parameters;
    if (entity.parent != kModuleScope &&
        owner.entity(entity.parent).kind == EntityKind::Class &&
        !llvm::is_contained(entity.decorators, "staticmethod") &&
        !names.empty())
      names = names.drop_front();
    return names;
  }
  bool isTestFunction(EntityRef ref) const {
    const EntitySummary &entity = at(ref.file).entity(ref.id);
    return entity.kind == EntityKind::Function && !entity.isFixture;
  }
  /// Whether a class has members whose names import-time code decides
  /// (parameterized.expand or torch parametrize with non-literal cases,
  /// `setattr`).
  bool hasUnknownMembers(EntityRef cls) const;
  /// The item for a whole class or file that stands for tests whose names
  /// are not known.
  void addEnclosingItem(const std::string &nodeId, EntityRef entry,
                        StringRef reason,
                        llvm::ArrayRef<const MarkSummary *> marks);
  void setEntry(TestSummary &test, EntityRef entry, LocalId fallback) const {
    if (entry.file == file) {
      test.entry = entry.id;
      return;
    }
    const FileView &other = at(entry.file);
    test.entry = fallback;
    test.entrySymbol = symbolOf(other.moduleName, other.entity(entry.id));
  }
  static void addTag(std::vector<std::string> &tags, StringRef name) {
    if (name != "parametrize" && !llvm::is_contained(tags, name))
      tags.push_back(name.str());
  }

  /// File \p index of the repository, recorded as read (see getReads).
  const FileView &at(uint32_t index) const {
    if (index != file)
      reads.insert(index);
    return repo.files[index];
  }
  std::optional<EntityRef> resolve(StringRef dotted) const {
    return repo.resolve(dotted, [&](uint32_t index) {
      if (index != file)
        reads.insert(index);
    });
  }

  const Repository &repo;
  uint32_t file;
  const FileView &view;
  /// Every access to another file goes through at() or resolve(), so this
  /// is all the collection depends on besides its own file, the set of
  /// files (paths, module names) and the configuration.
  mutable llvm::DenseSet<uint32_t> reads;
  std::vector<TestSummary> tests;
  /// The local class the items being collected belong to (an entry for
  /// tests whose function lives in another file).
  LocalId localClass = kModuleScope;
  llvm::DenseMap<std::pair<uint32_t, LocalId>, std::vector<EntityRef>> mros;
  /// The MROs of the classes being collected, outermost first: their
  /// fixtures are visible to the tests inside.
  std::vector<std::vector<EntityRef>> classMros;
  /// The fixtures of the conftest.py files above the test file and of the
  /// test module, built on first use.
  std::optional<FixtureMap> moduleFixtures;
  std::vector<std::string> moduleAutouse;
};
} // namespace

std::vector<EntityRef> ItemCollector::getMro(EntityRef cls, bool &unknown,
                                             unsigned depth) {
  auto cached = mros.find({cls.file, cls.id});
  if (cached != mros.end() && depth == 0)
    return cached->second;
  std::vector<EntityRef> result = {cls};
  // A cycle cannot exist in Python; a misresolved name could make one.
  if (depth > 32) {
    unknown = true;
    return result;
  }
  std::vector<std::vector<EntityRef>> sequences;
  std::vector<EntityRef> bases;
  if (const PytestEntitySummary *facts = at(cls.file).getFacts(cls.id))
    for (const std::string &base : facts->bases) {
      if (isInertBase(base))
        continue;
      std::optional<EntityRef> ref =
          base.empty() ? std::nullopt : resolve(base);
      if (!ref || at(ref->file).entity(ref->id).kind != EntityKind::Class) {
        unknown = true;
        continue;
      }
      bases.push_back(*ref);
      sequences.push_back(getMro(*ref, unknown, depth + 1));
    }
  sequences.push_back(bases);
  // C3 linearization: repeatedly take the first head that is in no tail.
  for (;;) {
    llvm::erase_if(sequences,
                   [](const std::vector<EntityRef> &s) { return s.empty(); });
    if (sequences.empty())
      break;
    std::optional<EntityRef> next;
    for (const std::vector<EntityRef> &candidate : sequences) {
      EntityRef head = candidate.front();
      bool inTail = llvm::any_of(sequences, [&](const auto &s) {
        return std::find(s.begin() + 1, s.end(), head) != s.end();
      });
      if (!inTail) {
        next = head;
        break;
      }
    }
    if (!next) {
      // Python rejects an inconsistent hierarchy; take what is left in
      // order rather than guess further.
      unknown = true;
      for (const auto &s : sequences)
        for (EntityRef ref : s)
          if (!llvm::is_contained(result, ref))
            result.push_back(ref);
      break;
    }
    result.push_back(*next);
    for (auto &s : sequences)
      if (s.front() == *next)
        s.erase(s.begin());
  }
  if (depth == 0)
    mros[{cls.file, cls.id}] = result;
  return result;
}

std::vector<std::pair<std::string, std::optional<EntityRef>>>
ItemCollector::getNamespace(EntityRef scope) const {
  const FileView &owner = at(scope.file);
  // Definitions, and at module level the names imports bind, by line.
  struct Entry {
    uint32_t line;
    std::string name;
    std::optional<EntityRef> value;
  };
  std::vector<Entry> entries;
  const PytestEntitySummary *scopeFacts =
      scope.id == kModuleScope ? nullptr : owner.getFacts(scope.id);
  for (LocalId id : owner.children(scope.id)) {
    const EntitySummary &entity = owner.entity(id);
    // parameterized.expand binds generated functions in place of the
    // decorated one (which becomes None); torch's parametrize does so when
    // the class is instantiated.
    if (const PytestEntitySummary *facts = owner.getFacts(id);
        facts &&
        (facts->generator == 1 ||
         (facts->generator == 2 && scopeFacts && scopeFacts->instantiated))) {
      for (const std::string &generated : facts->generatedNames)
        entries.push_back(
            {entity.range.startLine, generated, EntityRef{scope.file, id}});
      entries.push_back({entity.range.startLine, entity.name, std::nullopt});
      continue;
    }
    entries.push_back(
        {entity.range.startLine, entity.name, EntityRef{scope.file, id}});
  }
  if (scope.id == kModuleScope)
    for (const auto &[name, bindings] : owner.bindings())
      for (const Binding &binding : bindings)
        if (binding.entity == kModuleScope)
          entries.push_back(
              {binding.line, name.str(), resolve(binding.target)});
  llvm::stable_sort(
      entries, [](const Entry &a, const Entry &b) { return a.line < b.line; });
  std::vector<std::pair<std::string, std::optional<EntityRef>>> result;
  llvm::StringMap<size_t> position;
  for (Entry &entry : entries) {
    auto [it, inserted] = position.try_emplace(entry.name, result.size());
    if (inserted)
      result.emplace_back(entry.name, entry.value);
    else
      result[it->second].second = entry.value;
  }
  return result;
}

std::vector<TestSummary> ItemCollector::run() {
  MarkChain moduleChain;
  for (const MarkSummary &mark : view.summary->moduleMarks)
    moduleChain.marks.push_back(&mark);
  // A file whose tests are not all known statically: the file item (pytest
  // runs every test of a file given its path) stands for them. A file with
  // syntax errors may have lost tests tree-sitter could not recover.
  if (view.summary->parseError || view.summary->dynamicTests)
    addEnclosingItem(view.path.str(), {file, kModuleScope},
                     view.summary->parseError ? "parse-error" : "dynamic-tests",
                     moduleChain.marks);
  for (const auto &[name, value] : getNamespace({file, kModuleScope})) {
    if (!value)
      continue;
    localClass = kModuleScope;
    collectMember(*value, name, view.path.str(), moduleChain, 0);
  }
  return std::move(tests);
}

/// unittest's TestCase classes, which contribute no tests of their own.
static bool isUnittestCaseBase(StringRef name) {
  if (isKnownFrameworkTestCase(name))
    return true;
  static const char *const kCases[] = {
      "unittest.TestCase",
      "unittest.IsolatedAsyncioTestCase",
      "unittest.FunctionTestCase",
      "unittest.case.TestCase",
      "unittest.case.FunctionTestCase",
      "unittest.async_case.IsolatedAsyncioTestCase"};
  return llvm::is_contained(kCases, name);
}

ItemCollector::CaseKind ItemCollector::getCaseKind(EntityRef cls,
                                                   unsigned depth) const {
  const PytestEntitySummary *facts = at(cls.file).getFacts(cls.id);
  if (!facts || depth > 32)
    return CaseKind::No;
  CaseKind result = CaseKind::No;
  for (const std::string &base : facts->bases) {
    if (isUnittestCaseBase(base))
      return CaseKind::Yes;
    if (base.empty() || isInertBase(base))
      continue;
    std::optional<EntityRef> ref = resolve(base);
    if (!ref || at(ref->file).entity(ref->id).kind != EntityKind::Class) {
      // A class from outside the repository: frameworks' TestCase classes
      // (absltest, django, torch's common_utils) say so in their name.
      if (StringRef(base).ends_with("TestCase"))
        result = CaseKind::Maybe;
      continue;
    }
    CaseKind kind = getCaseKind(*ref, depth + 1);
    if (kind == CaseKind::Yes)
      return kind;
    if (kind == CaseKind::Maybe)
      result = kind;
  }
  return result;
}

void ItemCollector::collectMember(EntityRef value, StringRef name,
                                  const std::string &prefix,
                                  const MarkChain &outer, unsigned depth) {
  const EntitySummary &entity = at(value.file).entity(value.id);
  if (entity.kind != EntityKind::Class) {
    if (isTestFunction(value) && repo.config.isTestFunctionName(name))
      collectFunction(value, name, prefix, outer);
    return;
  }
  // Deleted or replaced at import time (torch's device-type classes,
  // parameterized_class): the name pytest sees holds no tests.
  if (const PytestEntitySummary *facts = at(value.file).getFacts(value.id);
      facts && facts->replaced)
    return;
  // pytest's unittest plugin takes any subclass of unittest.TestCase,
  // whatever its name, before the python plugin's `Test*` rule. A class
  // whose framework base is only named like a TestCase keeps the `Test*`
  // rule when it matches it.
  CaseKind kind = getCaseKind(value);
  bool isTestName = repo.config.isTestClassName(name);
  if (kind == CaseKind::No && !isTestName)
    return;
  if (kind == CaseKind::Maybe && isTestName)
    kind = CaseKind::No;
  LocalId saved = localClass;
  if (value.file == file)
    localClass = value.id;
  std::string classPrefix = prefix + "::" + name.str();
  if (kind == CaseKind::No)
    collectClass(value, name, classPrefix, outer, depth);
  else
    collectUnittestClass(value, classPrefix, outer, kind == CaseKind::Maybe);
  localClass = saved;
}

bool ItemCollector::isDisabled(llvm::ArrayRef<EntityRef> mro) const {
  for (EntityRef ref : mro)
    if (const PytestEntitySummary *facts = at(ref.file).getFacts(ref.id))
      if (facts->testAttribute)
        return facts->testAttribute == 1;
  return false;
}

bool ItemCollector::hasUnknownMembers(EntityRef cls) const {
  const FileView &owner = at(cls.file);
  const PytestEntitySummary *classFacts = owner.getFacts(cls.id);
  if (classFacts && classFacts->dynamicMembers)
    return true;
  for (LocalId member : owner.children(cls.id))
    if (const PytestEntitySummary *facts = owner.getFacts(member))
      if ((facts->generator == 1 ||
           (facts->generator == 2 && classFacts && classFacts->instantiated)) &&
          !facts->generatedKnown)
        return true;
  return false;
}

void ItemCollector::addEnclosingItem(
    const std::string &nodeId, EntityRef entry, StringRef reason,
    llvm::ArrayRef<const MarkSummary *> marks) {
  TestSummary item;
  item.nodeId = nodeId;
  if (entry.id == kModuleScope && entry.file == file)
    item.entry = kModuleScope;
  else
    setEntry(item, entry, localClass);
  for (const MarkSummary *mark : marks)
    addTag(item.tags, mark->name);
  item.enclosing = true;
  item.reason = reason.str();
  tests.push_back(std::move(item));
}

ItemCollector::MarkChain
ItemCollector::getClassMarks(llvm::ArrayRef<EntityRef> mro,
                             const MarkChain &outer) const {
  // Class marks: pytest >= 7.3 takes them base-first (reverse MRO), 7.2
  // subclass-first; parametrize ids depend on that order only when two
  // classes of the MRO parametrize.
  MarkChain chain;
  unsigned parametrizing = 0;
  for (EntityRef ref : llvm::reverse(mro)) {
    const PytestEntitySummary *facts = at(ref.file).getFacts(ref.id);
    if (!facts)
      continue;
    bool any = false;
    for (const MarkSummary &mark : facts->marks) {
      chain.marks.push_back(&mark);
      any |= mark.name == "parametrize";
    }
    parametrizing += any;
  }
  chain.ambiguousOrder = outer.ambiguousOrder || parametrizing > 1;
  llvm::append_range(chain.marks, outer.marks);
  return chain;
}

void ItemCollector::addUnknownClassItem(EntityRef cls,
                                        const std::string &prefix,
                                        const MarkChain &chain) {
  // A base we cannot see may hold more tests: an item for the whole class
  // (pytest runs all of a class given its node id).
  TestSummary item;
  item.nodeId = prefix;
  setEntry(item, cls, localClass);
  for (const MarkSummary *mark : chain.marks)
    addTag(item.tags, mark->name);
  item.inheritedUnknown = true;
  item.enclosing = true;
  item.reason = "inherited-unknown";
  tests.push_back(std::move(item));
}

void ItemCollector::collectUnittestClass(EntityRef cls,
                                         const std::string &prefix,
                                         const MarkChain &outer, bool maybe) {
  // _pytest/unittest.py's UnitTestCase.collect: no `__init__` rule, no
  // nested classes, and the names unittest's TestLoader gives.
  bool unknown = maybe;
  std::vector<EntityRef> mro = getMro(cls, unknown);
  if (isDisabled(mro))
    return;
  MarkChain chain = getClassMarks(mro, outer);
  addUncertainClassItem(cls, prefix, mro, chain, unknown);
  // TestLoader.getTestCaseNames: every callable attribute (a function or a
  // class) whose name starts with `test`, along the MRO, sorted by name.
  std::map<std::string, EntityRef> members;
  for (EntityRef ref : mro)
    for (auto &[memberName, value] : getNamespace(ref))
      if (value)
        members.try_emplace(memberName, *value);
  bool found = false;
  auto collect = [&](StringRef memberName, EntityRef member) {
    found = true;
    const EntitySummary &entity = at(member.file).entity(member.id);
    if (entity.kind == EntityKind::Function) {
      collectFunction(member, memberName, prefix, chain, /*unittest=*/true);
      return;
    }
    TestSummary item;
    item.nodeId = prefix + "::" + memberName.str();
    setEntry(item, member, localClass);
    if (const PytestEntitySummary *facts = at(member.file).getFacts(member.id))
      for (const MarkSummary &mark : facts->marks)
        addTag(item.tags, mark.name);
    for (const MarkSummary *mark : chain.marks)
      addTag(item.tags, mark->name);
    tests.push_back(std::move(item));
  };
  for (const auto &[memberName, member] : members)
    if (StringRef(memberName).starts_with("test"))
      collect(memberName, member);
  // Without test methods, a `runTest` method is the test.
  if (!found) {
    auto runTest = members.find("runTest");
    if (runTest != members.end() &&
        at(runTest->second.file).entity(runTest->second.id).kind ==
            EntityKind::Function)
      collect("runTest", runTest->second);
  }
}

void ItemCollector::collectClass(EntityRef cls, StringRef name,
                                 const std::string &prefix,
                                 const MarkChain &outer, unsigned depth) {
  if (depth > 32)
    return;
  bool unknown = false;
  std::vector<EntityRef> mro = getMro(cls, unknown);
  // `__test__` is looked up along the MRO.
  if (isDisabled(mro))
    return;
  // pytest refuses classes with a constructor (with a warning), inherited
  // ones included.
  for (EntityRef ref : mro) {
    // Dataclass-like decorators generate an `__init__`.
    if (ref.id != kModuleScope)
      for (StringRef decorator : at(ref.file).entity(ref.id).decorators)
        if (isInitGeneratingDecorator(decorator))
          return;
    for (LocalId member : at(ref.file).children(ref.id)) {
      const EntitySummary &entity = at(ref.file).entity(member);
      if (entity.kind == EntityKind::Function &&
          (entity.name == "__init__" || entity.name == "__new__"))
        return;
    }
  }

  MarkChain chain = getClassMarks(mro, outer);
  addUncertainClassItem(cls, prefix, mro, chain, unknown);
  classMros.push_back(mro);
  auto popClass = llvm::make_scope_exit([&] { classMros.pop_back(); });

  // Members by class along the MRO, a name taken from the first class that
  // has it; base classes' members come first.
  llvm::StringSet<> seen;
  std::vector<std::vector<std::pair<std::string, EntityRef>>> groups;
  for (EntityRef ref : mro) {
    auto &group = groups.emplace_back();
    for (auto &[memberName, value] : getNamespace(ref))
      if (value && seen.insert(memberName).second)
        group.emplace_back(memberName, *value);
  }
  for (const auto &group : llvm::reverse(groups))
    for (const auto &[memberName, member] : group)
      collectMember(member, memberName, prefix, chain, depth + 1);
}

void ItemCollector::collectFunction(EntityRef function, StringRef name,
                                    const std::string &prefix,
                                    const MarkChain &outer, bool unittest) {
  const FileView &owner = at(function.file);
  TestSummary base;
  setEntry(base, function, localClass);
  std::vector<const MarkSummary *> marks;
  if (const PytestEntitySummary *facts = owner.getFacts(function.id))
    for (const MarkSummary &mark : facts->marks)
      marks.push_back(&mark);
  size_t ownMarks = marks.size();
  llvm::append_range(marks, outer.marks);

  // Each parametrize multiplies the cases; the first one iterated (the
  // decorator nearest the def) varies slowest and comes first in the id.
  struct Case {
    std::vector<std::string> ids;
    std::vector<std::string> tags;
  };
  // Repeats every case once per id of one parametrization (a mark's or a
  // fixture's), appending the id and that case's tags: the cartesian
  // product pytest builds.
  auto multiply = [](std::vector<Case> &cases, llvm::ArrayRef<std::string> ids,
                     llvm::ArrayRef<std::vector<std::string>> caseTags) {
    std::vector<Case> product;
    for (const Case &prefixCase : cases)
      for (auto [caseIndex, id] : llvm::enumerate(ids)) {
        Case &next = product.emplace_back(prefixCase);
        next.ids.push_back(id);
        if (caseIndex < caseTags.size())
          for (const std::string &tag : caseTags[caseIndex])
            addTag(next.tags, tag);
      }
    cases = std::move(product);
  };
  std::vector<Case> cases(1);
  bool hasParametrize = false, undetermined = false, seenFastci = false;
  std::vector<std::string> ownTags, outerTags;
  for (auto [index, mark] : llvm::enumerate(marks)) {
    addTag(index < ownMarks ? ownTags : outerTags, mark->name);
    if (mark->name == "parametrize") {
      // pytest does not parametrize the methods of a TestCase.
      if (unittest)
        continue;
      hasParametrize = true;
      // A class-level mark's position depends on the pytest version when
      // several classes of the MRO parametrize.
      if (!mark->idsKnown || (index >= ownMarks && outer.ambiguousOrder)) {
        undetermined = true;
        continue;
      }
      multiply(cases, mark->ids, mark->caseTags);
      continue;
    }
    if (mark->name == "fastci" && !seenFastci) {
      seenFastci = true;
      base.scope = mark->scope;
      base.workload = mark->workload;
      base.floors = mark->floors;
    }
  }
  // A fixture declared with `params=` repeats the test once per param.
  // pytest applies fixture params before parametrize marks, so their ids
  // come first and vary slowest; where they are not certain, the one item
  // stands for all cases.
  if (!unittest) {
    FixtureParamsInfo fixtures = getFixtureParams(function, marks);
    if (fixtures.parametrized) {
      hasParametrize = true;
      undetermined |= !fixtures.exact;
    }
    std::vector<Case> fixtureCases(1);
    for (const PytestEntitySummary *fixture : fixtures.applied)
      multiply(fixtureCases, fixture->fixtureIds, fixture->fixtureCaseTags);
    if (!fixtures.applied.empty()) {
      std::vector<Case> combined;
      for (const Case &fixtureCase : fixtureCases)
        for (const Case &markCase : cases) {
          Case &next = combined.emplace_back(fixtureCase);
          llvm::append_range(next.ids, markCase.ids);
          for (const std::string &tag : markCase.tags)
            addTag(next.tags, tag);
        }
      cases = std::move(combined);
    }
  }
  std::string nodeId = prefix + "::" + name.str();
  auto makeTags = [&](llvm::ArrayRef<std::string> caseTags) {
    // pytest's order: the function's marks, the case's, then the class's
    // and the module's.
    std::vector<std::string> tags = ownTags;
    for (const std::string &tag : caseTags)
      addTag(tags, tag);
    for (const std::string &tag : outerTags)
      addTag(tags, tag);
    return tags;
  };
  if (!hasParametrize || undetermined) {
    base.nodeId = std::move(nodeId);
    base.parametrized = hasParametrize;
    if (hasParametrize) {
      // `path::test_x` runs every case: pytest accepts it, but it is not
      // one of the ids `--collect-only` prints.
      base.enclosing = true;
      base.reason = "parametrized";
    }
    base.tags = makeTags({});
    tests.push_back(std::move(base));
    return;
  }
  for (const Case &parametrized : cases) {
    TestSummary test = base;
    test.nodeId = nodeId + "[" + llvm::join(parametrized.ids, "-") + "]";
    test.tags = makeTags(parametrized.tags);
    tests.push_back(std::move(test));
  }
}

void ItemCollector::addScopeFixtures(llvm::ArrayRef<EntityRef> mro,
                                     FixtureMap &map,
                                     std::vector<std::string> &autouse) const {
  // pytest's parsefactories reads the holder's attributes in dir() order
  // (sorted by name): along a class's MRO, the first class that binds a
  // name decides.
  llvm::StringSet<> seen;
  std::vector<std::pair<std::string, EntityRef>> members;
  for (EntityRef scope : mro)
    for (const auto &[name, value] : getNamespace(scope))
      if (seen.insert(name).second && value)
        members.emplace_back(name, *value);
  llvm::stable_sort(
      members, [](const auto &a, const auto &b) { return a.first < b.first; });
  for (const auto &[name, value] : members) {
    const EntitySummary &entity = at(value.file).entity(value.id);
    const PytestEntitySummary *facts = at(value.file).getFacts(value.id);
    if (!entity.isFixture || !facts || facts->fixtureName.empty())
      continue;
    map[facts->fixtureName].push_back({value, facts});
    if (facts->fixtureAutouse)
      autouse.push_back(facts->fixtureName);
  }
}

ItemCollector::FixtureParamsInfo
ItemCollector::getFixtureParams(EntityRef function,
                                llvm::ArrayRef<const MarkSummary *> marks) {
  if (!moduleFixtures) {
    // conftest.py files from the root down to the test file's directory,
    // then the module itself.
    moduleFixtures.emplace();
    StringRef directory = view.path.rsplit('/').first;
    if (!view.path.contains('/'))
      directory = "";
    std::vector<std::pair<size_t, uint32_t>> conftests;
    for (auto [index, other] : llvm::enumerate(repo.files)) {
      StringRef otherPath = other.path;
      if (otherPath != "conftest.py" && !otherPath.ends_with("/conftest.py"))
        continue;
      StringRef otherDirectory =
          otherPath.size() > 11 ? otherPath.drop_back(12) : StringRef();
      if (otherDirectory.empty() || directory == otherDirectory ||
          directory.starts_with((otherDirectory + "/").str()))
        conftests.emplace_back(otherDirectory.size(), index);
    }
    llvm::sort(conftests);
    for (auto [length, index] : conftests)
      addScopeFixtures({EntityRef{index, kModuleScope}}, *moduleFixtures,
                       moduleAutouse);
    addScopeFixtures({EntityRef{file, kModuleScope}}, *moduleFixtures,
                     moduleAutouse);
  }
  FixtureMap classFixtures;
  std::vector<std::string> requested = moduleAutouse;
  for (const std::vector<EntityRef> &mro : classMros)
    addScopeFixtures(mro, classFixtures, requested);
  auto definitions = [&](StringRef name) {
    std::vector<FixtureDef> result;
    auto it = moduleFixtures->find(name);
    if (it != moduleFixtures->end())
      result = it->second;
    auto local = classFixtures.find(name);
    if (local != classFixtures.end())
      llvm::append_range(result, local->second);
    return result;
  };

  // getfixtureinfo's initial names: autouse fixtures, usefixtures, then the
  // function's arguments. The names a parametrize mark supplies directly
  // (not `indirect=`) are not looked up as fixtures.
  FixtureParamsInfo info;
  bool certain = true;
  llvm::StringSet<> markArgnames, ignored;
  for (const MarkSummary *mark : marks) {
    if (mark->name == "usefixtures") {
      llvm::append_range(requested, mark->names);
    } else if (mark->name == "parametrize") {
      for (const std::string &name : mark->names) {
        markArgnames.insert(name);
        if (mark->indirect == 0)
          ignored.insert(name);
      }
      // An `indirect=` list: pytest 7 then looks up every argname, pytest
      // 8 only the indirect ones; looking up all of them is the larger set.
      certain &= mark->indirect != 2;
    }
  }
  llvm::append_range(requested, getArgnames(function));
  std::vector<std::string> initial;
  llvm::StringSet<> seen;
  for (const std::string &name : requested)
    if (seen.insert(name).second)
      initial.push_back(name);

  // The closure as pytest 7 computes it (breadth first, over the innermost
  // definition's arguments) ...
  std::vector<std::string> breadthFirst = initial;
  for (size_t i = 0; i < breadthFirst.size(); ++i) {
    if (ignored.contains(breadthFirst[i]))
      continue;
    std::vector<FixtureDef> defs = definitions(breadthFirst[i]);
    if (!defs.empty())
      for (const std::string &argument : getArgnames(defs.back().ref))
        if (seen.insert(argument).second)
          breadthFirst.push_back(argument);
  }
  // ... and as pytest 8's traverse_fixture_closure does (depth first,
  // following an override chain into the overridden definitions).
  std::vector<std::string> depthFirst;
  llvm::StringMap<int> chainIndex;
  std::function<void(StringRef, unsigned)> visit = [&](StringRef name,
                                                       unsigned depth) {
    if (depth > 64) {
      certain = false;
      return;
    }
    auto found = chainIndex.find(name);
    if (found != chainIndex.end() && found->second == -1)
      return;
    if (found == chainIndex.end()) {
      depthFirst.push_back(name.str());
      chainIndex[name] = -1;
    }
    if (ignored.contains(name))
      return;
    std::vector<FixtureDef> defs = definitions(name);
    int index = chainIndex[name];
    if (defs.empty() || static_cast<size_t>(-index) > defs.size())
      return;
    const FixtureDef &def = defs[defs.size() + index];
    chainIndex[name] = index - 1;
    for (const std::string &argument : getArgnames(def.ref))
      visit(argument, depth + 1);
    chainIndex[name] = index;
  };
  for (const std::string &name : initial)
    visit(name, 0);

  // Both sort the closure by scope, widest first, and then parametrize
  // each name (fixtures.py's pytest_generate_tests): not one the test
  // parametrizes itself; the innermost definition with params, passing
  // to an outer one only while each requests its own name.
  auto applied = [&](std::vector<std::string> closure) {
    auto scopeOf = [&](StringRef name) -> unsigned {
      std::vector<FixtureDef> defs = definitions(name);
      return defs.empty() ? 0 : defs.back().facts->fixtureScope;
    };
    llvm::stable_sort(closure, [&](const std::string &a, const std::string &b) {
      return scopeOf(a) > scopeOf(b);
    });
    std::vector<const PytestEntitySummary *> result;
    for (const std::string &name : closure) {
      if (markArgnames.contains(name))
        continue;
      std::vector<FixtureDef> defs = definitions(name);
      for (const FixtureDef &def : llvm::reverse(defs)) {
        if (def.facts->fixtureParams) {
          result.push_back(def.facts);
          break;
        }
        if (!llvm::is_contained(getArgnames(def.ref), name))
          break;
      }
    }
    return result;
  };
  std::vector<const PytestEntitySummary *> older = applied(breadthFirst);
  info.applied = applied(depthFirst);
  info.parametrized = !older.empty() || !info.applied.empty();
  // Exact ids only where both agree, every id is static, and the fixture
  // is function-scoped: wider scopes make pytest reorder the items.
  info.exact = certain && older == info.applied &&
               llvm::all_of(info.applied, [](const PytestEntitySummary *f) {
                 return f->fixtureIdsKnown && f->fixtureScope == 0;
               });
  if (!info.exact)
    info.applied.clear();
  return info;
}

void fastci::python::collectPytestItems(
    StringRef path, StringRef moduleName, StringRef source,
    FileSummary &summary, llvm::ArrayRef<std::vector<PyValue>> decorators,
    llvm::ArrayRef<PyValue> moduleMarks, const ImportTimeEffects &effects,
    const PytestConfig &config) {
  buildPytestFacts(moduleName, source, summary, decorators, moduleMarks,
                   effects, config);
  if (!config.isTestFile(path))
    return;
  Repository repo(config);
  repo.addFile(path, moduleName, &summary);
  summary.tests = ItemCollector(repo, 0).run();
}

/// True when the items of a test file may depend on other files: a class
/// with a base that is not one of the file's classes, or a name imported
/// at module level with `from` (a `Test*` class, a `test*` function, or a
/// unittest.TestCase subclass of any name). Other files keep their per-file
/// items, which keeps the link step cheap on large repositories.
static bool dependsOnOtherFiles(StringRef moduleName,
                                const FileSummary &summary) {
  llvm::StringSet<> local;
  for (const EntitySummary &entity : summary.entities)
    if (entity.kind == EntityKind::Class)
      local.insert(symbolOf(moduleName, entity));
  for (const PytestEntitySummary &facts : summary.pytestEntities)
    for (const std::string &base : facts.bases)
      if (!base.empty() && !isInertBase(base) && !local.contains(base))
        return true;
  bool importsNames = false;
  forEachEdge(summary, [&](const EdgeRef &edge) {
    if (edge.kind != EdgeKind::Import || edge.from != kModuleScope ||
        !edge.modulePrefix || edge.modulePrefix >= edge.target.size())
      return;
    // Only imports of names from the standard library's unittest cannot
    // bind a repository class.
    StringRef module = edge.target.take_front(edge.modulePrefix);
    if (module != "unittest" && !module.starts_with("unittest.") &&
        module != "pytest")
      importsNames = true;
  });
  return importsNames;
}

/// True when a conftest.py may give the tests below it fixtures: it
/// defines one, or imports names at module level.
static bool providesFixtures(const FileSummary &summary) {
  for (const EntitySummary &entity : summary.entities)
    if (entity.isFixture && entity.parent == kModuleScope)
      return true;
  bool imports = false;
  forEachEdge(summary, [&](const EdgeRef &edge) {
    imports |= edge.kind == EdgeKind::Import && edge.from == kModuleScope;
  });
  return imports;
}

LinkResult fastci::python::linkPytestItems(
    llvm::ArrayRef<SourceFile> files,
    llvm::function_ref<FileSummary *(size_t)> summaryOf,
    const PytestConfig &config, unsigned jobs, const PreviousLink *previous) {
  // Directories whose conftest.py provides fixtures ("" for the root).
  llvm::StringSet<> conftestDirectories;
  for (auto [index, file] : llvm::enumerate(files)) {
    StringRef path = file.path;
    FileSummary *summary = summaryOf(index);
    if (summary && (path == "conftest.py" || path.ends_with("/conftest.py")) &&
        providesFixtures(*summary))
      conftestDirectories.insert(
          path.drop_back(StringRef("conftest.py").size()).rtrim('/'));
  }
  auto underConftest = [&](StringRef path) {
    if (conftestDirectories.empty())
      return false;
    if (conftestDirectories.contains(""))
      return true;
    for (size_t slash = path.rfind('/'); slash != StringRef::npos;
         slash = path.take_front(slash).rfind('/'))
      if (conftestDirectories.contains(path.take_front(slash)))
        return true;
    return false;
  };
  LinkResult result;
  result.linked.assign(files.size(), false);
  // The files whose items depend on others', and of them (or of those
  // linked before) the ones to collect again.
  llvm::StringSet<> freshPaths;
  if (previous && previous->sameFiles)
    for (auto [index, file] : llvm::enumerate(files))
      if (summaryOf(index) && previous->isFresh(index))
        freshPaths.insert(file.path);
  auto readsFresh = [&](StringRef reads) {
    while (!reads.empty()) {
      auto [path, rest] = reads.split('\0');
      if (freshPaths.contains(path))
        return true;
      reads = rest;
    }
    return false;
  };
  for (auto [index, file] : llvm::enumerate(files)) {
    StringRef path = file.path;
    FileSummary *summary = summaryOf(index);
    if (!summary)
      continue;
    bool dependent =
        config.isTestFile(path) &&
        (dependsOnOtherFiles(file.moduleName, *summary) || underConftest(path));
    std::optional<StringRef> reads =
        previous ? previous->readsOf(index) : std::nullopt;
    bool fresh = previous && previous->isFresh(index);
    bool collect;
    if (!previous || !previous->sameFiles)
      // Another file set can change any lookup: all dependent files, and
      // those linked before, whose cached items are linked ones.
      collect = dependent || (reads && !fresh);
    else if (dependent)
      collect = fresh || !reads || readsFresh(*reads);
    else
      // No longer dependent (a conftest.py lost its fixtures): its cached
      // items were linked; the collection alone reads nothing else.
      collect = reads && !fresh;
    if (collect)
      result.relinked.push_back(index);
    result.linked[index] = dependent;
  }
  if (result.relinked.empty())
    return result;
  Repository repo(config);
  llvm::DenseMap<size_t, uint32_t> positions;
  for (auto [index, file] : llvm::enumerate(files))
    if (FileSummary *summary = summaryOf(index)) {
      positions[index] = repo.files.size();
      repo.addFile(file.path, file.moduleName, summary);
    }
  // Each collector reads the repository and writes its own file's items.
  result.reads.resize(result.relinked.size());
  parallelFor(
      0, result.relinked.size(),
      [&](size_t k) {
        uint32_t position = positions.lookup(result.relinked[k]);
        ItemCollector collector(repo, position);
        repo.files[position].summary->tests = collector.run();
        std::vector<StringRef> paths;
        for (uint32_t other : collector.getReads())
          paths.push_back(repo.files[other].path);
        llvm::sort(paths);
        result.reads[k] = llvm::join(paths, StringRef("\0", 1));
      },
      jobs);
  return result;
}
