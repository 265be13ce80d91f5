//===- ChangeMapperPython.cpp - Python files as changed entities
//-----------===//
//
// Each hunk line of a Python file is attributed to the innermost entity
// claiming it (decorators included); old and new hashes tell a real change
// from a cosmetic one (docs/Changes.md, Python files).
//
//===----------------------------------------------------------------------===//
#include "ChangeMapperImpl.h"
#include "fastci/Diff/DiffAttrs.h"
#include "fastci/Python/PythonAttrs.h"

using namespace fastci;
using namespace fastci::detail;
using llvm::StringRef;

/// A pending change of \p kind describing entity \p id of \p index, in
/// \p file before and \p fileAfter after the change.
static PendingChange describe(ChangeKind kind, const FileIndex &index,
                              EntityId id, StringRef file,
                              StringRef fileAfter) {
  const Entity &entity = index.get(id);
  PendingChange change;
  change.kind = kind;
  change.entityKind = entity.kind;
  change.symbol = entity.symbol.str();
  change.file = file.str();
  change.fileAfter = fileAfter.str();
  change.qualName = index.getQualName(id).str();
  change.parentQualName = getParentQualName(change.qualName).str();
  change.hash = entity.contentHash;
  return change;
}

PendingChange &ChangeMapper::Impl::addNew(ChangeKind kind,
                                          const FileIndex &index, EntityId id,
                                          StringRef path) {
  auto [it, inserted] = pendingByEntity.try_emplace(id, pending.size());
  if (!inserted)
    return pending[it->second];
  PendingChange &change =
      pending.emplace_back(describe(kind, index, id, path, path));
  change.entity = id;
  return change;
}

PendingChange &ChangeMapper::Impl::addOld(ChangeKind kind,
                                          const FileIndex &index, EntityId id,
                                          StringRef oldPath,
                                          StringRef newPath) {
  PendingChange &change =
      pending.emplace_back(describe(kind, index, id, oldPath, newPath));
  change.oldEntity = id;
  return change;
}

/// True when the hashes prove that \p a and \p b differ only cosmetically.
static bool isCosmetic(const Entity &a, const Entity &b) {
  return a.contentHash != 0 && a.contentHash == b.contentHash &&
         a.attrs.get(python::attr::kDecorators) ==
             b.attrs.get(python::attr::kDecorators);
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
    change.attrs.set(diff::attr::kReason,
                     Attribute::getString("file not in the module"));
    record.attrs.set(diff::attr::kInModule, Attribute::getBool(false));
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
      change.attrs.set(diff::attr::kMovedFrom, Attribute::getString(from));
    }
    record.attrs.set(diff::attr::kOldModule,
                     Attribute::getString(oldModuleName));
  }

  mapper.stats.changes += pending.size() - firstChange;
  record.attrs.set(diff::attr::kCategory, Attribute::getString("python"));
  setDecision(record, FileDecision::Python);
  std::string reason =
      llvm::formatv("{0} changed entities", pending.size() - firstChange);
  if (file.isModeChangeOnly())
    reason = "only the file mode changed";
  if (!oldIndex.isKnown() && file.status != FileStatus::Added &&
      file.status != FileStatus::Copied)
    reason += "; old version unknown, so every touched entity counts as "
              "modified";
  record.attrs.set(diff::attr::kReason, Attribute::getString(reason));
  if (newIndex.isKnown() && newIndex.moduleEntity != kNoEntity)
    record.attrs.set(
        diff::attr::kModule,
        Attribute::getString(newIndex.get(newIndex.moduleEntity).symbol));
}
