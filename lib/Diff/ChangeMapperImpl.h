//===- ChangeMapperImpl.h - ChangeMapper's shared internals ------*- C++
//-*-===//
//
// Private to lib/Diff: the file indexes, pending changes and the
// ChangeMapper::Impl class that the files of the mapping share
// (ChangeMapper.cpp: indexing and the driver; ChangeMapperPython.cpp: Python
// files; ChangeMapperFiles.cpp: other files; BodySimilarity.cpp: renames
// with edits; ModuleLevelChanges.cpp: module-level code).
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_LIB_DIFF_CHANGEMAPPERIMPL_H
#define FASTCI_LIB_DIFF_CHANGEMAPPERIMPL_H

#include "fastci/Diff/ChangeMapper.h"
#include "fastci/Diff/DiffAttrs.h"
#include "fastci/Diff/FileDecision.h"
#include "fastci/Diff/ImportGraph.h"
#include "fastci/Python/ModuleLevel.h"
#include "fastci/Evidence/EvidenceAttrs.h"
#include "fastci/Python/PythonAttrs.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

namespace fastci {
namespace detail {

using llvm::StringRef;

/// Records on a changed file what its policy decided.
inline void setDecision(ChangedFile &record, FileDecision decision) {
  record.attrs.set(diff::attr::kDecision,
                   Attribute::getString(stringifyFileDecision(decision)));
}

/// The entities of one version of one Python file, indexed by line and by
/// qualified name.
struct FileIndex {
  const Module *module = nullptr;
  EntityId moduleEntity = kNoEntity;
  /// Modules, classes and functions of the file.
  std::vector<EntityId> members;
  /// Member by qualified name (module-relative; "" is the module itself).
  llvm::StringMap<EntityId> byQualName;
  /// innermost[line] is the innermost entity claiming \c line.
  std::vector<EntityId> innermost;

  bool isKnown() const { return module != nullptr; }
  const Entity &get(EntityId id) const { return module->getEntity(id); }

  /// The innermost entity claiming \p line; the module for lines past every
  /// entity (a file's trailing blank lines).
  EntityId lookupLine(uint32_t line) const {
    if (line < innermost.size() && innermost[line] != kNoEntity)
      return innermost[line];
    return moduleEntity;
  }

  /// \p id's name relative to the module (`Cls.method`).
  StringRef getQualName(EntityId id) const {
    if (id == moduleEntity)
      return "";
    StringRef symbol = get(id).symbol;
    if (moduleEntity != kNoEntity) {
      StringRef prefix = get(moduleEntity).symbol;
      if (symbol.starts_with(prefix) && symbol.size() > prefix.size() &&
          symbol[prefix.size()] == '.')
        return symbol.drop_front(prefix.size() + 1);
    }
    return symbol;
  }
};

/// findDecoratorStart on \p text split into \p lines (line N is lines[N-1]).
std::optional<uint32_t>
findDecoratorStartInLines(llvm::ArrayRef<llvm::StringRef> lines,
                          uint32_t defLine, unsigned numDecorators);

/// Files of a module by path, built once per mapping run.
class ModuleFiles {
public:
  explicit ModuleFiles(const Module *module) : module(module) {
    if (!module)
      return;
    for (const Entity &entity : module->getEntities())
      if (entity.kind == EntityKind::File)
        fileByPath.try_emplace(entity.symbol, entity.id);
    for (const Entity &entity : module->getEntities())
      if (entity.kind != EntityKind::File) {
        EntityId file = module->getFileOf(entity.id);
        if (file != kNoEntity)
          membersByFile[file].push_back(entity.id);
      }
  }

  /// The index of \p path; unknown when the module has no such file.
  /// \p readSource, when given and set, supplies the file's text, which
  /// places the first line of every decorator exactly.
  FileIndex build(StringRef path,
                  const SourceReader *readSource = nullptr) const {
    FileIndex index;
    auto it = path.empty() ? fileByPath.end() : fileByPath.find(path);
    if (it == fileByPath.end())
      return index;
    index.module = module;
    auto members = membersByFile.find(it->second);
    if (members != membersByFile.end())
      index.members = members->second;

    // Where each member's claim starts: its decorators' first line.
    llvm::DenseMap<EntityId, uint32_t> claimStart;
    std::optional<std::string> text;
    llvm::SmallVector<StringRef> lines;
    for (EntityId id : index.members) {
      const Entity &entity = module->getEntity(id);
      uint32_t start = getClaimStart(entity);
      Attribute decorators = entity.attrs.get(python::attr::kDecorators);
      if (readSource && *readSource &&
          !entity.attrs.lookup(diff::attr::kDecoratorLine) &&
          decorators.isList() && !decorators.getList().empty()) {
        if (!text) {
          text = (*readSource)(path);
          if (text)
            StringRef(*text).split(lines, '\n');
        }
        if (text)
          if (std::optional<uint32_t> line = findDecoratorStartInLines(
                  lines, entity.range.startLine, decorators.getList().size()))
            start = *line;
      }
      claimStart[id] = start;
    }
    for (EntityId id : index.members)
      if (module->getEntity(id).kind == EntityKind::Module &&
          index.moduleEntity == kNoEntity)
        index.moduleEntity = id;
    for (EntityId id : index.members)
      index.byQualName.try_emplace(index.getQualName(id), id);

    // Outer entities first, so that inner ones overwrite the lines they
    // claim; ties keep insertion (source) order.
    std::vector<EntityId> order = index.members;
    auto extent = [&](EntityId id) {
      return uint64_t(module->getEntity(id).range.endLine) - claimStart[id];
    };
    std::stable_sort(order.begin(), order.end(), [&](EntityId a, EntityId b) {
      return extent(a) > extent(b);
    });
    for (EntityId id : order) {
      const Entity &entity = module->getEntity(id);
      if (entity.range.endLine == 0 || entity.kind == EntityKind::Module)
        continue;
      // A corrupt range must not make the table huge; no real file has
      // more lines than this.
      uint32_t last = std::min<uint32_t>(entity.range.endLine, 1u << 24);
      if (index.innermost.size() <= last)
        index.innermost.resize(last + 1, kNoEntity);
      for (uint32_t line = claimStart[id]; line <= last; ++line)
        index.innermost[line] = id;
    }
    return index;
  }

  /// The first line \p entity claims without its file's text: its first
  /// decorator's line when recorded (`decorator_line`), else one line per
  /// decorator above the `def`, else its own first line.
  static uint32_t getClaimStart(const Entity &entity) {
    uint32_t start = entity.range.startLine;
    if (std::optional<int64_t> line =
            entity.attrs.get(diff::attr::kDecoratorLine).asInt())
      if (*line > 0 && *line <= int64_t(start))
        return uint32_t(*line);
    Attribute decorators = entity.attrs.get(python::attr::kDecorators);
    if (decorators.isList() && decorators.getList().size() < start)
      return start - uint32_t(decorators.getList().size());
    return std::max<uint32_t>(start, 1);
  }

private:
  const Module *module;
  llvm::StringMap<EntityId> fileByPath;
  llvm::DenseMap<EntityId, std::vector<EntityId>> membersByFile;
};

/// A change being assembled before it is appended to the module.
struct PendingChange {
  ChangeKind kind = ChangeKind::Modified;
  /// The entity in the new module, or kNoEntity.
  EntityId entity = kNoEntity;
  /// The entity in the old module, for deletions named by it.
  EntityId oldEntity = kNoEntity;
  EntityKind entityKind = EntityKind::Function;
  std::string symbol, file;
  /// The path the old entity's file has after the diff (for deletions), to
  /// tell a rename within a file from a move across files.
  std::string fileAfter;
  /// The name relative to its module (`Cls.method`), and its parent's.
  std::string qualName, parentQualName;
  uint64_t hash = 0;
  /// Lines of the entity's own file version: added lines (new-file numbers)
  /// for entities that exist after the change, removed lines (old-file
  /// numbers) for deletions.
  std::vector<uint32_t> lines;
  /// The whole entity, for additions and deletions of entire entities.
  std::optional<LineRange> span;
  /// Lines removed from an entity that still exists (or from the old entity
  /// a moved one came from), in old-file numbers: `removed_lines`.
  std::vector<uint32_t> removedLines;
  std::optional<LineRange> removedSpan;
  AttrDict attrs;
  bool dropped = false;
};

/// The lines of one entity that a diff added (in new-file numbers) and
/// removed (in old-file numbers).
struct TouchedLines {
  std::vector<uint32_t> added, removed;
};
/// The entities of one file version that a diff touched, in diff order.
using TouchedEntities = llvm::MapVector<EntityId, TouchedLines>;

/// Why ChangeMapper::Impl::forEachChangedLine stopped early, if it did.
enum class VisitStop { None, Visitor, NoText };

/// The last component of \p qualName (`A.f` -> `f`).
StringRef getOwnName(StringRef qualName);
/// The qualified name of \p qualName's parent (`A.f` -> `A`, `f` -> ``).
StringRef getParentQualName(StringRef qualName);

/// The most (deleted, added) pairs of one file and kind compared for renames
/// with edits.
inline constexpr uint64_t kMaxComparedPairs = 4'000'000;
/// A body's distinct tokens with their counts, sorted by token.
using TokenCounts = std::vector<std::pair<StringRef, unsigned>>;

/// How alike two token multisets are (the weighted Jaccard index).
double getSimilarity(const TokenCounts &a, const TokenCounts &b);
/// The tokens of \p entity's lines in \p lines (line N is lines[N-1]), or
/// std::nullopt when the text does not have them.
std::optional<TokenCounts> getBodyTokens(const Entity &entity,
                                         llvm::ArrayRef<StringRef> lines,
                                         StringRef ownName);
/// Splits \p text into lines without their newlines (line N is
/// lines[N-1]).
void splitTextLines(StringRef text, std::vector<StringRef> &lines);

} // namespace detail

class ChangeMapper::Impl {
  using FileIndex = detail::FileIndex;
  using ModuleFiles = detail::ModuleFiles;
  using PendingChange = detail::PendingChange;
  using StringRef = llvm::StringRef;

public:
  Impl(ChangeMapper &mapper)
      : mapper(mapper), module(mapper.module), newFiles(&mapper.module),
        oldFiles(mapper.oldModule) {}

  LogicalResult map(const Patch &patch);

private:
  void mapPythonFile(const FileDiff &file, ChangedFile &record);
  /// Routes \p file (already mapped as Python) to the tests at or below its
  /// directory, or to every test for a file at the root.
  void mapDirectoryTests(const FileDiff &file, ChangedFile &record);
  /// A test manifest load-manifest read: the tests whose entries the change
  /// touches. False (nothing recorded) when the file is no manifest or the
  /// change touches more than entries.
  bool mapManifestEntries(const FileDiff &file, ChangedFile &record);
  /// For a conftest.py whose every change modifies function-scoped,
  /// non-autouse fixtures: why evidence alone selects for it.
  std::optional<std::string> getFixtureOnlyChange(const FileDiff &file);
  /// Calls \p visit(line, added, text, number) for every added and removed
  /// line of \p file, with the lines of its side's text (new for added, old
  /// for removed) and its 1-based number there. Stops when \p visit returns
  /// false (VisitStop::Visitor) or a side's text cannot be read
  /// (VisitStop::NoText).
  detail::VisitStop forEachChangedLine(
      const FileDiff &file,
      llvm::function_ref<bool(const DiffLine &, bool, llvm::ArrayRef<StringRef>,
                              uint32_t)>
          visit);
  /// An `all` rule: every test, unless the rule's `ignore-sections` cover
  /// every changed line of the file.
  void mapRunAll(const FileDiff &file, const PolicyRule &rule,
                 ChangedFile &record);
  void mapReferencingTests(const FileDiff &file, const PolicyRule &rule,
                           ChangedFile &record);
  void mapExtension(const FileDiff &file, const PolicyRule &rule,
                    ChangedFile &record);
  bool mapReadingTests(const FileDiff &file, const PolicyRule *rule,
                       ChangedFile &record);
  /// A `dependencies` rule: the tests whose evidence imported (or tried to
  /// import) a package of the distributions the changed lines name.
  void mapDependencies(const FileDiff &file, const PolicyRule &rule,
                       ChangedFile &record);
  /// A `scripts` rule for a script no test ran: the tests that ran another
  /// script the rule matches.
  void mapScripts(const FileDiff &file, const PolicyRule &rule,
                  ChangedFile &record);
  void forceAll(ChangedFile &record, const llvm::Twine &reason);
  PendingChange &addNew(ChangeKind kind, const FileIndex &index, EntityId id,
                        StringRef path);
  PendingChange &addOld(ChangeKind kind, const FileIndex &index, EntityId id,
                        StringRef oldPath, StringRef newPath);
  /// A pair of an old entity and its new self: (new entity, old symbol, old
  /// file).
  using MovePair = std::tuple<EntityId, std::string, std::string>;
  void pairMoves();
  void pairByHash(std::vector<MovePair> &pairs);
  void pairBySimilarity(std::vector<MovePair> &pairs);
  void pair(PendingChange &old, PendingChange &change, bool sameScope,
            std::vector<MovePair> &pairs);
  void moveUntouchedMembers(llvm::ArrayRef<MovePair> pairs);
  void classifyModuleLevelChanges();
  /// Whether every module and name \p imports (as written in
  /// \p moduleEntity) takes from the repository exists there: a misspelt
  /// one fails every importer's import, whoever reads the name.
  bool importsResolve(EntityId moduleEntity,
                      llvm::ArrayRef<std::string> imports);
  void checkNewImports(EntityId moduleEntity, llvm::ArrayRef<uint32_t> lines,
                       ModuleLevelEdit &edit);
  /// A file's text split into lines, read once for similarity.
  struct SourceText {
    std::optional<std::string> text;
    std::vector<StringRef> lines;
  };
  const SourceText &getNewText(StringRef path);
  const SourceText &getOldText(StringRef path);
  void emit();

  ChangeMapper &mapper;
  Module &module;
  ModuleFiles newFiles, oldFiles;
  std::vector<PendingChange> pending;
  /// Index into \c pending of the change already recorded for an entity.
  llvm::DenseMap<EntityId, size_t> pendingByEntity;
  std::vector<std::string> allReasons;
  /// The diff of each Python file by its old path, to rebuild old texts,
  /// and by its new path, for warnings.
  llvm::StringMap<const FileDiff *> diffByOldPath, diffByNewPath;
  /// Texts read for similarity, by path. StringMap keeps each value in
  /// place, so the lines stay valid as more texts are read.
  llvm::StringMap<SourceText> newTexts, oldTexts;
  /// (file after the diff, old qualified name) -> new qualified name of
  /// every entity renamed or moved within its file, so that the members of
  /// a renamed (and edited) class or function can pair too.
  std::map<std::pair<std::string, std::string>, std::string> renamedScopes;
  /// The head's static import graph, built for the first changed import.
  std::optional<ImportGraph> importGraph;
  /// Tests by the non-Python files their evidence read (`reads`).
  std::optional<llvm::StringMap<std::set<TestId>>> readersByPath;
};

} // namespace fastci

#endif // FASTCI_LIB_DIFF_CHANGEMAPPERIMPL_H
