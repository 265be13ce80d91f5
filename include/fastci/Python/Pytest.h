//===- Pytest.h - pytest's collection rules, statically ---------*- C++ -*-===//
//
// pytest decides at run time which objects are tests and what their node ids
// are. This file reproduces those rules on the static view of a file: the
// default name filters (`test_*.py`/`*_test.py`, `Test*` classes without
// `__init__`, `test*` functions), marker names, and the id generation of
// `@pytest.mark.parametrize` (explicit ids, then per-value ids joined by
// `-`, made unique with pytest's suffixing) and of fixtures declared with
// `params=` that a test uses, class inheritance along the
// MRO (within a file, and across the repository's modules once every file
// is summarized), so the node ids FastCI emits are byte-for-byte the ones
// `pytest --collect-only -q` prints.
//
// Decorator arguments reach this file as PyValue trees: literals evaluated
// from the syntax tree, with anything that is not a literal kept as a name,
// a call or "unknown".
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PYTHON_PYTEST_H
#define FASTCI_PYTHON_PYTEST_H

#include "fastci/Python/FileSummary.h"
#include "fastci/Python/PytestConfig.h"
#include "fastci/Python/SourceTree.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include <optional>
#include <string>
#include <vector>

namespace fastci::python {

/// A statically known Python value (or a stand-in for one that is not).
struct PyValue {
  enum class Kind : uint8_t {
    /// Not a literal (a comprehension, an f-string with fields, ...).
    Unknown,
    None,
    Bool,
    Int,
    Float,
    /// A str; \c text holds its UTF-8 encoding.
    Str,
    /// A bytes literal; \c text holds the raw bytes.
    Bytes,
    Tuple,
    List,
    Set,
    /// A dict literal; \c elements alternate keys and values.
    Dict,
    /// A name or attribute chain; \c text is the dotted name.
    Name,
    /// A call; \c text is the callee's dotted name ("" if not a name),
    /// \c elements the positional and \c keywords the keyword arguments.
    Call,
  };
  Kind kind = Kind::Unknown;
  std::string text;
  bool boolValue = false;
  int64_t intValue = 0;
  double floatValue = 0;
  std::vector<PyValue> elements;
  std::vector<std::pair<std::string, PyValue>> keywords;

  // Defined out of line: implicit inline members would instantiate
  // std::pair<std::string, PyValue> while PyValue is incomplete, which
  // clang rejects with libstdc++'s C++20 (constexpr) containers.
  PyValue();
  PyValue(const PyValue &);
  PyValue(PyValue &&) noexcept;
  PyValue &operator=(const PyValue &);
  PyValue &operator=(PyValue &&) noexcept;
  ~PyValue();

  /// The keyword argument \p name of a Call, or null.
  const PyValue *getKeyword(llvm::StringRef name) const;
  /// True for tuples and lists.
  bool isSequence() const { return kind == Kind::Tuple || kind == Kind::List; }
};

/// Python's `repr(float)`: the shortest round-tripping digits, fixed
/// notation for exponents in [-4, 16), scientific otherwise.
std::string formatPythonFloat(double value);

/// pytest's `ascii_escaped` of a str given as UTF-8.
std::string asciiEscapeStr(llvm::StringRef utf8);
/// pytest's `ascii_escaped` of a bytes value.
std::string asciiEscapeBytes(llvm::StringRef bytes);

/// The ids of one `parametrize(argnames, argvalues, ids=...)` call, or
/// nothing when they cannot be determined statically. \p isLocalDef tells
/// whether a bare name is a class or function defined in the file (pytest
/// then uses its `__name__`). When \p caseTags is given it receives, per
/// case, the marker names `pytest.param(marks=...)` adds.
///
/// Only ids every pytest from 7.2 to 8.x prints alike are returned: where
/// they disagree (duplicates that end in a digit or collide with another id
/// once suffixed) the answer is "not static".
std::optional<std::vector<std::string>> computeParametrizeIds(
    const PyValue &call, llvm::function_ref<bool(llvm::StringRef)> isLocalDef,
    std::vector<std::vector<std::string>> *caseTags = nullptr);

/// True for file names pytest collects by default.
bool isPytestTestFile(llvm::StringRef fileName);

/// The base classes written in the header of the class whose `class`
/// keyword starts at byte \p offset of \p source: one entry per positional
/// base, its dotted name with any subscript dropped (`Generic[T]` ->
/// `Generic`), "" for a base that is not a name; keyword arguments
/// (`metaclass=`) are left out.
std::vector<std::string> parseClassBases(llvm::StringRef source, size_t offset);

/// Records the pytest facts of the file \p path (module \p moduleName,
/// decoded text \p source) in \p summary: the marks of every class and
/// `test*` function, the bases of classes resolved through the file's
/// bindings, `__test__` assignments and the module's `pytestmark`. For a
/// test file, also adds its items as far as the file alone determines them
/// (a base class from another file makes the class's inherited tests
/// unknown until linkPytestItems). \p decorators holds each entity's
/// decorators as values (outermost first), and \p moduleMarks the marks of
/// a module-level `pytestmark`.
/// What the module-level code of a file does to its classes at import
/// time, by class name (found by the analyzer's walk).
struct ImportTimeEffects {
  /// Passed to torch's `instantiate_parametrized_tests`.
  llvm::StringSet<> instantiated;
  /// Given members by `setattr(Cls, name, ...)`.
  llvm::StringSet<> dynamicMembers;
  /// Passed to torch's `instantiate_device_type_tests`, which deletes the
  /// generic class from the module.
  llvm::StringSet<> replaced;
};

void collectPytestItems(llvm::StringRef path, llvm::StringRef moduleName,
                        llvm::StringRef source, FileSummary &summary,
                        llvm::ArrayRef<std::vector<PyValue>> decorators,
                        llvm::ArrayRef<PyValue> moduleMarks,
                        const ImportTimeEffects &effects,
                        const PytestConfig &config);

/// What linkPytestItems can reuse from the link that made the cached items.
struct PreviousLink {
  /// The files are those of the previous link: none added or removed (and
  /// the pytest configuration is the same, which the cache key ensures).
  bool sameFiles = false;
  /// Whether file i's summary is new (parsed, or changed since the previous
  /// link) rather than the one the previous link produced.
  llvm::function_ref<bool(size_t)> isFresh;
  /// For a file whose items the previous link computed: the paths its
  /// collection read, joined by NUL bytes (see LinkResult). std::nullopt
  /// for a file whose items were its own (per-file) ones.
  llvm::function_ref<std::optional<llvm::StringRef>(size_t)> readsOf;
};

/// What linkPytestItems did.
struct LinkResult {
  /// The indexes of the files whose items it recomputed, ascending.
  std::vector<size_t> relinked;
  /// For each entry of `relinked`: the paths of the other files its
  /// collection read (sorted, joined by NUL bytes), which decide when the
  /// items must be linked again.
  std::vector<std::string> reads;
  /// For each file: whether its items are linked ones (by this link or a
  /// previous one), not its own per-file items.
  std::vector<bool> linked;
};

/// Recomputes the items of every test file in \p files (whose summaries
/// \p summaryOf gives by index, null for an unreadable file) with the whole
/// repository in view: test methods inherited from base classes defined or
/// re-exported in other modules, `__init__` and `__test__` found along the
/// MRO, and `Test*` classes and `test*` functions a test module imports.
/// Only files whose items depend on other files are linked (the others
/// keep their per-file items, which the repository does not change). With
/// \p previous, a file linked before keeps its items unless it is fresh
/// itself or a file its collection read is, or files were added or removed.
/// The files are collected on up to \p jobs threads (0: parallelFor's
/// default).
LinkResult linkPytestItems(llvm::ArrayRef<SourceFile> files,
                           llvm::function_ref<FileSummary *(size_t)> summaryOf,
                           const PytestConfig &config = PytestConfig(),
                           unsigned jobs = 0,
                           const PreviousLink *previous = nullptr);

} // namespace fastci::python

#endif // FASTCI_PYTHON_PYTEST_H
