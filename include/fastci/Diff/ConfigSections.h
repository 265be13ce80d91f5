//===- ConfigSections.h - Where a line of a config file sits ----*- C++ -*-===//
//
// setup.cfg, tox.ini and pyproject.toml are build files, but most edits to
// them configure linters and formatters (`[flake8]`, `[tool.ruff]`) or
// describe the package (`license_files`, `classifiers`), which no test can
// observe. A policy rule may list such sections and keys
// (`ignore-sections`); mark-changed then needs to know where each changed
// line sits. This is a line-level reading that needs no full INI or TOML
// parser: section headers (`[name]`, `[[name]]`) open sections, a line at
// column 0 of the form `key = ...` (or `key: ...`) starts a key, and every
// other non-blank line continues the key above it (INI's indented
// continuation lines, a TOML array or table spread over several lines).
// Makefiles are read the same way with make's own shapes: a rule's targets
// name its section, which its recipe lines continue, and a variable
// assignment is a key of no section (docs/Changes.md).
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_DIFF_CONFIGSECTIONS_H
#define FASTCI_DIFF_CONFIGSECTIONS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/GlobPattern.h"
#include <cstdint>
#include <string>
#include <vector>

namespace fastci {

/// Where one line of a configuration file sits.
struct ConfigLine {
  /// Blank and comment lines mean nothing to any reader of the file.
  bool insignificant = false;
  /// The enclosing section (`metadata`, `tool.black`, `coverage:run`); empty
  /// before the first header.
  std::string section;
  /// The key the line belongs to, empty for a header line or a line before
  /// any key of its section.
  std::string key;

  /// `section/key`, `section` for a line that belongs to no key, `key`
  /// for one in no section; empty for a line of neither (a Makefile's
  /// `include` or conditional), which no pattern names.
  std::string getPath() const;
};

/// How a file's lines are grouped into sections and keys.
enum class ConfigFormat {
  /// INI and TOML: `[section]` headers, `key = value` at column 0.
  IniToml,
  /// A Makefile: `targets: prerequisites` opens the section `targets`, its
  /// tab-indented recipe lines continue it; `VAR = value` (`:=`, `?=`,
  /// `+=`, `!=`, `define VAR` ... `endef`) is the key `VAR` of no section;
  /// a line ending in `\` continues the one above it. Anything else
  /// (`include`, `ifeq`, `vpath`, ...) belongs to neither.
  Makefile,
};

/// The format of a build file by its path: `Makefile`, `GNUmakefile`,
/// `makefile` and `*.mk` are Makefiles, anything else INI or TOML.
ConfigFormat getConfigFormat(llvm::StringRef path);

/// Locates 1-based line \p line of the file split into \p lines. A line
/// past the end is insignificant.
ConfigLine locateConfigLine(llvm::ArrayRef<llvm::StringRef> lines,
                            uint32_t line,
                            ConfigFormat format = ConfigFormat::IniToml);

/// True when \p pattern (a glob over `section` or `section/key`, as written
/// in a policy's `ignore-sections`) matches \p where: the pattern matches its
/// section alone or its `section/key` path.
bool matchConfigSection(const llvm::GlobPattern &pattern,
                        const ConfigLine &where);

/// The distributions pyproject.toml's `[build-system] requires` names, in
/// \p lines (the file's text split into lines), normalized
/// (normalizeDistributionName).
std::vector<std::string>
getBuildRequirements(llvm::ArrayRef<llvm::StringRef> lines);

/// True when \p section of a pyproject.toml is the `[tool.X]` table (or a
/// table under it) of a tool that no test process runs: PEP 518 gives each
/// tool its own `tool.X` namespace, and a test process reads only pytest's
/// (`tool.pytest`) and, once the project is built and installed, the build
/// backend's and its plugins' (those \p buildRequirements names: `hatch`
/// for `hatchling`, `setuptools_scm`, `poetry` for `poetry-core`, ...).
bool isOtherToolTable(llvm::StringRef section,
                      llvm::ArrayRef<std::string> buildRequirements);

/// Where one line of a FastCI test manifest (docs/Workloads.md) sits: in
/// the entry of the test \c id of its block-style `tests:` list, or, with an
/// empty \c id, anywhere else (`version`, `defaults`, imports, a flow-style
/// list), which concerns every test of the manifest.
struct ManifestLine {
  /// Blank and comment lines.
  bool insignificant = false;
  /// The `id` of the entry the line is part of.
  std::string id;
};

/// Locates 1-based line \p line of a manifest split into \p lines.
ManifestLine locateManifestLine(llvm::ArrayRef<llvm::StringRef> lines,
                                uint32_t line);

} // namespace fastci

#endif // FASTCI_DIFF_CONFIGSECTIONS_H
