//===- FileSummary.h - What one Python file contributes ---------*- C++ -*-===//
//
// A FileSummary is the complete, self-contained result of analysing one
// Python file: its classes and functions with their qualified names, ranges
// and hashes, its imports and call sites (already resolved through the
// file's own bindings), its pytest items and the warnings it raised. It owns
// all its strings, so files are summarized in parallel with no shared state,
// and it has a compact binary form, so a summary can be cached by the file's
// content and reused on the next run.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PYTHON_FILESUMMARY_H
#define FASTCI_PYTHON_FILESUMMARY_H

#include "fastci/IR/Module.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fastci::python {

/// Index of an entity within its FileSummary; kModuleScope names the module.
using LocalId = int32_t;
/// The module-level scope of a file.
inline constexpr LocalId kModuleScope = -1;

/// How the statements directly in a module's or class's body pass names on
/// (attr::kFlows, attr::kEffectNames): what lets selection follow a changed
/// module-level name through the statements that read it.
struct BodyFlows {
  /// For each name that a statement which only binds names binds: the
  /// module-level names those statements load, resolved; sorted by name.
  std::vector<std::pair<std::string, std::vector<std::string>>> flows;
  /// The module-level names loaded by statements that may act beyond
  /// binding names, and, for a class, by its header (bases, keywords,
  /// decorators); resolved, sorted and de-duplicated.
  std::vector<std::string> effectNames;
};

/// A class or function (including lambdas bound to a name).
struct EntitySummary {
  /// Class or Function.
  EntityKind kind = EntityKind::Function;
  /// The bare name as written (`method`, `test_fwd`).
  std::string name;
  /// The `__qualname__`, made unique within the file (see docs/ParsePython.md
  /// for the `#2` suffix of redefinitions).
  std::string qualname;
  /// The enclosing entity, or kModuleScope.
  LocalId parent = kModuleScope;
  /// `ast`-compatible range of the `def`/`class`/`lambda` node.
  SourceRange range;
  /// Normalized content hash.
  uint64_t hash = 0;
  /// Decorators as dotted names, outermost first.
  std::vector<std::string> decorators;
  bool isAsync = false;
  /// A `name = lambda ...` binding rather than a `def`.
  bool isLambda = false;
  /// Decorated with `pytest.fixture`.
  bool isFixture = false;
  /// Test functions and fixtures: the arguments pytest's getfuncargnames
  /// reads as fixture requests (positional-or-keyword and keyword-only
  /// parameters without a default), the first one (`self`) included.
  std::vector<std::string> parameters;
  /// The module-level names its own code loads, resolved (see
  /// attr::kNames), sorted and de-duplicated.
  std::vector<std::string> names;
  /// Classes: how the class body's statements pass names on.
  BodyFlows body;
};

/// An import or a call site.
struct EdgeSummary {
  EdgeKind kind = EdgeKind::Call;
  /// The entity containing it, or kModuleScope.
  LocalId from = kModuleScope;
  /// The dotted target, resolved through the file's bindings.
  std::string target;
  /// 1-based source line.
  uint32_t line = 0;
  /// For `from M import x`, the length of the `M` prefix of target; lets the
  /// importer fall back to the module when `x` is not an entity.
  uint32_t modulePrefix = 0;
  /// Imports: the name an `as` clause binds (`TC` for `from unittest import
  /// TestCase as TC`, `fb` for `import foo.bar as fb`), "" without one.
  std::string alias;
};

/// An edge as the IR build reads it: an EdgeSummary of FileSummary::edges,
/// or one still in the cache's bytes (FileSummary::encodedEdges).
struct EdgeRef {
  EdgeKind kind = EdgeKind::Call;
  LocalId from = kModuleScope;
  llvm::StringRef target;
  uint32_t line = 0;
  uint32_t modulePrefix = 0;
  llvm::StringRef alias;
};

/// A scalar value of a `fastci` marker's workload dictionary.
struct WorkloadValue {
  std::string key;
  /// The value as an attribute (int, float, string or bool).
  Attribute value;
};

/// One entry of a `fastci` marker's `floors={...}`: the test's own override
/// of one of its dialect's behaviour floors, as a manifest's `floors:` entry
/// (docs/Workloads.md, "Per-test floors").
struct FloorOverrideValue {
  /// The floor's name (`model-width`); lower-workload checks it exists.
  std::string name;
  /// Non-empty: the floor is turned off, for this reason.
  std::string off;
  /// Otherwise the raised bound and its optional reason.
  int64_t atLeast = 0;
  std::string why;
};

/// A `fastci` marker's `floors={...}`.
struct FloorOverrides {
  /// Whether the marker has a `floors` argument at all.
  bool present = false;
  /// Set when it is malformed (the first problem, as warned): the test then
  /// carries this text instead of overrides, which lower-workload rejects,
  /// so a malformed override can never lower a test silently.
  std::string error;
  std::vector<FloorOverrideValue> entries;
};

/// A pytest mark reduced to what collection needs, so that a subclass in
/// another file can inherit it without the decorator's syntax.
struct MarkSummary {
  /// The marker name (`parametrize`, `slow`, `fastci`, ...).
  std::string name;
  /// parametrize: whether its case ids are static, the ids, and for each
  /// case the marker names its `pytest.param(marks=...)` adds.
  bool idsKnown = false;
  std::vector<std::string> ids;
  std::vector<std::vector<std::string>> caseTags;
  /// fastci: the literal parts of scope=[...] and workload={...}.
  std::vector<std::string> scope;
  std::vector<WorkloadValue> workload;
  /// fastci: floors={...}.
  FloorOverrides floors;
  /// parametrize: its argnames; usefixtures: the fixture names (string
  /// arguments only).
  std::vector<std::string> names;
  /// parametrize: its `indirect=` keyword: 0 absent or false (the argnames
  /// are direct, their fixtures not requested), 1 True, 2 anything else (a
  /// list, which pytest versions read differently, or not a literal).
  uint8_t indirect = 0;
};

/// What pytest collection needs to know of a class or a `test*` function
/// beyond its EntitySummary (kept only when not empty).
struct PytestEntitySummary {
  LocalId entity = kModuleScope;
  /// Its marks, innermost decorator first (pytest's order).
  std::vector<MarkSummary> marks;
  /// Classes: one entry per positional base, the dotted name resolved
  /// through the file's bindings (`pkg.common.BaseTests`), "" when the base
  /// is not a name.
  std::vector<std::string> bases;
  /// Classes: `__test__` assigned in the body: 0 no, 1 False, 2 True.
  uint8_t testAttribute = 0;
  /// Fixtures: the name it is requested by (`name=`, else the function's).
  std::string fixtureName;
  /// Fixtures: declared with `params=` (not None); pytest then repeats
  /// every test that requests it, once per param.
  bool fixtureParams = false;
  /// Fixtures: `autouse=` true, or not a literal (fail safe).
  bool fixtureAutouse = false;
  /// Fixtures with params: whether the ids pytest gives the params are
  /// static (a literal list, `ids=` a literal list or absent), the ids, and
  /// per param the marker names its `pytest.param(marks=...)` adds.
  bool fixtureIdsKnown = false;
  std::vector<std::string> fixtureIds;
  std::vector<std::vector<std::string>> fixtureCaseTags;
  /// Fixtures: `scope=` as pytest's Scope order (0 function, 1 class,
  /// 2 module, 3 package, 4 session), 5 when not a literal.
  uint8_t fixtureScope = 0;
  /// Test functions: a decorator that replaces the function with generated
  /// ones of other names (0 none, 1 `parameterized.expand`, 2 torch's
  /// `parametrize`, which only takes effect in an instantiated class),
  /// whether their names are static, and the names.
  uint8_t generator = 0;
  bool generatedKnown = false;
  std::vector<std::string> generatedNames;
  /// Classes: what import-time code does to them. \c instantiated: passed
  /// to torch's `instantiate_parametrized_tests`; \c dynamicMembers:
  /// `setattr` or `locals()` add members whose names are not known;
  /// \c replaced: a decorator or call replaces the class (torch's
  /// `instantiate_device_type_tests`, `parameterized_class`), so it is not
  /// collected under its own name.
  bool instantiated = false;
  bool dynamicMembers = false;
  bool replaced = false;
};

/// A pytest item.
struct TestSummary {
  /// The node id as pytest prints it.
  std::string nodeId;
  /// The test function.
  LocalId entry = kModuleScope;
  /// Marker names, function markers first, then class and module markers.
  std::vector<std::string> tags;
  /// Set when parametrize ids could not be determined statically and this
  /// one item stands for all cases; also when the test requests, directly
  /// or through other fixtures, a fixture declared with `params=`.
  bool parametrized = false;
  /// From `@pytest.mark.fastci(scope=[...])`.
  std::vector<std::string> scope;
  /// From `@pytest.mark.fastci(workload={...})`.
  std::vector<WorkloadValue> workload;
  /// From `@pytest.mark.fastci(floors={...})`.
  FloorOverrides floors;
  /// Set for an inherited test whose function lives in another file: its
  /// symbol (\c entry then names the class that inherits it).
  std::string entrySymbol;
  /// Set on the item standing for a whole test class (node id
  /// `path::Class`) when a base class could not be resolved, so which tests
  /// it inherits is not known.
  bool inheritedUnknown = false;
  /// Set when nodeId is not an exact pytest node id but an item pytest
  /// accepts that encloses the real ones (the file, a class, or a function
  /// whose parametrized cases are not known); \c reason says why
  /// (attr::kEnclosing, attr::kEnclosingReason).
  bool enclosing = false;
  std::string reason;
};

/// A problem found in the file (it never stops the run).
struct FileWarning {
  /// 1-based line and column, 0 when not known.
  uint32_t line = 0, column = 0;
  std::string message;
};

/// Everything one file contributes to the module.
struct FileSummary {
  /// Normalized hash of the module-level code outside classes and functions.
  uint64_t moduleHash = 0;
  /// The same without the members that only bind their name (a `def` or
  /// `class` with pure decorators): what importing the module runs
  /// (attr::kStatementsHash).
  uint64_t moduleStatementsHash = 0;
  /// Number of lines of the file (a final newline ends the last line).
  uint32_t numLines = 0;
  /// Length in bytes of the last line, without its newline: with numLines,
  /// the end of the module's range.
  uint32_t lastLineLength = 0;
  /// Entities in pre-order (parents before children, source order).
  std::vector<EntitySummary> entities;
  std::vector<EdgeSummary> edges;
  /// Set instead of `edges` by deserializeSummary(SummaryParts::IR): the
  /// edges left in their binary form, checked but not decoded (a warm run
  /// has a hundred thousand of them, each a string the IR interns anyway,
  /// and the link reads only module-level imports). They point into the
  /// caller's buffer: read them with forEachEdge.
  llvm::StringRef encodedEdges;
  uint32_t numEncodedEdges = 0;
  std::vector<TestSummary> tests;
  std::vector<FileWarning> warnings;
  /// Pytest facts of classes and test functions, in entity order, and the
  /// marks of the module's `pytestmark`: what collecting a subclass in
  /// another file needs (see linkPytestItems).
  std::vector<PytestEntitySummary> pytestEntities;
  std::vector<MarkSummary> moduleMarks;
  /// Set when the file has syntax errors, NUL bytes or invalid UTF-8, or
  /// exceeded the parse budget: its entities may be incomplete
  /// (attr::kParseError).
  bool parseError = false;
  /// The names the module-level code loads (attr::kNames).
  std::vector<std::string> moduleNames;
  /// How the module-level statements pass names on.
  BodyFlows moduleBody;
  /// Module-level code creates tests whose names are not known statically
  /// (`globals()[...] = ...`, a call given `globals()`, `exec`): the file
  /// item stands for them.
  bool dynamicTests = false;
};

/// The number of edges of \p summary, decoded or not.
inline size_t getNumEdges(const FileSummary &summary) {
  return summary.edges.size() + summary.numEncodedEdges;
}

/// Calls \p visit for every edge of \p summary in order, decoded or not.
void forEachEdge(const FileSummary &summary,
                 llvm::function_ref<void(const EdgeRef &)> visit);

/// Serializes \p summary in the cache's binary form.
std::string serializeSummary(const FileSummary &summary);

/// The parts of a summary that deserializeSummary reads.
enum class SummaryParts : uint8_t {
  /// Everything.
  All,
  /// What the IR is built from, the edges left encoded (encodedEdges).
  /// Left empty: what only linkPytestItems reads (EntitySummary::name and
  /// ::parameters, pytestEntities, moduleMarks, dynamicTests);
  /// deserializeLinkFacts adds it when the link runs.
  IR,
};

/// Reads back what serializeSummary wrote; a truncated, corrupted or
/// foreign buffer is an error (the caller then reparses the file). With
/// SummaryParts::IR the link-only part is neither read nor checked.
llvm::Expected<FileSummary>
deserializeSummary(llvm::StringRef buffer,
                   SummaryParts parts = SummaryParts::All);

/// Adds to \p summary, read from \p buffer with SummaryParts::IR, the part
/// that was left out (its edges stay encoded); a damaged part is an error.
llvm::Error deserializeLinkFacts(llvm::StringRef buffer, FileSummary &summary);

} // namespace fastci::python

#endif // FASTCI_PYTHON_FILESUMMARY_H
