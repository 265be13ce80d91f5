//===- SourceTree.cpp - Finding the Python files of a repository ----------===//
//
// A depth-first walk that carries the stack of .gitignore files in effect and
// the identities of the directories above it (to break symlink cycles). The
// walk is cheap next to parsing, so it stays sequential and simple;
// parallelism starts once the file list is known. A warm run parses nothing,
// so there the walk shows: it stats only what it must (Python files and
// links), taking every other entry's type from the directory listing.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/SourceTree.h"
#include "fastci/Python/GitIgnore.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <chrono>
#include <set>

using namespace fastci;
using namespace fastci::python;
using llvm::StringRef;
namespace fs = llvm::sys::fs;

bool fastci::python::isSkippedDirectoryName(StringRef name) {
  static const char *const kSkipped[] = {".git",
                                         ".hg",
                                         ".svn",
                                         "build",
                                         "dist",
                                         ".venv",
                                         "venv",
                                         "__pycache__",
                                         "site-packages",
                                         ".tox",
                                         ".nox",
                                         "node_modules",
                                         ".mypy_cache",
                                         ".pytest_cache",
                                         ".ruff_cache",
                                         ".eggs",
                                         ".ipynb_checkpoints"};
  return llvm::is_contained(kSkipped, name) || name.ends_with(".egg-info");
}

bool fastci::python::matchesAnyGlob(llvm::ArrayRef<std::string> globs,
                                    StringRef path) {
  StringRef basename = path.substr(path.rfind('/') + 1);
  return llvm::any_of(globs, [&](const std::string &glob) {
    StringRef pattern = glob;
    if (!pattern.contains('/'))
      return matchGlob(pattern, basename);
    pattern.consume_front("/");
    return matchGlob(pattern, path);
  });
}

std::string fastci::python::computeModuleName(
    StringRef path, llvm::function_ref<bool(StringRef)> isPackage) {
  llvm::SmallVector<StringRef, 8> parts;
  path.split(parts, '/');
  // The nearest `src` directory that is not a package is the import root.
  size_t first = 0;
  for (size_t i = parts.size() - 1; i-- > 0;) {
    if (parts[i] != "src")
      continue;
    std::string dir = llvm::join(llvm::ArrayRef(parts).take_front(i + 1), "/");
    if (!isPackage(dir)) {
      first = i + 1;
      break;
    }
  }
  StringRef &last = parts.back();
  last.consume_back(".py");
  if (last == "__init__" && parts.size() - first > 1)
    parts.pop_back();
  return llvm::join(llvm::ArrayRef(parts).drop_front(first), ".");
}

namespace {
/// The state of one walk.
class Walker {
public:
  Walker(const SourceTreeOptions &options, DiagnosticEngine &diag)
      : options(options), diag(diag) {}

  /// Walks \p absDir; a directory other than the root that holds
  /// `pyvenv.cfg` is a virtual environment and is skipped.
  void walk(StringRef relDir, StringRef absDir, bool isRoot);

  /// Selected files: path relative to the root, and size.
  struct FoundFile {
    std::string path;
    uint64_t size;
    int64_t mtimeNs;
  };
  std::vector<FoundFile> files;
  llvm::StringSet<> packages;

private:
  void warn(StringRef path, const llvm::Twine &message) {
    diag.emit(Severity::Warning, path, 0, 0, message);
  }

  const SourceTreeOptions &options;
  DiagnosticEngine &diag;
  GitIgnoreStack ignores = loadRepositoryIgnores(options.root);
  std::set<fs::UniqueID> ancestors;
};
} // namespace

void Walker::walk(StringRef relDir, StringRef absDir, bool isRoot) {
  fs::file_status dirStatus;
  if (std::error_code ec = fs::status(absDir, dirStatus)) {
    warn(absDir, "cannot read directory: " + ec.message());
    return;
  }

  // The listing comes first: readdir's entry types make a stat unnecessary
  // for everything but the Python files and symbolic links, and the
  // listing answers whether .gitignore or pyvenv.cfg exist (two lookups per
  // directory otherwise).
  struct Entry {
    std::string name;
    bool isDir;
    uint64_t size;
    int64_t mtimeNs;
  };
  std::vector<Entry> entries;
  bool hasGitIgnoreFile = false;
  std::error_code ec;
  auto toNs = [](llvm::sys::TimePoint<> time) {
    return static_cast<int64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            time.time_since_epoch())
            .count());
  };
  for (fs::directory_iterator it(absDir, ec, /*follow_symlinks=*/false), end;
       it != end && !ec; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    fs::file_type type = it->type();
    if (name == ".gitignore")
      hasGitIgnoreFile = true;
    // A directory holding pyvenv.cfg is a virtual environment.
    if (name == "pyvenv.cfg" && !isRoot)
      return;
    if (type == fs::file_type::directory_file) {
      entries.push_back({name.str(), true, 0, 0});
      continue;
    }
    // Only Python files need their size and time; other regular files are
    // not looked at.
    if (type == fs::file_type::regular_file && !name.ends_with(".py"))
      continue;
    // Follow symbolic links (and entries whose type readdir did not give);
    // a dangling one is not worth a warning.
    fs::file_status status;
    if (fs::status(it->path(), status, /*follow=*/true))
      continue;
    type = status.type();
    if (type == fs::file_type::directory_file)
      entries.push_back({name.str(), true, 0, 0});
    else if (type == fs::file_type::regular_file && name.ends_with(".py"))
      entries.push_back({name.str(), false, status.getSize(),
                         toNs(status.getLastModificationTime())});
  }
  if (ec) {
    warn(absDir, "cannot read directory: " + ec.message());
    return;
  }

  if (!ancestors.insert(dirStatus.getUniqueID()).second) {
    warn(absDir, "symbolic link loop; directory skipped");
    return;
  }
  auto leave =
      llvm::make_scope_exit([&] { ancestors.erase(dirStatus.getUniqueID()); });

  bool hasGitIgnore = false;
  if (hasGitIgnoreFile) {
    llvm::SmallString<256> gitignorePath(absDir);
    llvm::sys::path::append(gitignorePath, ".gitignore");
    if (auto buffer = llvm::MemoryBuffer::getFile(gitignorePath)) {
      ignores.push(GitIgnoreFile(relDir, (*buffer)->getBuffer()));
      hasGitIgnore = true;
    } else if (buffer.getError() != std::errc::no_such_file_or_directory) {
      // (A dangling link is not a .gitignore, as for any other file.)
      warn(gitignorePath, "cannot read: " + buffer.getError().message());
    }
  }
  auto popIgnores = llvm::make_scope_exit([&] {
    if (hasGitIgnore)
      ignores.pop();
  });

  llvm::sort(entries,
             [](const Entry &a, const Entry &b) { return a.name < b.name; });

  for (const Entry &entry : entries) {
    std::string relPath =
        relDir.empty() ? entry.name : (relDir + "/" + entry.name).str();
    if (entry.isDir) {
      if (isSkippedDirectoryName(entry.name) ||
          ignores.isIgnored(relPath, /*isDir=*/true) ||
          matchesAnyGlob(options.exclude, relPath))
        continue;
      llvm::SmallString<256> child(absDir);
      llvm::sys::path::append(child, entry.name);
      walk(relPath, child, /*isRoot=*/false);
      continue;
    }
    if (entry.name == "__init__.py")
      packages.insert(relDir);
    if (ignores.isIgnored(relPath, /*isDir=*/false) ||
        matchesAnyGlob(options.exclude, relPath))
      continue;
    if (!options.include.empty() && !matchesAnyGlob(options.include, relPath))
      continue;
    files.push_back({std::move(relPath), entry.size, entry.mtimeNs});
  }
}

std::vector<SourceFile>
fastci::python::collectSourceFiles(const SourceTreeOptions &options,
                                   DiagnosticEngine &diag, bool &failed) {
  failed = false;
  if (!fs::is_directory(options.root)) {
    diag.emit(Severity::Error, options.root, 0, 0,
              "repository root is not a readable directory");
    failed = true;
    return {};
  }
  Walker walker(options, diag);
  walker.walk("", options.root, /*isRoot=*/true);
  llvm::sort(walker.files,
             [](const auto &a, const auto &b) { return a.path < b.path; });
  std::vector<SourceFile> result;
  result.reserve(walker.files.size());
  for (auto &[path, size, mtimeNs] : walker.files) {
    std::string module = computeModuleName(
        path, [&](StringRef dir) { return walker.packages.contains(dir); });
    result.push_back({std::move(path), std::move(module), size, mtimeNs});
  }
  return result;
}
