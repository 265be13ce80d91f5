//===- Passes.cpp - Registration of every built-in pass -------------------===//
//
// Expands passes/Passes.def twice: once to declare each folder's
// registration function, once to call it.
//
//===----------------------------------------------------------------------===//
#include "fastci/Passes.h"
#include <mutex>

namespace fastci {
#define FASTCI_PASS_REGISTRATION(function) void function();
#include "Passes.def"
} // namespace fastci

void fastci::registerAllPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
#define FASTCI_PASS_REGISTRATION(function) function();
#include "Passes.def"
  });
}
