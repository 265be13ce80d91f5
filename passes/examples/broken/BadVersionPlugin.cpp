//===- BadVersionPlugin.cpp - A plugin built for a future API -------------===//
//
// Claims an API version the host does not support; the host must refuse it
// without calling its registration callback.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/PassPlugin.h"
#include "llvm/Support/ErrorHandling.h"

extern "C" FASTCI_PLUGIN_EXPORT FastCIPluginInfo fastciGetPluginInfo() {
  return {FASTCI_PLUGIN_API_VERSION + 100, "bad-version", "0.0", [] {
            llvm::report_fatal_error("a refused plugin must not be registered");
          }};
}
