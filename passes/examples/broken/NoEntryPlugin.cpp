//===- NoEntryPlugin.cpp - A shared object that is not a plugin -----------===//
//
// Exports no fastciGetPluginInfo; loading it must fail cleanly.
//
//===----------------------------------------------------------------------===//

extern "C" int fastciSomethingElse() { return 42; }
