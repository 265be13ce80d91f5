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
// order, so output is deterministic. This file indexes files and drives the
// mapping; the steps live in ChangeMapperPython.cpp, ChangeMapperFiles.cpp,
// BodySimilarity.cpp and ModuleLevelChanges.cpp (ChangeMapperImpl.h).
//
//===----------------------------------------------------------------------===//
#include "ChangeMapperImpl.h"
#include "fastci/Diff/DiffAttrs.h"

using namespace fastci;
using namespace fastci::detail;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Indexing a module's files
//===----------------------------------------------------------------------===//

/// findDecoratorStart on \p text split into \p lines (line N is lines[N-1]).
std::optional<uint32_t>
detail::findDecoratorStartInLines(llvm::ArrayRef<StringRef> lines,
                                  uint32_t defLine, unsigned numDecorators) {
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
StringRef detail::getOwnName(StringRef qualName) {
  size_t dot = qualName.rfind('.');
  return dot == StringRef::npos ? qualName : qualName.drop_front(dot + 1);
}

/// The qualified name of \p qualName's parent (`A.f` -> `A`, `f` -> ``).
StringRef detail::getParentQualName(StringRef qualName) {
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
  change.attrs.set(diff::attr::kMovedFrom, Attribute::getString(old.symbol));
  if (old.file != change.file)
    change.attrs.set(diff::attr::kMovedFromFile,
                     Attribute::getString(old.file));
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
        change.attrs.set(diff::attr::kModified, Attribute::getBool(true));
        change.attrs.set(
            diff::attr::kSimilarity,
            Attribute::getInt(int64_t(candidate.similarity * 100 + 0.5)));
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
          diff::attr::kMovedFrom,
          Attribute::getString(
              oldSymbol + member.symbol.drop_front(newSymbol.size()).str()));
      if (oldFile != change.file)
        change.attrs.set(diff::attr::kMovedFromFile,
                         Attribute::getString(oldFile));
      ++mapper.stats.changes;
    }
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
      change.attrs.set(diff::attr::kRemovedLines,
                       Attribute::getStringList(texts));
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
      record.attrs.set(diff::attr::kOldPath,
                       Attribute::getString(file.oldPath));
    if (file.isBinary)
      record.attrs.set(diff::attr::kBinary, Attribute::getBool(true));
    if (file.oldMode && file.newMode && file.oldMode != file.newMode)
      record.attrs.set(diff::attr::kMode,
                       Attribute::getString(formatMode(*file.oldMode) + " -> " +
                                            formatMode(*file.newMode)));

    const PolicyRule *rule = policy.match(path);
    // A file the evidence says tests read selects exactly those tests,
    // whatever the policy would do with a file nobody is known to read;
    // only Python code and the policy's explicit run-all rules (build and
    // dependency files) keep their own handling.
    if ((!rule || (rule->action != PolicyAction::Python &&
                   rule->action != PolicyAction::All &&
                   rule->action != PolicyAction::DirectoryTests &&
                   rule->action != PolicyAction::Dependencies)) &&
        mapReadingTests(file, rule, record))
      continue;
    if (!rule) {
      record.attrs.set(diff::attr::kCategory, Attribute::getString("unknown"));
      forceAll(record, "no rule of policy '" + policy.getName() +
                           "' matches '" + path + "'");
      continue;
    }
    record.attrs.set(diff::attr::kCategory,
                     Attribute::getString(rule->category));
    record.attrs.set(diff::attr::kRule, Attribute::getString(rule->origin));
    switch (rule->action) {
    case PolicyAction::Ignore:
      setDecision(record, FileDecision::Ignore);
      record.attrs.set(diff::attr::kReason,
                       Attribute::getString("the policy ignores " +
                                            rule->category + " files"));
      break;
    case PolicyAction::Python:
    case PolicyAction::DirectoryTests:
      if (file.isBinary) {
        forceAll(record, "binary patch to a Python file");
        break;
      }
      if (!file.oldPath.empty())
        diffByOldPath.try_emplace(file.oldPath, &file);
      if (!file.newPath.empty())
        diffByNewPath.try_emplace(file.newPath, &file);
      mapPythonFile(file, record);
      record.attrs.set(diff::attr::kCategory,
                       Attribute::getString(rule->category));
      if (rule->action == PolicyAction::DirectoryTests)
        mapDirectoryTests(file, record);
      break;
    case PolicyAction::ReferencingTests:
      mapReferencingTests(file, *rule, record);
      break;
    case PolicyAction::Extension:
      mapExtension(file, *rule, record);
      break;
    case PolicyAction::All:
      mapRunAll(file, *rule, record);
      break;
    case PolicyAction::Dependencies:
      mapDependencies(file, *rule, record);
      break;
    case PolicyAction::Scripts:
      mapScripts(file, *rule, record);
      break;
    }
  }
  pairMoves();
  classifyModuleLevelChanges();
  emit();

  AttrDict &attrs = module.getAttrs();
  attrs.set(diff::attr::kChangePolicy, Attribute::getString(policy.getName()));
  attrs.set(diff::attr::kPolicyAll, Attribute::getBool(!allReasons.empty()));
  if (!allReasons.empty())
    attrs.set(diff::attr::kPolicyAllReasons,
              Attribute::getStringList(allReasons));
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
