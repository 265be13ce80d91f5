//===- ChangePolicy.h - What a changed non-Python file means ----*- C++ -*-===//
//
// A change policy says, for each path a merge request touches, which tests
// the change can affect: none (docs, images), the Python entities the diff
// touches, the tests that reference the file (configs), the Python modules
// that load a native extension (C++/CUDA), or every test (build files,
// dependency pins, anything unknown). It is a YAML file of glob rules tried
// in order, first match wins; docs/Changes.md specifies the format, and the
// mark-changed pass ships a default. A path no rule matches selects every
// test, because the one failure a selector must never have is to skip a test
// that a change breaks.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_DIFF_CHANGEPOLICY_H
#define FASTCI_DIFF_CHANGEPOLICY_H

#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"
#include <string>
#include <vector>

namespace fastci {

/// What a rule does with the files it matches.
enum class PolicyAction : uint8_t {
  /// Affects no test (documentation, images).
  Ignore,
  /// Map the diff's hunks to Python entities.
  Python,
  /// Affects the tests that reference the file's path; the rule's fallback
  /// when none does.
  ReferencingTests,
  /// Affects the Python modules that load the native extension the file is
  /// compiled into; every test when none is known.
  Extension,
  /// Affects every test.
  All,
  /// A pip requirements or constraints file: the tests whose processes
  /// import the distributions its changed lines name; every test for a line
  /// naming none (`-r`, `-e`, a URL).
  Dependencies,
  /// Python code whose changes reach the tests at or below its directory
  /// as well (pytest's `conftest.py` scope): mapped like Python, plus those
  /// tests; every test for a file at the repository root.
  DirectoryTests,
  /// A script no test is known to run (shell, batch, PowerShell): the
  /// tests whose evidence ran another script the rule matches, since one
  /// script may run another; none when no test ran one.
  Scripts,
};

/// The keyword naming \p action in a policy file (`ignore`, `python`,
/// `tests`, `extension`, `all`, `directory`, `dependencies`, `scripts`).
llvm::StringRef stringifyPolicyAction(PolicyAction action);

/// One `rules:` entry.
struct PolicyRule {
  /// Path globs; the rule matches a path when any of them does.
  std::vector<std::string> globs;
  /// A free-form name for the kind of file (`docs`, `config`, `native`, ...).
  std::string category;
  /// What the change affects.
  PolicyAction action = PolicyAction::All;
  /// For ReferencingTests: test tags to select when no test references the
  /// file. Empty means every test.
  std::vector<std::string> fallbackTags;
  /// For All: globs over `section` or `section/key` of an INI or TOML file
  /// (`flake8`, `tool.ruff*`, `metadata/license*`). A change whose every
  /// changed line is blank, a comment, or in one of them affects no test.
  std::vector<std::string> ignoreSections;
  /// Where the rule is written, as `file:line`, for decisions to cite.
  std::string origin;
};

/// One `extensions:` entry: a native extension, its sources and the Python
/// modules that load it.
struct ExtensionDecl {
  /// The extension's name (`fused_adam_cuda`), used in reasons.
  std::string name;
  /// Globs of the sources compiled into it.
  std::vector<std::string> sources;
  /// Dotted names of the Python modules that import it.
  std::vector<std::string> modules;
};

/// A parsed change policy.
class ChangePolicy {
public:
  /// Parses buffer \p bufferId of \p diag's SourceMgr; every problem is
  /// reported at its position in the YAML.
  static LogicalResult parse(unsigned bufferId, DiagnosticEngine &diag,
                             ChangePolicy &policy);

  /// The first rule matching \p path, or null.
  const PolicyRule *match(llvm::StringRef path) const;
  /// The declared extensions whose sources match \p path.
  std::vector<const ExtensionDecl *> findExtensions(llvm::StringRef path) const;

  /// The rules, in order.
  llvm::ArrayRef<PolicyRule> getRules() const { return rules; }
  /// The declared extensions.
  llvm::ArrayRef<ExtensionDecl> getExtensions() const { return extensions; }
  /// The policy's name: its file name, or `<default>`.
  llvm::StringRef getName() const { return name; }

private:
  friend class PolicyParser;
  std::string name;
  std::vector<PolicyRule> rules;
  std::vector<ExtensionDecl> extensions;
};

/// The text of the default policy (passes/mark-changed/default-policy.yaml,
/// embedded at build time).
llvm::StringRef getDefaultChangePolicyText();

/// True when the policy glob \p glob matches \p path: a glob with a slash is
/// matched against the whole path (a leading slash is ignored), one without
/// against the file name only, as in .gitignore; `**` spans directories.
bool matchPolicyGlob(llvm::StringRef glob, llvm::StringRef path);

} // namespace fastci

#endif // FASTCI_DIFF_CHANGEPOLICY_H
