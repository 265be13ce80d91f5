//===- PassPlugin.h - Loading passes from shared objects --------*- C++ -*-===//
//
// A pass plugin is a shared object that links libFastCI and exports
//
//   extern "C" FASTCI_PLUGIN_EXPORT FastCIPluginInfo fastciGetPluginInfo() {
//     return {FASTCI_PLUGIN_API_VERSION, "my-plugin", "1.0",
//             [] { PassRegistration<MyPass>(); }};
//   }
//
// The host accepts plugins built against any API version from
// FASTCI_PLUGIN_API_MIN_VERSION to FASTCI_PLUGIN_API_VERSION, as tree-sitter
// accepts a range of language ABIs. Bump FASTCI_PLUGIN_API_VERSION whenever
// the layout or virtual interface of Pass, PassOptions, Module or
// DiagnosticEngine changes; raise the minimum when old plugins would then
// misbehave. A plugin outside the range is refused with a message naming both
// versions, never loaded and crashed on.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PASS_PASSPLUGIN_H
#define FASTCI_PASS_PASSPLUGIN_H

#include <cstdint>

/// The plugin API this FastCI implements.
#define FASTCI_PLUGIN_API_VERSION 1
/// The oldest plugin API this FastCI still loads.
#define FASTCI_PLUGIN_API_MIN_VERSION 1
/// Makes the entry point visible even under -fvisibility=hidden.
#define FASTCI_PLUGIN_EXPORT __attribute__((visibility("default")))

extern "C" {
/// What a plugin tells the host about itself.
struct FastCIPluginInfo {
  /// FASTCI_PLUGIN_API_VERSION as the plugin was compiled.
  uint32_t apiVersion;
  /// A short name for messages.
  const char *pluginName;
  /// The plugin's own version.
  const char *pluginVersion;
  /// Registers the plugin's passes, pipelines and instrumentations.
  void (*registerCallbacks)();
};
}

#ifdef __cplusplus
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace fastci {

/// The symbol every plugin exports.
inline constexpr const char *kPluginEntryPoint = "fastciGetPluginInfo";

/// A loaded plugin. The shared object stays loaded for the life of the
/// process because the passes it registered live in it.
class PassPlugin {
public:
  /// Loads \p path, checks its API version and registers its passes.
  /// Fails, without registering anything, if the file cannot be loaded,
  /// lacks the entry point, or was built for an unsupported API version;
  /// fails if a pass it registers clashes with a registered one.
  static llvm::Expected<PassPlugin> load(llvm::StringRef path);

  llvm::StringRef getPath() const { return path; }
  llvm::StringRef getName() const { return info.pluginName; }
  llvm::StringRef getVersion() const { return info.pluginVersion; }
  uint32_t getAPIVersion() const { return info.apiVersion; }

private:
  PassPlugin(std::string path, FastCIPluginInfo info)
      : path(std::move(path)), info(info) {}
  std::string path;
  FastCIPluginInfo info;
};

} // namespace fastci
#endif

#endif // FASTCI_PASS_PASSPLUGIN_H
