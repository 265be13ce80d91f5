//===- TestModule.h - The module the evidence tests use ---------*- C++ -*-===//
//
// Builds the module the evidence unit tests map frames onto: a package file
// with nested functions and a class, and a test file, with hashes so that a
// modified copy can play the role of a later revision.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_UNITTEST_EVIDENCE_TESTMODULE_H
#define FASTCI_UNITTEST_EVIDENCE_TESTMODULE_H

#include "fastci/IR/Module.h"
#include <memory>

namespace fastci::test {

/// Entities of buildTestModule(), by what they are.
inline constexpr const char *kOuter = "pkg.mod.outer";
inline constexpr const char *kInner = "pkg.mod.outer.<locals>.inner";
inline constexpr const char *kMethod = "pkg.mod.C.m";
inline constexpr const char *kTestX = "tests.test_a.test_x";

/// pkg/mod.py (lines 1-100): outer 10-30 > inner 12-20; class C 40-60 > m
/// 42-50. tests/test_a.py (1-50): test_x 5-15. \p innerHash is inner's body
/// hash; \p withMethod drops C.m when false (a later revision deleting it).
inline std::unique_ptr<Module> buildTestModule(uint64_t innerHash = 3,
                                               bool withMethod = true) {
  auto module = std::make_unique<Module>();
  Module &m = *module;
  EntityId file = m.addEntity(EntityKind::File, "pkg/mod.py");
  EntityId mod =
      m.addEntity(EntityKind::Module, "pkg.mod", file, {1, 0, 100, 0}, 1);
  EntityId outer =
      m.addEntity(EntityKind::Function, kOuter, mod, {10, 0, 30, 0}, 2);
  m.addEntity(EntityKind::Function, kInner, outer, {12, 4, 20, 0}, innerHash);
  EntityId cls =
      m.addEntity(EntityKind::Class, "pkg.mod.C", mod, {40, 0, 60, 0}, 4);
  if (withMethod)
    m.addEntity(EntityKind::Function, kMethod, cls, {42, 4, 50, 0}, 5);
  EntityId testFile = m.addEntity(EntityKind::File, "tests/test_a.py");
  EntityId testMod = m.addEntity(EntityKind::Module, "tests.test_a", testFile,
                                 {1, 0, 50, 0}, 6);
  m.addEntity(EntityKind::Function, kTestX, testMod, {5, 0, 15, 0}, 7);
  m.addTest("tests/test_a.py::test_x");
  m.getAttrs().set("revision", Attribute::getString("rev2"));
  return module;
}

} // namespace fastci::test

#endif // FASTCI_UNITTEST_EVIDENCE_TESTMODULE_H
