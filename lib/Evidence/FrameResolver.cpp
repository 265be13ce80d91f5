//===- FrameResolver.cpp - Mapping sampled frames onto IR entities --------===//
//
// The line index sorts each file's entity ranges by start line (outermost
// first on ties) and links every range to the nearest range enclosing it, so
// the innermost entity at a line is found by a binary search followed by a
// short climb. Ranges of well-formed modules nest properly; for malformed
// ones the climb still terminates (links only point backwards) and yields
// some enclosing entity.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/FrameResolver.h"
#include "fastci/Python/PythonAttrs.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include <algorithm>

using namespace fastci;

//===----------------------------------------------------------------------===//
// LineIndex
//===----------------------------------------------------------------------===//

LineIndex::LineIndex(const Module &module) {
  for (const Entity &entity : module.getEntities()) {
    if (entity.kind == EntityKind::File) {
      files[entity.symbol].file = entity.id;
      continue;
    }
    EntityId file = module.getFileOf(entity.id);
    if (file == kNoEntity)
      continue;
    FileIntervals &intervals = files[module.getEntity(file).symbol];
    intervals.file = file;
    if (entity.kind == EntityKind::Module && intervals.module == kNoEntity)
      intervals.module = entity.id;
    const SourceRange &range = entity.range;
    if (range.startLine == 0 || range.endLine < range.startLine)
      continue;
    intervals.intervals.push_back(
        {range.startLine, range.endLine, entity.id, kNone});
  }

  for (auto &entry : files) {
    std::vector<Interval> &intervals = entry.second.intervals;
    llvm::sort(intervals, [](const Interval &lhs, const Interval &rhs) {
      if (lhs.startLine != rhs.startLine)
        return lhs.startLine < rhs.startLine;
      if (lhs.endLine != rhs.endLine)
        return lhs.endLine > rhs.endLine;
      return lhs.entity < rhs.entity;
    });
    // Sweep with the chain of currently open ranges: whatever on it still
    // contains this range's start encloses it.
    llvm::SmallVector<uint32_t, 16> open;
    for (uint32_t i = 0, e = intervals.size(); i != e; ++i) {
      Interval &interval = intervals[i];
      while (!open.empty() && intervals[open.back()].endLine < interval.endLine)
        open.pop_back();
      interval.enclosing = open.empty() ? kNone : open.back();
      open.push_back(i);
    }
  }
}

EntityId LineIndex::lookup(llvm::StringRef path, uint32_t line) const {
  auto it = files.find(path);
  if (it == files.end())
    return kNoEntity;
  const FileIntervals &file = it->second;
  const std::vector<Interval> &intervals = file.intervals;
  auto after = std::upper_bound(intervals.begin(), intervals.end(), line,
                                [](uint32_t line, const Interval &interval) {
                                  return line < interval.startLine;
                                });
  uint32_t i = after == intervals.begin()
                   ? kNone
                   : uint32_t(after - intervals.begin()) - 1;
  while (i != kNone && intervals[i].endLine < line)
    i = intervals[i].enclosing;
  if (line != 0 && i != kNone)
    return intervals[i].entity;
  return file.module != kNoEntity ? file.module : file.file;
}

//===----------------------------------------------------------------------===//
// Library leaves
//===----------------------------------------------------------------------===//

/// True for a standard library directory name such as `python3.11`.
static bool isPythonLibDir(llvm::StringRef component) {
  if (!component.consume_front("python"))
    return false;
  llvm::SmallVector<llvm::StringRef, 3> parts;
  component.split(parts, '.');
  return parts.size() == 2 && llvm::all_of(parts, [](llvm::StringRef part) {
           return !part.empty() && llvm::all_of(part, llvm::isDigit);
         });
}

std::string fastci::getLibraryLeafName(llvm::StringRef path,
                                       llvm::StringRef qualname) {
  if (path.starts_with("<") && path.ends_with(">")) {
    llvm::StringRef module = path;
    if (module.consume_front("<frozen "))
      module = module.drop_back();
    return (module + "." + qualname).str();
  }
  llvm::SmallVector<llvm::StringRef, 16> components;
  path.split(components, '/', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  if (components.empty())
    return (path + "." + qualname).str();
  // Below the innermost packages directory (virtualenvs nest in prefixes
  // that contain pythonX.Y too), else below the standard library's
  // directory; a relative path (py-spy's short names are relative to
  // sys.path) is a module path already; else just the file.
  size_t first = path.starts_with("/") ? components.size() - 1 : 0;
  auto isPackagesDir = [](llvm::StringRef component) {
    return component == "site-packages" || component == "dist-packages";
  };
  auto packages = llvm::find_if(llvm::reverse(components), isPackagesDir);
  auto stdlib = llvm::find_if(llvm::reverse(components), isPythonLibDir);
  if (packages != components.rend())
    first = components.rend() - packages;
  else if (stdlib != components.rend())
    first = components.rend() - stdlib;
  first = std::min(first, components.size() - 1);

  std::string dotted;
  for (size_t i = first, e = components.size(); i != e; ++i) {
    llvm::StringRef component = components[i];
    if (i + 1 == e) {
      component.consume_back(".py");
      if (component == "__init__" && i != first)
        break;
    }
    if (!dotted.empty())
      dotted += '.';
    dotted += component;
  }
  return dotted + "." + qualname.str();
}

//===----------------------------------------------------------------------===//
// FrameResolver
//===----------------------------------------------------------------------===//

FrameResolver::FrameResolver(const Module &current,
                             const LineIndex &currentIndex, bool verifyNames)
    : source(&current), sourceIndex(&currentIndex), current(current),
      verifyNames(verifyNames) {}

/// What a frame of \p entity ran, as a hash: a module's statements hash
/// where parse-python wrote one (its body without members that only bind
/// their name), else the content hash.
static std::string getRunHash(const Entity &entity) {
  if (entity.kind == EntityKind::Module)
    if (std::optional<llvm::StringRef> hash =
            lookupString(entity.attrs, python::attr::kStatementsHash))
      return hash->str();
  return llvm::utohexstr(entity.contentHash, /*LowerCase=*/true, 16);
}

FrameResolver::FrameResolver(const Module &snapshot,
                             const LineIndex &snapshotIndex,
                             const Module &current)
    : source(&snapshot), sourceIndex(&snapshotIndex), current(current) {
  translations.resize(snapshot.getNumEntities());
  for (const Entity &old : snapshot.getEntities()) {
    Translation &translation = translations[old.id];
    translation.entity = current.lookupEntity(old.symbol);
    // A module body is stale when what its import runs changed: a function
    // added beside it changes its content hash, not its statements.
    translation.stale =
        translation.entity == kNoEntity ||
        (current.getEntity(translation.entity).contentHash != old.contentHash &&
         getRunHash(current.getEntity(translation.entity)) != getRunHash(old));
  }
}

ResolvedFrame FrameResolver::resolve(llvm::StringRef path,
                                     llvm::StringRef qualname,
                                     uint32_t line) const {
  ResolvedFrame frame;
  EntityId entity = sourceIndex->lookup(path, line);
  if (entity == kNoEntity) {
    frame.kind = ResolvedFrame::Kind::Library;
    frame.name = getLibraryLeafName(path, qualname);
    return frame;
  }
  if (!usesSnapshot()) {
    if (verifyNames)
      return resolveByName(path, qualname, line, entity);
    frame.kind = ResolvedFrame::Kind::Entity;
    frame.entity = entity;
    return frame;
  }
  const Translation &translation = translations[entity];
  frame.entity = translation.entity;
  frame.stale = translation.stale;
  frame.kind = translation.entity == kNoEntity ? ResolvedFrame::Kind::Vanished
                                               : ResolvedFrame::Kind::Entity;
  if (frame.stale)
    frame.name = source->getEntity(entity).symbol.str();
  return frame;
}

/// \p qualname without the trailing parts no entity has: code objects of
/// comprehensions, generator expressions and lambdas (`f.<locals>.<genexpr>`
/// runs as part of `f`), and the `<module>` of a module body (empty).
static llvm::StringRef getEntityQualname(llvm::StringRef qualname) {
  while (!qualname.empty()) {
    auto [head, last] = qualname.rsplit('.');
    if (!last.starts_with("<"))
      break;
    qualname = last.data() == qualname.data() ? llvm::StringRef() : head;
  }
  return qualname;
}

ResolvedFrame FrameResolver::resolveByName(llvm::StringRef path,
                                           llvm::StringRef qualname,
                                           uint32_t line,
                                           EntityId atLine) const {
  ResolvedFrame frame;
  frame.kind = ResolvedFrame::Kind::Entity;
  frame.entity = atLine;
  EntityId fileModule = sourceIndex->lookup(path, 0);
  const Entity &moduleEntity = current.getEntity(fileModule);
  // A file that is no Python module has no names to check.
  if (moduleEntity.kind != EntityKind::Module)
    return frame;
  // A module body maps to its module wherever its lines now are.
  llvm::StringRef name = getEntityQualname(qualname);
  if (name.empty()) {
    frame.entity = fileModule;
    return frame;
  }
  std::string symbol = (moduleEntity.symbol + "." + name).str();
  llvm::StringRef lineSymbol = current.getEntity(atLine).symbol;
  if (lineSymbol == symbol)
    return frame;
  // An unqualified name (py-spy records `co_name` only, as does CPython
  // < 3.11 where a qualname could not be rebuilt) that the code at the line
  // ends with is that code: a method `m` at a line of `C.m`.
  if (!name.contains('.') && lineSymbol.ends_with(("." + name).str()))
    return frame;
  // The code moved within its file.
  if (EntityId named = current.lookupEntity(symbol); named != kNoEntity) {
    frame.entity = named;
    return frame;
  }
  // A frame without a line (py-spy's `name (file)`) has no code at a line
  // to contradict.
  if (line == 0)
    return frame;
  frame.kind = ResolvedFrame::Kind::Vanished;
  frame.entity = kNoEntity;
  frame.stale = true;
  frame.name = std::move(symbol);
  return frame;
}
