//===- ChangeMapper.cpp - A diff as changed entities and files ------------===//
//
// Mapping runs in three steps. First each touched Python file is indexed:
// for every line, the innermost entity that claims it (its range, plus its
// decorator lines). Then each hunk line is attributed: added lines to the
// new file's entities, removed lines to the old file's (or, when the old
// version is unknown, to the new entities around the point of removal).
// Finally the touched entities are classified by comparing old and new
// hashes, and additions and deletions with equal hashes are paired up as
// moves and renames across the whole diff; the ones left are paired within
// their file and scope when their bodies are similar (renamed and edited).
// Non-Python files go through the change policy. Records are appended in diff
// order, so output is deterministic.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/ChangeMapper.h"
#include "fastci/Diff/DiffAttrs.h"
#include "fastci/Diff/ImportGraph.h"
#include "fastci/Diff/ModuleLevel.h"
#include "fastci/Evidence/EvidenceAttrs.h"
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

using namespace fastci;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Indexing a module's files
//===----------------------------------------------------------------------===//

namespace {

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
findDecoratorStartInLines(llvm::ArrayRef<StringRef> lines, uint32_t defLine,
                          unsigned numDecorators) {
  if (defLine == 0 || defLine > lines.size() || numDecorators == 0)
    return std::nullopt;
  StringRef def = lines[defLine - 1];
  StringRef indent = def.take_front(def.find_first_not_of(" \t\f"));
  // A text that does not match the entity (a stale checkout) must not move
  // its claim: the definition's line must start one.
  StringRef keyword = def.drop_front(indent.size());
  if (!keyword.starts_with("def") && !keyword.starts_with("class") &&
      !keyword.starts_with("async"))
    return std::nullopt;
  // Decorators are statements of the definition's block, so each begins at
  // its indentation; lines of a decorator's arguments, comments and blank
  // lines between them do not start with `@` there.
  unsigned found = 0;
  for (uint32_t line = defLine - 1; line >= 1; --line) {
    StringRef text = lines[line - 1];
    if (text.starts_with(indent) &&
        text.drop_front(indent.size()).starts_with("@") &&
        ++found == numDecorators)
      return line;
  }
  return std::nullopt;
}

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
      Attribute decorators = entity.attrs.get("decorators");
      if (readSource && *readSource && !entity.attrs.lookup("decorator_line") &&
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
            entity.attrs.get("decorator_line").asInt())
      if (*line > 0 && *line <= int64_t(start))
        return uint32_t(*line);
    Attribute decorators = entity.attrs.get("decorators");
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

} // namespace

/// \p mode in octal, as git writes it (`100755`).
static std::string formatMode(uint32_t mode) {
  char digits[12];
  auto [end, ec] = std::to_chars(std::begin(digits), std::end(digits), mode, 8);
  return std::string(digits, end);
}

/// Compresses possibly unsorted, repeated lines into inclusive ranges.
static std::vector<LineRange> toRanges(std::vector<uint32_t> lines) {
  llvm::sort(lines);
  std::vector<LineRange> ranges;
  for (uint32_t line : lines) {
    if (!ranges.empty() && line <= ranges.back().last + 1) {
      ranges.back().last = std::max(ranges.back().last, line);
      continue;
    }
    ranges.push_back({line, line});
  }
  return ranges;
}

/// The last component of \p qualName (`A.f` -> `f`).
static StringRef getOwnName(StringRef qualName) {
  size_t dot = qualName.rfind('.');
  return dot == StringRef::npos ? qualName : qualName.drop_front(dot + 1);
}

/// The qualified name of \p qualName's parent (`A.f` -> `A`, `f` -> ``).
static StringRef getParentQualName(StringRef qualName) {
  size_t dot = qualName.rfind('.');
  return dot == StringRef::npos ? StringRef() : qualName.take_front(dot);
}

ModuleNamer::ModuleNamer(const Module &module) {
  // A source root is what precedes a known module's dotted path in its file
  // path (`src/` for `src/pkg/mod.py` holding `pkg.mod`).
  llvm::StringSet<> seen;
  for (const Entity &entity : module.getEntities()) {
    if (entity.kind != EntityKind::Module)
      continue;
    StringRef file = module.getFilePath(entity.id);
    std::string dotted = file.str();
    std::replace(dotted.begin(), dotted.end(), '/', '.');
    StringRef stem = StringRef(dotted).drop_back(
        StringRef(dotted).ends_with(".__init__.py") ? strlen(".__init__.py")
        : StringRef(dotted).ends_with(".py")        ? 3
                                                    : 0);
    if (!stem.ends_with(entity.symbol) || stem.size() == entity.symbol.size())
      continue;
    StringRef root = file.take_front(stem.size() - entity.symbol.size());
    if (root.ends_with("/") && seen.insert(root).second)
      roots.push_back(root.str());
  }
}

std::string ModuleNamer::getName(StringRef path) const {
  // The longest root the path lies under.
  size_t rootSize = 0;
  for (const std::string &root : roots)
    if (root.size() > rootSize && path.starts_with(root))
      rootSize = root.size();
  StringRef rel = path.drop_front(rootSize);
  if (!rel.consume_back("/__init__.py"))
    rel.consume_back(".py");
  std::string name = rel.str();
  std::replace(name.begin(), name.end(), '/', '.');
  return name;
}

std::string fastci::getModuleNameForPath(const Module &module, StringRef path) {
  return ModuleNamer(module).getName(path);
}

//===----------------------------------------------------------------------===//
// Body similarity
//===----------------------------------------------------------------------===//

/// The most (deleted, added) pairs of one file and kind compared for renames
/// with edits.
static constexpr uint64_t kMaxComparedPairs = 4'000'000;

/// A body's distinct tokens with their counts, sorted by token.
using TokenCounts = std::vector<std::pair<StringRef, unsigned>>;

/// Calls \p emit with each token of the Python text \p text: a run of
/// identifier characters (a name, keyword or number), a string literal with
/// its quotes, or one other character. Comments and whitespace are skipped.
/// An unterminated string runs to the end of its line (or of the text).
static void forEachPythonToken(StringRef text,
                               llvm::function_ref<void(StringRef)> emit) {
  auto isWordChar = [](char c) {
    return llvm::isAlnum(c) || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
  };
  size_t i = 0, size = text.size();
  while (i < size) {
    char c = text[i];
    if (llvm::isSpace(c) || c == '\\') {
      ++i;
    } else if (c == '#') {
      i = text.find('\n', i);
      if (i == StringRef::npos)
        i = size;
    } else if (c == '\'' || c == '"') {
      auto isTriple = [&](size_t at) {
        return at + 2 < size && text[at] == c && text[at + 1] == c &&
               text[at + 2] == c;
      };
      bool triple = isTriple(i);
      size_t quotes = triple ? 3 : 1;
      size_t j = i + quotes;
      while (j < size) {
        if (text[j] == '\\') {
          j += 2;
          continue;
        }
        if (triple ? isTriple(j) : text[j] == c) {
          j += quotes;
          break;
        }
        if (!triple && text[j] == '\n')
          break;
        ++j;
      }
      j = std::min(j, size);
      emit(text.slice(i, j));
      i = j;
    } else if (isWordChar(c)) {
      size_t j = i + 1;
      while (j < size && isWordChar(text[j]))
        ++j;
      emit(text.slice(i, j));
      i = j;
    } else {
      emit(text.substr(i, 1));
      ++i;
    }
  }
}

/// The tokens of \p body, each use of \p ownName counted as one placeholder
/// so that renaming a definition (and its recursive calls) changes nothing.
/// The counts point into \p body.
static TokenCounts countTokens(StringRef body, StringRef ownName) {
  static constexpr StringRef kOwnName("\x01own-name");
  std::vector<StringRef> tokens;
  forEachPythonToken(body, [&](StringRef token) {
    tokens.push_back(!ownName.empty() && token == ownName ? kOwnName : token);
  });
  llvm::sort(tokens);
  TokenCounts counts;
  for (StringRef token : tokens) {
    if (!counts.empty() && counts.back().first == token)
      ++counts.back().second;
    else
      counts.emplace_back(token, 1);
  }
  return counts;
}

/// The weighted Jaccard index of two token multisets (0 when both are
/// empty): what they share over what either has.
static double getSimilarity(const TokenCounts &a, const TokenCounts &b) {
  uint64_t common = 0, all = 0;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
      all += a[i++].second;
    } else if (i == a.size() || b[j].first < a[i].first) {
      all += b[j++].second;
    } else {
      common += std::min(a[i].second, b[j].second);
      all += std::max(a[i].second, b[j].second);
      ++i;
      ++j;
    }
  }
  return all == 0 ? 0.0 : double(common) / double(all);
}

double fastci::getBodySimilarity(StringRef oldBody, StringRef oldName,
                                 StringRef newBody, StringRef newName) {
  return getSimilarity(countTokens(oldBody, oldName),
                       countTokens(newBody, newName));
}

/// The tokens of \p entity's lines in \p lines (line N is lines[N-1]), or
/// std::nullopt when the text does not have them.
static std::optional<TokenCounts> getBodyTokens(const Entity &entity,
                                                llvm::ArrayRef<StringRef> lines,
                                                StringRef ownName) {
  uint32_t first = entity.range.startLine, last = entity.range.endLine;
  if (first == 0 || last < first || last > lines.size())
    return std::nullopt;
  // The lines are contiguous in their text.
  const char *begin = lines[first - 1].begin(), *end = lines[last - 1].end();
  return countTokens(StringRef(begin, end - begin), ownName);
}

/// Splits \p text into lines without their newlines (line N is
/// lines[N-1]).
static void splitTextLines(StringRef text, std::vector<StringRef> &lines) {
  llvm::SmallVector<StringRef> split;
  text.split(split, '\n');
  lines.assign(split.begin(), split.end());
}

//===----------------------------------------------------------------------===//
// The mapping
//===----------------------------------------------------------------------===//

class ChangeMapper::Impl {
public:
  Impl(ChangeMapper &mapper)
      : mapper(mapper), module(mapper.module), newFiles(&mapper.module),
        oldFiles(mapper.oldModule) {}

  LogicalResult map(const Patch &patch);

private:
  void mapPythonFile(const FileDiff &file, ChangedFile &record);
  void mapReferencingTests(const FileDiff &file, const PolicyRule &rule,
                           ChangedFile &record);
  void mapExtension(const FileDiff &file, const PolicyRule &rule,
                    ChangedFile &record);
  bool mapReadingTests(const FileDiff &file, const PolicyRule *rule,
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

PendingChange &ChangeMapper::Impl::addNew(ChangeKind kind,
                                          const FileIndex &index, EntityId id,
                                          StringRef path) {
  auto [it, inserted] = pendingByEntity.try_emplace(id, pending.size());
  if (!inserted)
    return pending[it->second];
  const Entity &entity = index.get(id);
  PendingChange &change = pending.emplace_back();
  change.kind = kind;
  change.entity = id;
  change.entityKind = entity.kind;
  change.symbol = entity.symbol.str();
  change.file = path.str();
  change.fileAfter = path.str();
  change.qualName = index.getQualName(id).str();
  change.parentQualName = getParentQualName(change.qualName).str();
  change.hash = entity.contentHash;
  return change;
}

PendingChange &ChangeMapper::Impl::addOld(ChangeKind kind,
                                          const FileIndex &index, EntityId id,
                                          StringRef oldPath,
                                          StringRef newPath) {
  const Entity &entity = index.get(id);
  PendingChange &change = pending.emplace_back();
  change.kind = kind;
  change.oldEntity = id;
  change.entityKind = entity.kind;
  change.symbol = entity.symbol.str();
  change.file = oldPath.str();
  change.fileAfter = newPath.str();
  change.qualName = index.getQualName(id).str();
  change.parentQualName = getParentQualName(change.qualName).str();
  change.hash = entity.contentHash;
  return change;
}

/// True when the hashes prove that \p a and \p b differ only cosmetically.
static bool isCosmetic(const Entity &a, const Entity &b) {
  return a.contentHash != 0 && a.contentHash == b.contentHash &&
         a.attrs.get("decorators") == b.attrs.get("decorators");
}

void ChangeMapper::Impl::mapPythonFile(const FileDiff &file,
                                       ChangedFile &record) {
  ++mapper.stats.pythonFiles;
  size_t firstChange = pending.size();
  // Only hunks need decorators placed; whole added files do not.
  bool wholeFile =
      file.status == FileStatus::Added || file.status == FileStatus::Copied;
  FileIndex newIndex =
      newFiles.build(file.newPath, wholeFile ? nullptr : &mapper.readNewSource);
  FileIndex oldIndex = oldFiles.build(file.oldPath);
  StringRef newPath = file.newPath, oldPath = file.oldPath;

  if (!newPath.empty() && !newIndex.isKnown()) {
    // Not parsed into the module (a new file, or one the parser skipped):
    // record it as added rather than dropping it.
    if (file.status != FileStatus::Added && file.status != FileStatus::Copied)
      mapper.diag.warning(file.loc, "'" + newPath +
                                        "' is not in the module; treating it "
                                        "as an added file");
    PendingChange &change = pending.emplace_back();
    change.kind = ChangeKind::Added;
    change.entityKind = EntityKind::Module;
    change.symbol = mapper.namer.getName(newPath);
    change.file = change.fileAfter = newPath.str();
    change.attrs.set("reason", Attribute::getString("file not in the module"));
    record.attrs.set("in_module", Attribute::getBool(false));
  }

  std::string oldModuleName =
      oldIndex.isKnown() && oldIndex.moduleEntity != kNoEntity
          ? oldIndex.get(oldIndex.moduleEntity).symbol.str()
          : (oldPath.empty() ? std::string() : mapper.namer.getName(oldPath));

  if (file.status == FileStatus::Deleted) {
    if (oldIndex.isKnown()) {
      for (EntityId id : oldIndex.members) {
        const Entity &entity = oldIndex.get(id);
        addOld(ChangeKind::Deleted, oldIndex, id, oldPath, "").span =
            LineRange{entity.range.startLine, entity.range.endLine};
      }
    } else {
      PendingChange &change = pending.emplace_back();
      change.kind = ChangeKind::Deleted;
      change.entityKind = EntityKind::Module;
      change.symbol = oldModuleName;
      change.file = oldPath.str();
    }
  } else if (newIndex.isKnown() && (file.status == FileStatus::Added ||
                                    file.status == FileStatus::Copied)) {
    for (EntityId id : newIndex.members) {
      const Entity &entity = newIndex.get(id);
      addNew(ChangeKind::Added, newIndex, id, newPath).span =
          LineRange{entity.range.startLine, entity.range.endLine};
    }
  } else if (newIndex.isKnown()) {
    // Attribute each hunk line to the innermost entity claiming it: added
    // lines to the new file's entities, removed ones to the old file's.
    TouchedEntities touchedNew, touchedOld;
    // kNoEntity (a line no entity claims, in a file without a module
    // entity) is also DenseMap's empty key, so it must never be inserted.
    // Blank lines between definitions belong to their module or class but
    // cannot change it; counting them would mark a module whenever a
    // function is added to it.
    auto touch = [](TouchedEntities &touched, const FileIndex &index,
                    const DiffLine &line, uint32_t at) {
      EntityId id = index.lookupLine(at);
      if (id == kNoEntity)
        return;
      if (line.text.trim().empty() &&
          index.get(id).kind != EntityKind::Function)
        return;
      if (line.kind == '+')
        touched[id].added.push_back(line.newLine);
      else
        touched[id].removed.push_back(line.oldLine);
    };
    for (const Hunk &hunk : file.hunks) {
      uint32_t nextNew = hunk.newCount ? hunk.newStart : hunk.newStart + 1;
      for (const DiffLine &line : hunk.lines) {
        if (line.kind != '-') {
          nextNew = line.newLine + 1;
          if (line.kind == '+')
            touch(touchedNew, newIndex, line, line.newLine);
          continue;
        }
        if (oldIndex.isKnown()) {
          touch(touchedOld, oldIndex, line, line.oldLine);
          continue;
        }
        // The old file is unknown: the removal happened between new lines
        // nextNew-1 and nextNew, so both neighbours may have lost code.
        for (uint32_t neighbour : {nextNew - 1, nextNew})
          if (neighbour >= 1)
            touch(touchedNew, newIndex, line, neighbour);
      }
    }

    // Removed code of an entity that still exists changes that entity;
    // removed code of one that is gone deletes it (or moved it).
    for (auto &[oldId, lines] : touchedOld) {
      auto counterpart = newIndex.byQualName.find(oldIndex.getQualName(oldId));
      if (counterpart != newIndex.byQualName.end()) {
        llvm::append_range(touchedNew[counterpart->second].removed,
                           lines.removed);
        continue;
      }
      addOld(ChangeKind::Deleted, oldIndex, oldId, oldPath, newPath).lines =
          std::move(lines.removed);
    }

    for (auto &[newId, lines] : touchedNew) {
      const Entity &entity = newIndex.get(newId);
      ChangeKind kind = ChangeKind::Modified;
      if (oldIndex.isKnown()) {
        auto counterpart =
            oldIndex.byQualName.find(newIndex.getQualName(newId));
        if (counterpart == oldIndex.byQualName.end())
          kind = ChangeKind::Added;
        else if (isCosmetic(entity, oldIndex.get(counterpart->second)))
          kind = ChangeKind::Cosmetic;
      } else if (entity.kind != EntityKind::Module && lines.removed.empty() &&
                 llvm::count_if(lines.added, [&](uint32_t line) {
                   return line >= entity.range.startLine &&
                          line <= entity.range.endLine;
                 }) == entity.range.endLine - entity.range.startLine + 1) {
        // Without the old file, an entity all of whose lines were added
        // (each hunk line is attributed once) and none removed is new.
        kind = ChangeKind::Added;
      }
      PendingChange &change = addNew(kind, newIndex, newId, newPath);
      change.lines = std::move(lines.added);
      change.removedLines = std::move(lines.removed);
    }
  }

  // A renamed file renames its module and moves everything in it.
  if (file.status == FileStatus::Renamed && newIndex.isKnown()) {
    for (EntityId id : newIndex.members) {
      bool isModule = id == newIndex.moduleEntity;
      PendingChange &change =
          addNew(isModule ? ChangeKind::Renamed : ChangeKind::Moved, newIndex,
                 id, newPath);
      // An entity the old file did not have under this name came from
      // elsewhere, if anywhere; pairMoves names it.
      if (change.kind == ChangeKind::Added)
        continue;
      StringRef qualName = newIndex.getQualName(id);
      std::string from =
          isModule ? oldModuleName : oldModuleName + "." + qualName.str();
      change.attrs.set("moved_from", Attribute::getString(from));
    }
    record.attrs.set("old_module", Attribute::getString(oldModuleName));
  }

  mapper.stats.changes += pending.size() - firstChange;
  record.attrs.set("category", Attribute::getString("python"));
  record.attrs.set("decision", Attribute::getString("python"));
  std::string reason =
      llvm::formatv("{0} changed entities", pending.size() - firstChange);
  if (file.isModeChangeOnly())
    reason = "only the file mode changed";
  if (!oldIndex.isKnown() && file.status != FileStatus::Added &&
      file.status != FileStatus::Copied)
    reason += "; old version unknown, so every touched entity counts as "
              "modified";
  record.attrs.set("reason", Attribute::getString(reason));
  if (newIndex.isKnown() && newIndex.moduleEntity != kNoEntity)
    record.attrs.set("module", Attribute::getString(
                                   newIndex.get(newIndex.moduleEntity).symbol));
}

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
  record.attrs.set("decision", Attribute::getString("all"));
  record.attrs.set("reason", Attribute::getString(text));
  allReasons.push_back((record.path + ": " + text).str());
  ++mapper.stats.filesForcingAll;
}

void ChangeMapper::Impl::mapReferencingTests(const FileDiff &file,
                                             const PolicyRule &rule,
                                             ChangedFile &record) {
  StringRef path = file.getPath();
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
    record.attrs.set("decision", Attribute::getString("tests"));
    record.attrs.set("tests", Attribute::getStringList(names));
    record.attrs.set(
        "reason",
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
  record.attrs.set("decision", Attribute::getString("tests"));
  record.attrs.set("tests", Attribute::getStringList(names));
  record.attrs.set("tags", Attribute::getStringList(rule.fallbackTags));
  record.attrs.set(
      "reason",
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
  record.attrs.set("category",
                   Attribute::getString(rule ? rule->category : "unknown"));
  if (rule)
    record.attrs.set("rule", Attribute::getString(rule->origin));
  record.attrs.set("decision", Attribute::getString("reads"));
  record.attrs.set(diff::attr::kReaders, Attribute::getStringList(names));
  record.attrs.set(
      "reason",
      Attribute::getString(
          llvm::formatv("read by {0} test(s) (evidence)", names.size()).str()));
  return true;
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
    change.attrs.set("via", Attribute::getString(path));
    ++mapper.stats.changes;
  }
  record.attrs.set("decision", Attribute::getString("modules"));
  record.attrs.set("modules", Attribute::getStringList(modules));
  if (!extensions.empty())
    record.attrs.set("extensions", Attribute::getStringList(extensions));
  record.attrs.set("reason",
                   Attribute::getString("native source of modules " + how));
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

void ChangeMapper::Impl::pairMoves() {
  std::vector<MovePair> pairs;
  pairByHash(pairs);
  pairBySimilarity(pairs);
  moveUntouchedMembers(pairs);
}

void ChangeMapper::Impl::pair(PendingChange &old, PendingChange &change,
                              bool sameScope, std::vector<MovePair> &pairs) {
  change.kind = sameScope ? ChangeKind::Renamed : ChangeKind::Moved;
  change.attrs.set("moved_from", Attribute::getString(old.symbol));
  if (old.file != change.file)
    change.attrs.set("moved_from_file", Attribute::getString(old.file));
  // What the old entity lost is what the moved one's old self lost.
  llvm::append_range(change.removedLines, old.lines);
  change.removedSpan = old.span;
  old.dropped = true;
  ++mapper.stats.moves;
  if (old.fileAfter == change.file && !old.qualName.empty())
    renamedScopes[{change.file, old.qualName}] = change.qualName;
  if (change.entity != kNoEntity)
    pairs.emplace_back(change.entity, old.symbol, old.file);
}

void ChangeMapper::Impl::pairByHash(std::vector<MovePair> &pairs) {
  // Deleted bodies by (hash, kind); an added body with the same hash is the
  // same code under a new name or in a new place.
  llvm::DenseMap<std::pair<uint64_t, unsigned>, std::vector<size_t>> deleted;
  for (size_t i = 0; i < pending.size(); ++i)
    if (pending[i].kind == ChangeKind::Deleted && pending[i].hash != 0 &&
        pending[i].entityKind != EntityKind::Module)
      deleted[{pending[i].hash, unsigned(pending[i].entityKind)}].push_back(i);
  if (deleted.empty())
    return;
  for (PendingChange &change : pending) {
    if (change.kind != ChangeKind::Added || change.hash == 0)
      continue;
    auto it = deleted.find({change.hash, unsigned(change.entityKind)});
    if (it == deleted.end() || it->second.empty())
      continue;
    PendingChange &old = pending[it->second.front()];
    it->second.erase(it->second.begin());
    pair(old, change,
         old.fileAfter == change.file &&
             old.parentQualName == change.parentQualName,
         pairs);
  }
}

const ChangeMapper::Impl::SourceText &
ChangeMapper::Impl::getNewText(StringRef path) {
  auto [it, inserted] = newTexts.try_emplace(path);
  SourceText &source = it->second;
  if (!inserted || !mapper.readNewSource)
    return source;
  source.text = mapper.readNewSource(path);
  if (source.text)
    splitTextLines(*source.text, source.lines);
  return source;
}

const ChangeMapper::Impl::SourceText &
ChangeMapper::Impl::getOldText(StringRef path) {
  auto [it, inserted] = oldTexts.try_emplace(path);
  SourceText &source = it->second;
  if (!inserted)
    return source;
  if (mapper.readOldSource)
    source.text = mapper.readOldSource(path);
  auto file = diffByOldPath.find(path);
  if (!source.text && file != diffByOldPath.end()) {
    // As mark-changed does for the old module: the new text with the diff
    // reversed (exact when it is the head's), else what the diff shows.
    if (!file->second->newPath.empty())
      if (const SourceText &newText = getNewText(file->second->newPath);
          newText.text)
        source.text = reconstructOldFile(*file->second, *newText.text);
    if (!source.text)
      source.text = reconstructOldFileFromDiff(*file->second);
  }
  if (source.text)
    splitTextLines(*source.text, source.lines);
  return source;
}

void ChangeMapper::Impl::pairBySimilarity(std::vector<MovePair> &pairs) {
  double threshold = mapper.renameSimilarity;
  if (threshold <= 0 || !mapper.oldModule)
    return;
  // Candidates left unpaired by hash, grouped by the file they end up in
  // and their kind: only those can be one entity renamed in place.
  std::map<std::pair<std::string, unsigned>,
           std::pair<std::vector<size_t>, std::vector<size_t>>>
      groups;
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingChange &change = pending[i];
    if (change.dropped || change.entityKind == EntityKind::Module)
      continue;
    if (change.kind == ChangeKind::Deleted && change.oldEntity != kNoEntity &&
        !change.fileAfter.empty())
      groups[{change.fileAfter, unsigned(change.entityKind)}].first.push_back(
          i);
    else if (change.kind == ChangeKind::Added && change.entity != kNoEntity)
      groups[{change.file, unsigned(change.entityKind)}].second.push_back(i);
  }

  struct Candidate {
    double similarity;
    size_t added, deleted;
  };
  /// One group's bodies, each tokenized once, and its pairs' similarities,
  /// each computed once (NaN: not yet), so that later rounds cost little.
  struct GroupState {
    StringRef file;
    llvm::ArrayRef<size_t> deleted, added;
    std::vector<std::optional<TokenCounts>> oldTokens, newTokens;
    std::vector<double> similarities;
  };
  std::vector<GroupState> states;
  for (auto &[key, group] : groups) {
    auto &[deleted, added] = group;
    if (deleted.empty() || added.empty())
      continue;
    // Comparing is quadratic; past this many pairs (about 1.5 s when all
    // are similar) the group keeps the fail-safe deletions and additions.
    if (uint64_t(deleted.size()) * added.size() > kMaxComparedPairs) {
      auto file = diffByNewPath.find(key.first);
      mapper.diag.warning(
          file == diffByNewPath.end() ? llvm::SMLoc() : file->second->loc,
          llvm::formatv("'{0}': {1} deleted and {2} added entities of kind "
                        "'{3}' are too many to compare for renames with "
                        "edits (over {4} pairs); they stay deleted and added",
                        key.first, deleted.size(), added.size(),
                        stringifyEntityKind(EntityKind(key.second)),
                        kMaxComparedPairs)
              .str());
      continue;
    }
    GroupState &state = states.emplace_back();
    state.file = key.first;
    state.deleted = deleted;
    state.added = added;
    for (size_t d : deleted)
      state.oldTokens.push_back(getBodyTokens(
          mapper.oldModule->getEntity(pending[d].oldEntity),
          getOldText(pending[d].file).lines, getOwnName(pending[d].qualName)));
    for (size_t a : added)
      state.newTokens.push_back(getBodyTokens(
          module.getEntity(pending[a].entity),
          getNewText(pending[a].file).lines, getOwnName(pending[a].qualName)));
    state.similarities.assign(deleted.size() * added.size(),
                              std::numeric_limits<double>::quiet_NaN());
  }

  // Pairing a scope lets its members pair, whatever their kind (the methods
  // of a class, a class nested in a function): repeat until nothing pairs.
  for (bool progress = !states.empty(); progress;) {
    progress = false;
    for (GroupState &state : states) {
      std::vector<Candidate> candidates;
      for (size_t di = 0; di < state.deleted.size(); ++di) {
        size_t d = state.deleted[di];
        const PendingChange &old = pending[d];
        if (old.dropped || !state.oldTokens[di])
          continue;
        auto scope = renamedScopes.find({state.file.str(), old.parentQualName});
        for (size_t ai = 0; ai < state.added.size(); ++ai) {
          size_t a = state.added[ai];
          const PendingChange &change = pending[a];
          if (change.kind != ChangeKind::Added || !state.newTokens[ai])
            continue;
          if (old.parentQualName != change.parentQualName &&
              (scope == renamedScopes.end() ||
               scope->second != change.parentQualName))
            continue;
          double &similarity = state.similarities[di * state.added.size() + ai];
          if (std::isnan(similarity))
            similarity =
                getSimilarity(*state.oldTokens[di], *state.newTokens[ai]);
          if (similarity >= threshold)
            candidates.push_back({similarity, a, d});
        }
      }
      // Best first; ties in diff order, so the result is deterministic.
      llvm::sort(candidates, [](const Candidate &x, const Candidate &y) {
        if (x.similarity != y.similarity)
          return x.similarity > y.similarity;
        if (x.added != y.added)
          return x.added < y.added;
        return x.deleted < y.deleted;
      });
      for (const Candidate &candidate : candidates) {
        PendingChange &old = pending[candidate.deleted];
        PendingChange &change = pending[candidate.added];
        if (old.dropped || change.kind != ChangeKind::Added)
          continue;
        pair(old, change, old.parentQualName == change.parentQualName, pairs);
        change.attrs.set("modified", Attribute::getBool(true));
        change.attrs.set("similarity", Attribute::getInt(int64_t(
                                           candidate.similarity * 100 + 0.5)));
        ++mapper.stats.editedMoves;
        progress = true;
      }
    }
  }
}

void ChangeMapper::Impl::moveUntouchedMembers(llvm::ArrayRef<MovePair> pairs) {
  if (pairs.empty())
    return;
  // A class renamed in place changes only its header line, yet every member
  // now has a new symbol (`Old.m` is `New.m`): record the members the diff
  // did not touch as moved, so that tests can still be found by the old
  // names. The same holds for the nested functions of a renamed function.
  std::vector<std::vector<EntityId>> children(module.getNumEntities());
  for (const Entity &entity : module.getEntities())
    if (entity.parent < module.getNumEntities() && entity.parent != entity.id &&
        entity.kind != EntityKind::File)
      children[entity.parent].push_back(entity.id);
  for (const auto &[newId, oldSymbol, oldFile] : pairs) {
    StringRef newSymbol = module.getEntity(newId).symbol;
    std::vector<EntityId> worklist(children[newId].rbegin(),
                                   children[newId].rend());
    while (!worklist.empty()) {
      EntityId id = worklist.back();
      worklist.pop_back();
      const Entity &member = module.getEntity(id);
      worklist.insert(worklist.end(), children[id].rbegin(),
                      children[id].rend());
      if (pendingByEntity.count(id) || !member.symbol.starts_with(newSymbol))
        continue;
      pendingByEntity.try_emplace(id, pending.size());
      PendingChange &change = pending.emplace_back();
      change.kind = ChangeKind::Moved;
      change.entity = id;
      change.entityKind = member.kind;
      change.symbol = member.symbol.str();
      change.file = change.fileAfter = module.getFilePath(id).str();
      change.hash = member.contentHash;
      change.attrs.set(
          "moved_from",
          Attribute::getString(
              oldSymbol + member.symbol.drop_front(newSymbol.size()).str()));
      if (oldFile != change.file)
        change.attrs.set("moved_from_file", Attribute::getString(oldFile));
      ++mapper.stats.changes;
    }
  }
}

//===----------------------------------------------------------------------===//
// Module-level code
//===----------------------------------------------------------------------===//

/// The absolute name of \p written (`.utils`, `..pkg.x`, `os`) imported in
/// module \p moduleName (a package when \p isPackage).
static std::string resolveImport(StringRef written, StringRef moduleName,
                                 bool isPackage) {
  size_t level = 0;
  while (level < written.size() && written[level] == '.')
    ++level;
  if (!level)
    return written.str();
  StringRef package = moduleName;
  if (!isPackage)
    package = package.contains('.') ? package.rsplit('.').first : "";
  for (size_t i = 1; i < level; ++i)
    package = package.contains('.') ? package.rsplit('.').first : "";
  StringRef rest = written.drop_front(level);
  if (package.empty())
    return rest.str();
  return rest.empty() ? package.str() : (package + "." + rest).str();
}

void ChangeMapper::Impl::checkNewImports(EntityId moduleEntity,
                                         llvm::ArrayRef<uint32_t> lines,
                                         ModuleLevelEdit &edit) {
  // An import binds names, but it also runs the body of a module the
  // process had not imported yet. That is an effect when such a body (or
  // one it imports in turn) has effects of its own: code that was never
  // part of these processes now runs in them.
  if (edit.imports.empty())
    return;
  if (!importGraph)
    importGraph.emplace(module);
  const Entity &self = module.getEntity(moduleEntity);
  StringRef path = module.getFilePath(moduleEntity);
  bool isPackage = llvm::sys::path::filename(path) == "__init__.py";
  // The packages above the module run before it in every importer; what
  // they import (not through this module) is loaded already.
  llvm::SmallVector<EntityId, 4> parents;
  for (StringRef name = self.symbol; name.contains('.');) {
    name = name.rsplit('.').first;
    if (EntityId id = module.lookupEntity(name);
        id != kNoEntity && module.getEntity(id).kind == EntityKind::Module)
      parents.push_back(id);
  }
  // So is what the module's own unchanged imports load.
  llvm::SmallVector<EntityId, 8> roots(parents.begin(), parents.end());
  for (const StaticEdge &edge : module.getEdges()) {
    if (edge.kind != EdgeKind::Import || llvm::is_contained(lines, edge.line) ||
        (edge.from != moduleEntity &&
         !(edge.from < module.getNumEntities() &&
           module.getEntity(edge.from).kind == EntityKind::Class &&
           importGraph->getModuleOf(edge.from) == moduleEntity)))
      continue;
    EntityId target = edge.to != kNoEntity
                          ? importGraph->getModuleOf(edge.to)
                          : importGraph->lookupModule(edge.name);
    if (target != kNoEntity)
      roots.push_back(target);
  }
  llvm::DenseSet<EntityId> loaded = importGraph->getImportClosure(
      roots, moduleEntity, /*moduleLevelOnly=*/true);
  loaded.insert(moduleEntity);
  std::vector<std::pair<EntityId, std::string>> worklist;
  for (const std::string &written : edit.imports) {
    EntityId target = importGraph->lookupModule(
        resolveImport(written, self.symbol, isPackage));
    if (target != kNoEntity && !loaded.contains(target))
      worklist.emplace_back(target, written);
  }
  constexpr size_t kMaxModules = 64;
  size_t checked = 0;
  while (!worklist.empty()) {
    auto [target, via] = worklist.back();
    worklist.pop_back();
    if (!loaded.insert(target).second)
      continue;
    StringRef targetPath = module.getFilePath(target);
    const SourceText &text = getNewText(targetPath);
    if (++checked > kMaxModules || !text.text) {
      edit.effect = true;
      edit.effectStatement =
          checked > kMaxModules
              ? llvm::formatv("imports more than {0} modules no importer "
                              "loaded before",
                              kMaxModules)
                    .str()
              : "imports '" + via + "', whose text is not available";
      return;
    }
    ModuleLevelEdit body;
    std::vector<uint32_t> all(text.lines.size());
    std::iota(all.begin(), all.end(), 1u);
    classifyModuleLevel(*text.text, "", all, body);
    if (body.effect) {
      edit.effect = true;
      edit.effectStatement =
          ("imports " + module.getEntity(target).symbol + " (via '" + via +
           "'), whose body has effects: " + body.effectStatement)
              .str();
      return;
    }
    for (EntityId next :
         importGraph->getImportClosure({target}, kNoEntity, true))
      if (!loaded.contains(next))
        worklist.emplace_back(next, via);
  }
}

void ChangeMapper::Impl::classifyModuleLevelChanges() {
  for (PendingChange &change : pending) {
    if (change.dropped || change.kind == ChangeKind::Cosmetic ||
        change.kind == ChangeKind::Deleted)
      continue;
    bool scopeKind = change.entityKind == EntityKind::Module ||
                     change.entityKind == EntityKind::Class;
    if (change.kind == ChangeKind::Added && change.entity != kNoEntity &&
        change.entityKind != EntityKind::Module) {
      // A new definition runs its decorators at import: one that may
      // register the definition somewhere makes it reachable by code that
      // names no entity (registries, plugin tables).
      const Entity &entity = module.getEntity(change.entity);
      EntityId parent = entity.parent;
      bool atImport = true;
      for (EntityId at = parent;
           at != kNoEntity && at < module.getNumEntities();
           at = module.getEntity(at).parent) {
        EntityKind kind = module.getEntity(at).kind;
        if (kind == EntityKind::Module || kind == EntityKind::File)
          break;
        if (kind == EntityKind::Function) {
          atImport = false;
          break;
        }
      }
      std::vector<std::string> registering;
      if (Attribute decorators = entity.attrs.get("decorators");
          atImport && decorators.isList())
        for (const Attribute &name : decorators.getList())
          if (name.isString() && !isPureDecorator(name.getString()))
            registering.push_back(name.getString().str());
      if (!registering.empty())
        change.attrs.set(diff::attr::kRegisteredBy,
                         Attribute::getStringList(registering));
      if (change.entityKind != EntityKind::Class)
        continue;
    }
    if (!scopeKind || change.entity == kNoEntity)
      continue;
    // A renamed or moved class's old body is known under another name; it
    // keeps the whole-region rule.
    if (change.entityKind == EntityKind::Class &&
        (change.kind == ChangeKind::Renamed ||
         change.kind == ChangeKind::Moved))
      continue;

    ModuleLevelEdit edit;
    StringRef qualName = change.qualName;
    StringRef newPath = change.fileAfter.empty() ? StringRef(change.file)
                                                 : StringRef(change.fileAfter);
    bool complete = true;
    std::vector<uint32_t> added = change.lines;
    const SourceText &newText = getNewText(newPath);
    if (change.kind == ChangeKind::Added && change.span && newText.text)
      for (uint32_t line = change.span->first; line <= change.span->last;
           ++line)
        added.push_back(line);
    if (!added.empty()) {
      if (newText.text)
        classifyModuleLevel(*newText.text, qualName, added, edit);
      else
        complete = false;
    }
    if (!change.removedLines.empty()) {
      StringRef oldPath = newPath;
      if (auto it = diffByNewPath.find(newPath);
          it != diffByNewPath.end() && !it->second->oldPath.empty())
        oldPath = it->second->oldPath;
      const SourceText &oldText = getOldText(oldPath);
      if (oldText.text)
        classifyModuleLevel(*oldText.text, qualName, change.removedLines, edit);
      else
        complete = false;
    }
    // Without both texts, or with nothing found in them (a hash change no
    // statement explains), nothing is claimed: selection keeps its
    // whole-module rule for such a change.
    if (!complete || !edit.found)
      continue;
    edit.finish();
    if (!edit.effect && change.entityKind == EntityKind::Module)
      checkNewImports(change.entity, change.lines, edit);
    change.attrs.set(diff::attr::kModuleLevel,
                     Attribute::getString(edit.effect
                                              ? diff::attr::kEffect
                                              : diff::attr::kDefinition));
    change.attrs.set(diff::attr::kDefines,
                     Attribute::getStringList(edit.defines));
    if (edit.effect)
      change.attrs.set(diff::attr::kEffectStatement,
                       Attribute::getString(edit.effectStatement));
  }
}

void ChangeMapper::Impl::emit() {
  for (PendingChange &pendingChange : pending) {
    if (pendingChange.dropped)
      continue;
    Change &change =
        pendingChange.entity != kNoEntity
            ? module.addChange(pendingChange.kind, pendingChange.entity)
            : module.addChange(pendingChange.kind, pendingChange.symbol,
                               pendingChange.file);
    if (pendingChange.entity != kNoEntity)
      change.file = module.intern(pendingChange.file);
    change.lines = toRanges(std::move(pendingChange.lines));
    if (pendingChange.span)
      change.lines.insert(change.lines.begin(), *pendingChange.span);
    change.attrs = std::move(pendingChange.attrs);
    std::vector<LineRange> removed =
        toRanges(std::move(pendingChange.removedLines));
    if (pendingChange.removedSpan)
      removed.insert(removed.begin(), *pendingChange.removedSpan);
    if (!removed.empty()) {
      std::vector<std::string> texts;
      for (const LineRange &range : removed)
        texts.push_back(llvm::formatv("{0}:{1}", range.first, range.last));
      change.attrs.set("removed_lines", Attribute::getStringList(texts));
    }
    if (pendingChange.kind == ChangeKind::Cosmetic)
      ++mapper.stats.cosmetic;
  }
}

LogicalResult ChangeMapper::Impl::map(const Patch &patch) {
  const ChangePolicy &policy = mapper.policy;
  for (const FileDiff &file : patch.files) {
    ++mapper.stats.files;
    StringRef path = file.getPath();
    ChangedFile &record =
        module.addChangedFile(path, stringifyFileStatus(file.status));
    if (!file.oldPath.empty() && file.oldPath != path)
      record.attrs.set("old_path", Attribute::getString(file.oldPath));
    if (file.isBinary)
      record.attrs.set("binary", Attribute::getBool(true));
    if (file.oldMode && file.newMode && file.oldMode != file.newMode)
      record.attrs.set("mode",
                       Attribute::getString(formatMode(*file.oldMode) + " -> " +
                                            formatMode(*file.newMode)));

    const PolicyRule *rule = policy.match(path);
    // A file the evidence says tests read selects exactly those tests,
    // whatever the policy would do with a file nobody is known to read;
    // only Python code and the policy's explicit run-all rules (build and
    // dependency files) keep their own handling.
    if ((!rule || (rule->action != PolicyAction::Python &&
                   rule->action != PolicyAction::All)) &&
        mapReadingTests(file, rule, record))
      continue;
    if (!rule) {
      record.attrs.set("category", Attribute::getString("unknown"));
      forceAll(record, "no rule of policy '" + policy.getName() +
                           "' matches '" + path + "'");
      continue;
    }
    record.attrs.set("category", Attribute::getString(rule->category));
    record.attrs.set("rule", Attribute::getString(rule->origin));
    switch (rule->action) {
    case PolicyAction::Ignore:
      record.attrs.set("decision", Attribute::getString("ignore"));
      record.attrs.set("reason",
                       Attribute::getString("the policy ignores " +
                                            rule->category + " files"));
      break;
    case PolicyAction::Python:
      if (file.isBinary) {
        forceAll(record, "binary patch to a Python file");
        break;
      }
      if (!file.oldPath.empty())
        diffByOldPath.try_emplace(file.oldPath, &file);
      if (!file.newPath.empty())
        diffByNewPath.try_emplace(file.newPath, &file);
      mapPythonFile(file, record);
      record.attrs.set("category", Attribute::getString(rule->category));
      break;
    case PolicyAction::ReferencingTests:
      mapReferencingTests(file, *rule, record);
      break;
    case PolicyAction::Extension:
      mapExtension(file, *rule, record);
      break;
    case PolicyAction::All:
      forceAll(record, "the policy selects every test for " + rule->category +
                           " files");
      break;
    }
  }
  pairMoves();
  classifyModuleLevelChanges();
  emit();

  AttrDict &attrs = module.getAttrs();
  attrs.set("change_policy", Attribute::getString(policy.getName()));
  attrs.set("policy_all", Attribute::getBool(!allReasons.empty()));
  if (!allReasons.empty())
    attrs.set("policy_all_reasons", Attribute::getStringList(allReasons));
  return success();
}

ChangeMapper::ChangeMapper(Module &module, const ChangePolicy &policy,
                           DiagnosticEngine &diag, const Module *oldModule)
    : module(module), policy(policy), diag(diag), oldModule(oldModule),
      namer(module) {}

ChangeMapper::~ChangeMapper() = default;

std::optional<uint32_t> fastci::findDecoratorStart(StringRef text,
                                                   uint32_t defLine,
                                                   unsigned numDecorators) {
  llvm::SmallVector<StringRef> lines;
  text.split(lines, '\n');
  return findDecoratorStartInLines(lines, defLine, numDecorators);
}

LogicalResult ChangeMapper::map(const Patch &patch) {
  stats = ChangeMapperStats();
  return Impl(*this).map(patch);
}
