//===- Module.cpp - The FastCI IR: one repository snapshot ----------------===//
//
// Storage and indexing for Module: string interning, symbol and test lookup,
// the frame table and the shared stack trie.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Module.h"
#include "llvm/Support/ErrorHandling.h"

using namespace fastci;

llvm::StringRef fastci::stringifyEntityKind(EntityKind kind) {
  switch (kind) {
  case EntityKind::File:
    return "file";
  case EntityKind::Module:
    return "module";
  case EntityKind::Class:
    return "class";
  case EntityKind::Function:
    return "function";
  }
  llvm_unreachable("unknown entity kind");
}

llvm::StringRef fastci::stringifyEdgeKind(EdgeKind kind) {
  switch (kind) {
  case EdgeKind::Import:
    return "import";
  case EdgeKind::Call:
    return "call";
  }
  llvm_unreachable("unknown edge kind");
}

llvm::StringRef fastci::stringifyOutcomeKind(OutcomeKind kind) {
  switch (kind) {
  case OutcomeKind::Pass:
    return "pass";
  case OutcomeKind::Fail:
    return "fail";
  case OutcomeKind::Error:
    return "error";
  case OutcomeKind::Skip:
    return "skip";
  }
  llvm_unreachable("unknown outcome kind");
}

llvm::StringRef fastci::stringifyChangeKind(ChangeKind kind) {
  switch (kind) {
  case ChangeKind::Added:
    return "added";
  case ChangeKind::Modified:
    return "modified";
  case ChangeKind::Deleted:
    return "deleted";
  case ChangeKind::Moved:
    return "moved";
  case ChangeKind::Renamed:
    return "renamed";
  case ChangeKind::Cosmetic:
    return "cosmetic";
  }
  llvm_unreachable("unknown change kind");
}

Module::Module() = default;
Module::~Module() = default;

llvm::StringRef Module::intern(llvm::StringRef str) {
  auto [it, inserted] = interned.insert(str);
  if (inserted)
    *it = strings.save(str); // The same value, now owned by the module.
  return *it;
}

EntityId Module::addEntity(EntityKind kind, llvm::StringRef symbol,
                           EntityId parent, SourceRange range,
                           uint64_t contentHash) {
  EntityId id = static_cast<EntityId>(entities.size());
  Entity &entity = entities.emplace_back();
  entity.id = id;
  entity.kind = kind;
  entity.symbol = intern(symbol);
  entity.parent = parent;
  entity.range = range;
  entity.contentHash = contentHash;
  entityIndex.try_emplace(entity.symbol, id);
  return id;
}

void Module::reserveEntities(size_t count) {
  entities.reserve(entities.size() + count);
  entityIndex.reserve(entityIndex.size() + count);
  interned.reserve(interned.size() + count);
}

EntityId Module::lookupEntity(llvm::StringRef symbol) const {
  auto it = entityIndex.find(symbol);
  return it == entityIndex.end() ? kNoEntity : it->second;
}

EntityId Module::getFileOf(EntityId id) const {
  // Parent chains are short (file > module > class > function ...), but a
  // malformed module could hold a cycle; the bound keeps this total.
  for (size_t steps = 0; id != kNoEntity && steps <= entities.size(); ++steps) {
    if (id >= entities.size())
      return kNoEntity;
    const Entity &entity = entities[id];
    if (entity.kind == EntityKind::File)
      return id;
    id = entity.parent;
  }
  return kNoEntity;
}

llvm::StringRef Module::getFilePath(EntityId id) const {
  EntityId file = getFileOf(id);
  return file == kNoEntity ? llvm::StringRef() : entities[file].symbol;
}

void Module::addEdge(StaticEdge edge) {
  // A resolved edge usually names its target's symbol, interned already.
  if (edge.to < entities.size() && entities[edge.to].symbol == edge.name)
    edge.name = entities[edge.to].symbol;
  else
    edge.name = intern(edge.name);
  edges.push_back(edge);
}

TestId Module::addTest(llvm::StringRef name) {
  TestId id = static_cast<TestId>(tests.size());
  Test &test = tests.emplace_back();
  test.index = id;
  test.name = intern(name);
  testIndex.try_emplace(test.name, id);
  return id;
}

TestId Module::lookupTest(llvm::StringRef name) const {
  auto it = testIndex.find(name);
  return it == testIndex.end() ? kNoTest : it->second;
}

FrameId Module::getEntityFrame(EntityId entity) {
  auto [it, inserted] =
      entityFrames.try_emplace(entity, static_cast<FrameId>(frames.size()));
  if (inserted)
    frames.push_back(Frame{entity, {}});
  return it->second;
}

FrameId Module::getLeafFrame(llvm::StringRef name) {
  auto it = leafFrames.find(name);
  if (it != leafFrames.end())
    return it->second;
  FrameId id = static_cast<FrameId>(frames.size());
  llvm::StringRef saved = intern(name);
  frames.push_back(Frame{kNoEntity, saved});
  leafFrames.try_emplace(saved, id);
  return id;
}

StackId Module::getStack(StackId parent, FrameId frame) {
  auto [it, inserted] = stackIndex.try_emplace(
      std::make_pair(parent, frame), static_cast<StackId>(stackNodes.size()));
  if (inserted) {
    uint32_t depth = parent == kEmptyStack ? 1 : stackNodes[parent].depth + 1;
    stackNodes.push_back(StackNode{parent, frame, depth});
  }
  return it->second;
}

void Module::reserveStacks(size_t numStacks) {
  stackNodes.reserve(numStacks);
  stackIndex.reserve(numStacks);
}

StackId Module::getStack(llvm::ArrayRef<FrameId> stackFrames) {
  StackId stack = kEmptyStack;
  for (FrameId frame : stackFrames)
    stack = getStack(stack, frame);
  return stack;
}

void Module::getStackFrames(StackId id,
                            llvm::SmallVectorImpl<FrameId> &out) const {
  out.clear();
  for (; id != kEmptyStack; id = stackNodes[id].parent)
    out.push_back(stackNodes[id].frame);
  std::reverse(out.begin(), out.end());
}

EvidenceRecord &Module::addEvidence(TestId test) {
  EvidenceRecord &record = evidence.emplace_back();
  record.test = test;
  return record;
}

Change &Module::addChange(ChangeKind kind, EntityId entity) {
  Change &change = changes.emplace_back();
  change.kind = kind;
  change.entity = entity;
  change.symbol = entities[entity].symbol;
  change.file = getFilePath(entity);
  return change;
}

Change &Module::addChange(ChangeKind kind, llvm::StringRef symbol,
                          llvm::StringRef file) {
  Change &change = changes.emplace_back();
  change.kind = kind;
  change.symbol = intern(symbol);
  change.file = intern(file);
  return change;
}

ChangedFile &Module::addChangedFile(llvm::StringRef path,
                                    llvm::StringRef status) {
  ChangedFile &file = changedFiles.emplace_back();
  file.path = intern(path);
  file.status = intern(status);
  return file;
}
