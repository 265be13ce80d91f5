//===- ChangeMapperFiles.cpp - Other files and the policy
//------------------===//
//
// Non-Python files go through the change policy: ignored, routed to the
// tests that reference them or whose evidence read them, mapped to the
// modules that load a native extension, or forcing every test
// (docs/Changes.md, Change policy format).
//
//===----------------------------------------------------------------------===//
#include "ChangeMapperImpl.h"
#include "fastci/Diff/ConfigSections.h"
#include "fastci/Diff/DiffAttrs.h"
#include "fastci/Python/PythonAttrs.h"
#include "fastci/Workload/WorkloadAttrs.h"
#include "llvm/Support/Path.h"

using namespace fastci;
using namespace fastci::detail;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Non-Python files
//===----------------------------------------------------------------------===//

/// True when \p text mentions \p path as a whole path (not as the tail of a
/// longer name), e.g. `--config configs/gpt.yaml` for `configs/gpt.yaml`.
static bool mentionsPath(StringRef text, StringRef path) {
  auto isNameChar = [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '-' || c == '.' || c == '/';
  };
  for (size_t at = text.find(path); at != StringRef::npos;
       at = text.find(path, at + 1)) {
    size_t end = at + path.size();
    bool startsClean =
        at == 0 || !isNameChar(text[at - 1]) || text[at - 1] == '/';
    bool endsClean = end == text.size() || !isNameChar(text[end]);
    if (startsClean && endsClean)
      return true;
  }
  return false;
}

/// True when any string inside \p attr mentions \p path.
static bool mentionsPath(const Attribute &attr, StringRef path) {
  if (std::optional<StringRef> text = attr.asString())
    return mentionsPath(*text, path);
  if (attr.isList())
    return llvm::any_of(attr.getList(), [&](const Attribute &element) {
      return mentionsPath(element, path);
    });
  if (attr.isDict())
    return llvm::any_of(attr.getDict(), [&](const NamedAttribute &entry) {
      return mentionsPath(entry.second, path);
    });
  return false;
}

static bool mentionsPath(const AttrDict &attrs, StringRef path) {
  return llvm::any_of(attrs, [&](const NamedAttribute &entry) {
    return mentionsPath(entry.second, path);
  });
}

void ChangeMapper::Impl::forceAll(ChangedFile &record,
                                  const llvm::Twine &reason) {
  std::string text = reason.str();
  setDecision(record, FileDecision::All);
  record.attrs.set(diff::attr::kReason, Attribute::getString(text));
  allReasons.push_back((record.path + ": " + text).str());
  ++mapper.stats.filesForcingAll;
}

/// The decorator lines written above the `def` on 1-based line \p defLine
/// (`@pytest.fixture(` and its argument lines), joined.
static std::string getDecoratorText(llvm::ArrayRef<StringRef> lines,
                                    uint32_t defLine) {
  std::string text;
  for (uint32_t line = defLine; line > 1 && line - 1 <= lines.size(); --line) {
    StringRef above = lines[line - 2];
    StringRef trimmed = above.trim();
    // Blank lines and statements at column 0 other than decorators (and
    // the closing brackets of their arguments) end the decorators.
    if (trimmed.empty() ||
        (above.front() != ' ' && above.front() != '\t' &&
         !trimmed.starts_with("@") && !trimmed.starts_with(")") &&
         !trimmed.starts_with("]")))
      break;
    text = (trimmed + "\n" + text).str();
  }
  return text;
}

/// The 1-based line of `def name(` at column 0 of \p lines, or 0.
static uint32_t findTopLevelDef(llvm::ArrayRef<StringRef> lines,
                                StringRef name) {
  for (auto [index, line] : llvm::enumerate(lines)) {
    StringRef rest = line;
    rest.consume_front("async ");
    if (rest.consume_front("def ") && rest.ltrim().starts_with(name) &&
        rest.ltrim().drop_front(name.size()).ltrim().starts_with("("))
      return index + 1;
  }
  return 0;
}

/// True when \p decorators (a fixture's decorator text) leave it
/// function-scoped: no `scope=` other than "function" (nor a callable).
static bool isFunctionScoped(StringRef decorators) {
  size_t at = decorators.find("scope");
  if (at == StringRef::npos)
    return true;
  StringRef value = decorators.drop_front(at + 5).ltrim();
  if (!value.consume_front("="))
    return true;
  value = value.ltrim();
  return value.starts_with("\"function\"") || value.starts_with("'function'");
}

std::optional<std::string>
ChangeMapper::Impl::getFixtureOnlyChange(const FileDiff &file) {
  // A function-scoped fixture runs in every test that requests it, so the
  // evidence recorded before the change names all the tests a change to
  // its body can affect. Not so for a change to its decorator (it runs at
  // import, and line coverage counts it for every test that runs code of
  // the file), a module-level change, a hook, a helper (hooks may call it
  // outside any test), an added fixture (it may override a plugin's or a
  // parent conftest's of the same name for tests whose evidence shows only
  // that one), a scoped fixture (later tests of its scope reuse the value
  // without running it) or an autouse one.
  StringRef path = file.getPath();
  const SourceText &newText = getNewText(path);
  if (!newText.text)
    return std::nullopt;
  std::vector<std::string> fixtures;
  for (const PendingChange &change : pending) {
    if (change.dropped || change.kind == ChangeKind::Cosmetic ||
        (change.file != path && change.file != file.oldPath))
      continue;
    if (change.kind != ChangeKind::Modified ||
        change.entityKind != EntityKind::Function ||
        change.entity == kNoEntity || StringRef(change.qualName).contains('.'))
      return std::nullopt;
    const Entity &entity = module.getEntity(change.entity);
    Attribute fixture = entity.attrs.get(python::attr::kFixture);
    if (!fixture.isBool() || !fixture.getBool())
      return std::nullopt;
    uint32_t def = entity.range.startLine;
    if (llvm::any_of(change.lines, [&](uint32_t line) { return line < def; }))
      return std::nullopt;
    if (!change.removedLines.empty()) {
      const SourceText &oldText =
          getOldText(file.oldPath.empty() ? path : StringRef(file.oldPath));
      uint32_t oldDef =
          oldText.text ? findTopLevelDef(oldText.lines, change.qualName) : 0;
      if (!oldDef || llvm::any_of(change.removedLines,
                                  [&](uint32_t line) { return line < oldDef; }))
        return std::nullopt;
    }
    // The decorator did not change, so its text now is its text then.
    std::string decorators = getDecoratorText(newText.lines, def);
    if (!isFunctionScoped(decorators) ||
        StringRef(decorators).contains("autouse"))
      return std::nullopt;
    fixtures.push_back(change.qualName);
  }
  if (fixtures.empty())
    return std::nullopt;
  return "changes only function-scoped fixtures (" +
         llvm::join(fixtures, ", ") +
         "): the tests whose evidence ran them are selected";
}

void ChangeMapper::Impl::mapDirectoryTests(const FileDiff &file,
                                           ChangedFile &record) {
  // pytest loads a conftest.py for the tests at or below its directory
  // only; its Python changes stay mapped for code that imports it.
  StringRef path = file.getPath();
  StringRef dir =
      llvm::sys::path::parent_path(path, llvm::sys::path::Style::posix);
  if (std::optional<std::string> fixtures = getFixtureOnlyChange(file)) {
    record.attrs.set(diff::attr::kReason, Attribute::getString(*fixtures));
    return;
  }
  if (dir.empty())
    return forceAll(record, "'" + path + "' applies to every test");
  // Hooks are not all directory-scoped: `pytest_collection_modifyitems`,
  // `pytest_configure` and the like of any conftest see the whole session.
  bool hooks = llvm::any_of(file.hunks, [](const Hunk &hunk) {
    return llvm::any_of(hunk.lines, [](const DiffLine &line) {
      return line.text.ltrim().starts_with("def pytest_") ||
             line.text.ltrim().starts_with("async def pytest_");
    });
  });
  if (!file.newPath.empty())
    for (const Entity &entity : module.getEntities())
      if (entity.kind == EntityKind::Function && entity.parent != kNoEntity &&
          module.getEntity(entity.parent).kind == EntityKind::Module &&
          module.getFilePath(entity.id) == file.newPath &&
          entity.symbol.rsplit('.').second.starts_with("pytest_"))
        hooks = true;
  if (hooks)
    return forceAll(record, "'" + path +
                                "' defines pytest hooks, which may act on "
                                "tests outside its directory");
  std::string prefix = (dir + "/").str();
  std::vector<std::string> names;
  for (const Test &test : module.getTests()) {
    StringRef testFile =
        test.entry != kNoEntity ? module.getFilePath(test.entry) : StringRef();
    if (testFile.empty())
      testFile = test.name.split("::").first;
    if (testFile.starts_with(prefix))
      names.push_back(test.name.str());
  }
  setDecision(record, FileDecision::Tests);
  record.attrs.set(diff::attr::kTests, Attribute::getStringList(names));
  record.attrs.set(diff::attr::kReason,
                   Attribute::getString(
                       llvm::formatv("applies to the {0} test(s) below '{1}'",
                                     names.size(), prefix)
                           .str()));
}

detail::VisitStop ChangeMapper::Impl::forEachChangedLine(
    const FileDiff &file,
    llvm::function_ref<bool(const DiffLine &, bool, llvm::ArrayRef<StringRef>,
                            uint32_t)>
        visit) {
  // Removed lines are located in the old text, added ones in the new.
  if (!file.oldPath.empty())
    diffByOldPath.try_emplace(file.oldPath, &file);
  if (!file.newPath.empty())
    diffByNewPath.try_emplace(file.newPath, &file);
  const SourceText *newText =
      file.newPath.empty() ? nullptr : &getNewText(file.newPath);
  const SourceText *oldText =
      file.oldPath.empty() ? nullptr : &getOldText(file.oldPath);
  for (const Hunk &hunk : file.hunks)
    for (const DiffLine &line : hunk.lines) {
      if (line.kind == ' ')
        continue;
      bool added = line.kind == '+';
      const SourceText *text = added ? newText : oldText;
      if (!text || !text->text)
        return VisitStop::NoText;
      if (!visit(line, added, text->lines, added ? line.newLine : line.oldLine))
        return VisitStop::Visitor;
    }
  return VisitStop::None;
}

void ChangeMapper::Impl::mapRunAll(const FileDiff &file, const PolicyRule &rule,
                                   ChangedFile &record) {
  std::string all =
      "the policy selects every test for " + rule.category + " files";
  if (rule.ignoreSections.empty())
    return forceAll(record, all);
  if (file.isBinary)
    return forceAll(record, all + " (a binary patch)");
  // Compiled once per file (the policy parser has checked every pattern;
  // a GlobPattern refers to its text, which the policy keeps alive).
  // `+pattern` ignores only added lines there: a removed marker description
  // fails the tests using it under --strict-markers.
  struct SectionPattern {
    llvm::GlobPattern glob;
    bool addedOnly;
  };
  std::vector<SectionPattern> patterns;
  for (StringRef text : rule.ignoreSections) {
    bool addedOnly = text.consume_front("+");
    if (llvm::Expected<llvm::GlobPattern> glob =
            llvm::GlobPattern::create(text))
      patterns.push_back({std::move(*glob), addedOnly});
    else
      llvm::consumeError(glob.takeError());
  }
  ConfigFormat format = getConfigFormat(file.getPath());
  // pyproject.toml's `[tool.X]` tables belong to their tools (PEP 518): one
  // that neither pytest nor the build reads changes no test process.
  bool pyproject =
      llvm::sys::path::filename(file.getPath()) == "pyproject.toml";
  std::optional<std::vector<std::string>> buildRequirements[2];
  std::vector<std::string> ignored;
  std::string blocking;
  VisitStop stop = forEachChangedLine(file, [&](const DiffLine &line,
                                                bool added,
                                                llvm::ArrayRef<StringRef> text,
                                                uint32_t number) {
    ConfigLine where = locateConfigLine(text, number, format);
    if (where.insignificant)
      return true;
    auto otherTool = [&] {
      if (!pyproject)
        return false;
      std::optional<std::vector<std::string>> &build = buildRequirements[added];
      if (!build)
        build = getBuildRequirements(text);
      return isOtherToolTable(where.section, *build);
    };
    if (llvm::none_of(patterns,
                      [&](const SectionPattern &pattern) {
                        return (added || !pattern.addedOnly) &&
                               matchConfigSection(pattern.glob, where);
                      }) &&
        !otherTool()) {
      blocking = llvm::formatv(
          "line {0} {1} '{2}'", number, added ? "changes" : "removes",
          where.getPath().empty() ? line.text.trim().str() : where.getPath());
      return false;
    }
    if (!llvm::is_contained(ignored, where.getPath()))
      ignored.push_back(where.getPath());
    return true;
  });
  if (stop == VisitStop::NoText)
    return forceAll(record, all + " (a text of it is not available)");
  if (stop == VisitStop::Visitor)
    return forceAll(record, all + " (" + blocking + ")");
  // A test that reads the file itself observes any line of it.
  if (mapReadingTests(file, &rule, record))
    return;
  setDecision(record, FileDecision::Ignore);
  record.attrs.set(diff::attr::kReason,
                   Attribute::getString(
                       ignored.empty()
                           ? std::string("only blank and comment lines changed")
                           : "only changes sections the policy ignores: " +
                                 llvm::join(ignored, ", ")));
}

bool ChangeMapper::Impl::mapManifestEntries(const FileDiff &file,
                                            ChangedFile &record) {
  // The tests load-manifest read from this file; a change inside the entry
  // of some of them concerns those alone, anything else every one.
  StringRef path = file.getPath();
  std::vector<const Test *> listed;
  for (const Test &test : module.getTests())
    if (std::optional<StringRef> manifest =
            lookupString(test.attrs, workload::attr::kManifest);
        manifest && mentionsPath(*manifest, path))
      listed.push_back(&test);
  if (listed.empty() || file.isBinary)
    return false;
  std::vector<std::string> ids;
  VisitStop stop = forEachChangedLine(file, [&](const DiffLine &, bool,
                                                llvm::ArrayRef<StringRef> text,
                                                uint32_t number) {
    ManifestLine where = locateManifestLine(text, number);
    if (where.insignificant)
      return true;
    if (where.id.empty())
      return false;
    if (!llvm::is_contained(ids, where.id))
      ids.push_back(where.id);
    return true;
  });
  if (stop != VisitStop::None)
    return false;
  // An entry that is gone has no test left to run.
  std::vector<std::string> names;
  for (const Test *test : listed)
    if (llvm::is_contained(ids, test->name))
      names.push_back(test->name.str());
  setDecision(record, FileDecision::Tests);
  record.attrs.set(diff::attr::kTests, Attribute::getStringList(names));
  record.attrs.set(
      diff::attr::kReason,
      Attribute::getString(ids.empty()
                               ? std::string("only blank and comment "
                                             "lines of the manifest changed")
                               : "changes the manifest entries of " +
                                     llvm::join(ids, ", ")));
  return true;
}

/// The golden file of a manifest test, relative to the manifest's
/// directory as written there (`golden: goldens/gpt.json` in ci/tests.yaml).
static std::string getGoldenPath(const Test &test) {
  std::optional<StringRef> golden =
      lookupString(test.attrs, workload::attr::kGolden);
  std::optional<StringRef> manifest =
      lookupString(test.attrs, workload::attr::kManifest);
  if (!golden || !manifest || golden->empty())
    return "";
  llvm::SmallString<128> path =
      llvm::sys::path::parent_path(*manifest, llvm::sys::path::Style::posix);
  llvm::sys::path::append(path, llvm::sys::path::Style::posix, *golden);
  return std::string(path);
}

void ChangeMapper::Impl::mapReferencingTests(const FileDiff &file,
                                             const PolicyRule &rule,
                                             ChangedFile &record) {
  StringRef path = file.getPath();
  if (mapManifestEntries(file, record))
    return;
  // A test references the file through its name (parametrized ids), its
  // entry's file, its workload or attributes, or the evidence recorded for
  // it (attributes and library frames, e.g. a traced open() of the file).
  llvm::DenseSet<FrameId> mentioningFrames;
  for (FrameId frame = 0; frame < module.getFrames().size(); ++frame)
    if (module.getFrame(frame).isLeaf() &&
        mentionsPath(module.getFrame(frame).leafName, path))
      mentioningFrames.insert(frame);
  llvm::DenseSet<TestId> referencing;
  for (const Test &test : module.getTests()) {
    if (mentionsPath(test.name, path) || mentionsPath(test.workload, path) ||
        mentionsPath(test.attrs, path) ||
        mentionsPath(getGoldenPath(test), path) ||
        (test.entry != kNoEntity && module.getFilePath(test.entry) == path))
      referencing.insert(test.index);
  }
  llvm::SmallVector<FrameId> frames;
  for (const EvidenceRecord &record : module.getEvidence()) {
    if (record.test == kNoTest || referencing.contains(record.test))
      continue;
    bool mentions = mentionsPath(record.attrs, path);
    for (size_t i = 0;
         !mentions && !mentioningFrames.empty() && i < record.samples.size();
         ++i) {
      frames.clear();
      module.getStackFrames(record.samples[i].stack, frames);
      mentions = llvm::any_of(frames, [&](FrameId frame) {
        return mentioningFrames.contains(frame);
      });
    }
    if (mentions)
      referencing.insert(record.test);
  }

  std::vector<std::string> names;
  for (const Test &test : module.getTests())
    if (referencing.contains(test.index))
      names.push_back(test.name.str());
  if (!names.empty()) {
    setDecision(record, FileDecision::Tests);
    record.attrs.set(diff::attr::kTests, Attribute::getStringList(names));
    record.attrs.set(
        diff::attr::kReason,
        Attribute::getString(
            llvm::formatv("referenced by {0} test(s)", names.size()).str()));
    return;
  }
  if (rule.fallbackTags.empty())
    return forceAll(record, "no test references '" + path +
                                "' and the rule at " + rule.origin +
                                " names no fallback-tags");
  for (const Test &test : module.getTests())
    if (llvm::any_of(test.tags, [&](const std::string &tag) {
          return llvm::is_contained(rule.fallbackTags, tag);
        }))
      names.push_back(test.name.str());
  std::string tags = llvm::join(rule.fallbackTags, "', '");
  if (names.empty())
    return forceAll(record, "no test references '" + path +
                                "' and no test carries the fallback tags '" +
                                tags + "'");
  setDecision(record, FileDecision::Tests);
  record.attrs.set(diff::attr::kTests, Attribute::getStringList(names));
  record.attrs.set(diff::attr::kTags,
                   Attribute::getStringList(rule.fallbackTags));
  record.attrs.set(
      diff::attr::kReason,
      Attribute::getString(("no test references '" + path +
                            "'; falling back to tests tagged '" + tags + "'")
                               .str()));
}

bool ChangeMapper::Impl::mapReadingTests(const FileDiff &file,
                                         const PolicyRule *rule,
                                         ChangedFile &record) {
  if (!readersByPath) {
    readersByPath.emplace();
    for (const EvidenceRecord &evidence : module.getEvidence()) {
      const Attribute *reads = evidence.attrs.lookup(evidence::attr::kReads);
      if (evidence.test == kNoTest || !reads || !reads->isList())
        continue;
      for (const Attribute &read : reads->getList())
        if (std::optional<StringRef> path = read.asString())
          (*readersByPath)[*path].insert(evidence.test);
    }
  }
  std::set<TestId> readers;
  for (StringRef path : {StringRef(file.newPath), StringRef(file.oldPath)})
    if (auto it = readersByPath->find(path);
        !path.empty() && it != readersByPath->end())
      readers.insert(it->second.begin(), it->second.end());
  if (readers.empty())
    return false;
  std::vector<std::string> names;
  for (TestId test : readers)
    names.push_back(module.getTest(test).name.str());
  record.attrs.set(diff::attr::kCategory,
                   Attribute::getString(rule ? rule->category : "unknown"));
  if (rule)
    record.attrs.set(diff::attr::kRule, Attribute::getString(rule->origin));
  setDecision(record, FileDecision::Reads);
  record.attrs.set(diff::attr::kReaders, Attribute::getStringList(names));
  record.attrs.set(
      diff::attr::kReason,
      Attribute::getString(
          llvm::formatv("read by {0} test(s) (evidence)", names.size()).str()));
  return true;
}

void ChangeMapper::Impl::mapScripts(const FileDiff &file,
                                    const PolicyRule &rule,
                                    ChangedFile &record) {
  // No test ran this script (mapReadingTests found none): it can still run
  // from a script a test ran, and from nothing else a test does (a Python
  // child records its own spawns).
  std::set<TestId> runners;
  std::vector<std::string> scripts;
  for (const EvidenceRecord &evidence : module.getEvidence()) {
    const Attribute *reads = evidence.attrs.lookup(evidence::attr::kReads);
    if (evidence.test == kNoTest || !reads || !reads->isList())
      continue;
    for (const Attribute &read : reads->getList()) {
      std::optional<StringRef> path = read.asString();
      if (!path || llvm::none_of(rule.globs, [&](const std::string &glob) {
            return matchPolicyGlob(glob, *path);
          }))
        continue;
      runners.insert(evidence.test);
      if (!llvm::is_contained(scripts, *path))
        scripts.push_back(path->str());
    }
  }
  if (runners.empty()) {
    setDecision(record, FileDecision::Ignore);
    record.attrs.set(diff::attr::kReason,
                     Attribute::getString("no test ran it or any other " +
                                          rule.category + " file"));
    return;
  }
  std::vector<std::string> names;
  for (TestId test : runners)
    names.push_back(module.getTest(test).name.str());
  llvm::sort(scripts);
  setDecision(record, FileDecision::Tests);
  record.attrs.set(diff::attr::kTests, Attribute::getStringList(names));
  record.attrs.set(
      diff::attr::kReason,
      Attribute::getString(
          llvm::formatv("no test ran '{0}'; {1} test(s) ran {2}, which may "
                        "run it",
                        file.getPath(), names.size(), llvm::join(scripts, ", "))
              .str()));
}

/// The name a native extension built from \p name is imported under, with
/// the suffixes build systems add (`fused_adam_cuda` -> `fused_adam`).
static StringRef getExtensionStem(StringRef name) {
  name = name.rsplit('.').second.empty() ? name : name.rsplit('.').second;
  for (StringRef suffix :
       {"_cuda", "_cpp", "_ext", "_kernels", "_kernel", "_C", "_cu", "_ops"})
    if (name.size() > suffix.size() && name.consume_back(suffix))
      break;
  return name;
}

void ChangeMapper::Impl::mapExtension(const FileDiff &file,
                                      const PolicyRule &rule,
                                      ChangedFile &record) {
  StringRef path = file.getPath();
  std::vector<std::string> modules;
  std::vector<std::string> extensions;
  for (const ExtensionDecl *ext : mapper.policy.findExtensions(path)) {
    extensions.push_back(ext->name);
    for (const std::string &name : ext->modules)
      if (!llvm::is_contained(modules, name))
        modules.push_back(name);
  }
  std::string how = "declared in the policy";
  if (modules.empty()) {
    // Found by name: an import of `<stem>` (or `<stem>_cuda`, ...) where the
    // source is `<stem>.cu` or lives in `<stem>/`.
    llvm::SmallVector<StringRef, 2> stems;
    StringRef fileName = llvm::sys::path::filename(path);
    stems.push_back(getExtensionStem(fileName.rsplit('.').first));
    StringRef dir =
        llvm::sys::path::filename(llvm::sys::path::parent_path(path));
    if (!dir.empty() && dir != "csrc" && dir != "src" && dir != "include")
      stems.push_back(getExtensionStem(dir));
    for (const StaticEdge &edge : module.getEdges()) {
      if (edge.kind != EdgeKind::Import ||
          !llvm::is_contained(stems, getExtensionStem(edge.name)))
        continue;
      EntityId from = edge.from;
      while (from != kNoEntity &&
             module.getEntity(from).kind != EntityKind::Module)
        from = module.getEntity(from).parent;
      if (from == kNoEntity)
        continue;
      std::string name = module.getEntity(from).symbol.str();
      if (!llvm::is_contained(modules, name))
        modules.push_back(name);
    }
    how = "found by the imports of '" + llvm::join(stems, "' or '") + "'";
  }
  if (modules.empty())
    return forceAll(record, "no Python module is known to load the extension "
                            "built from '" +
                                path +
                                "'; declare it under 'extensions:' in the "
                                "policy");

  for (const std::string &name : modules) {
    EntityId id = module.lookupEntity(name);
    if (id == kNoEntity) {
      mapper.diag.warning(file.loc, "module '" + name + "' loading '" + path +
                                        "' is not in the module");
      continue;
    }
    auto [it, inserted] = pendingByEntity.try_emplace(id, pending.size());
    if (!inserted)
      continue;
    PendingChange &change = pending.emplace_back();
    change.entity = id;
    change.entityKind = module.getEntity(id).kind;
    change.symbol = name;
    change.file = module.getFilePath(id).str();
    change.attrs.set(diff::attr::kVia, Attribute::getString(path));
    ++mapper.stats.changes;
  }
  setDecision(record, FileDecision::Modules);
  record.attrs.set(diff::attr::kModules, Attribute::getStringList(modules));
  if (!extensions.empty())
    record.attrs.set(diff::attr::kExtensions,
                     Attribute::getStringList(extensions));
  record.attrs.set(diff::attr::kReason,
                   Attribute::getString("native source of modules " + how));
}
