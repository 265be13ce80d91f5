//===- ModuleLevelChanges.cpp - Module-level changes
//-----------------------===//
//
// Classifies each change of a module's or class's own lines as a
// definition or an import-time effect, including imports that make
// importers run new module bodies (docs/Changes.md, Module-level code).
//
//===----------------------------------------------------------------------===//
#include "ChangeMapperImpl.h"
#include "fastci/Python/PythonAttrs.h"

using namespace fastci;
using namespace fastci::detail;
using llvm::StringRef;

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

bool ChangeMapper::Impl::importsResolve(EntityId moduleEntity,
                                        llvm::ArrayRef<std::string> imports) {
  if (!importGraph)
    importGraph.emplace(module);
  const Entity &self = module.getEntity(moduleEntity);
  bool isPackage = llvm::sys::path::filename(
                       module.getFilePath(moduleEntity)) == "__init__.py";
  return llvm::all_of(imports, [&](const std::string &written) {
    std::string name = resolveImport(written, self.symbol, isPackage);
    // Outside the repository: select-affected asks the evidence whether
    // the processes had it loaded.
    if (importGraph->lookupModule(name) == kNoEntity)
      return !StringRef(written).starts_with(".");
    // A module, or a function or class defined in one, or a name the
    // module imports under its own name at its top level (a package's
    // re-export). A name bound by an assignment, or imported under an
    // alias, has no entity here: it counts as unresolved.
    if (module.lookupEntity(name) != kNoEntity)
      return true;
    auto [owner, leaf] = StringRef(name).rsplit('.');
    EntityId ownerModule = module.lookupEntity(owner);
    return ownerModule != kNoEntity &&
           llvm::any_of(module.getEdges(), [&](const StaticEdge &edge) {
             if (edge.kind != EdgeKind::Import || edge.from != ownerModule)
               return false;
             StringRef target = edge.to < module.getNumEntities()
                                    ? module.getEntity(edge.to).symbol
                                    : edge.name;
             return target.rsplit('.').second == leaf;
           });
  });
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
      if (Attribute decorators = entity.attrs.get(python::attr::kDecorators);
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
    else if (!edit.imports.empty()) {
      change.attrs.set(diff::attr::kChangedImports,
                       Attribute::getStringList(edit.imports));
      if (edit.onlyImports && importsResolve(change.entity, edit.imports))
        change.attrs.set(diff::attr::kImportsOnly, Attribute::getBool(true));
    }
  }
}
