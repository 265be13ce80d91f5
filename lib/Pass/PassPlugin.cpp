//===- PassPlugin.cpp - Loading passes from shared objects ----------------===//
//
// dlopen a plugin, find its entry point, check the API range, and run its
// registration callback. Every way this can go wrong becomes an llvm::Error
// with the plugin's path in it; nothing from a rejected plugin is run.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/PassPlugin.h"
#include "fastci/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include <dlfcn.h>

using namespace fastci;

llvm::Expected<PassPlugin> PassPlugin::load(llvm::StringRef path) {
  auto makeError = [&](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot load pass plugin '" + path +
                                       "': " + message);
  };
  // dlopen's own message for a missing file is easy to misread as a
  // dependency problem; say plainly that the file is not there.
  if (!llvm::sys::fs::exists(path))
    return makeError("no such file");

  std::string loadError;
  llvm::sys::DynamicLibrary library =
      llvm::sys::DynamicLibrary::getPermanentLibrary(path.str().c_str(),
                                                     &loadError);
  if (!library.isValid())
    return makeError(loadError);
  // llvm_shutdown() (run by InitLLVM when main returns) dlcloses permanent
  // libraries, but the registry and pass managers hold code and vtables of
  // the plugin until static destruction. Pin the object so it stays mapped.
  dlopen(path.str().c_str(), RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);

  using EntryPoint = FastCIPluginInfo (*)();
  auto entry = reinterpret_cast<EntryPoint>(
      library.getAddressOfSymbol(kPluginEntryPoint));
  if (!entry)
    return makeError(llvm::formatv("it does not export '{0}'; a FastCI pass "
                                   "plugin defines extern \"C\" "
                                   "FastCIPluginInfo {0}()",
                                   kPluginEntryPoint)
                         .str());

  FastCIPluginInfo info = entry();
  if (info.apiVersion < FASTCI_PLUGIN_API_MIN_VERSION ||
      info.apiVersion > FASTCI_PLUGIN_API_VERSION)
    return makeError(llvm::formatv("it was built for plugin API version {0}, "
                                   "but this FastCI supports versions {1} to "
                                   "{2}; rebuild the plugin against this "
                                   "FastCI",
                                   info.apiVersion,
                                   FASTCI_PLUGIN_API_MIN_VERSION,
                                   FASTCI_PLUGIN_API_VERSION)
                         .str());
  if (!info.pluginName || !info.pluginVersion || !info.registerCallbacks)
    return makeError("its plugin info lacks a name, a version or a "
                     "registration callback");

  info.registerCallbacks();
  std::vector<std::string> errors = takeRegistrationErrors();
  if (!errors.empty())
    return makeError(llvm::join(errors, "; "));
  return PassPlugin(path.str(), info);
}
