//===- GitRunner.cpp - Asking a repository for diffs and old files --------===//
//
// Each command runs through llvm::sys::ExecuteAndWait with stdout and stderr
// redirected to temporary files, which are read back and removed. Git's
// configuration can change diff output (external diff drivers, colour,
// prefixes, path quoting), so every diff pins the options it depends on.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/GitRunner.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

using namespace fastci;

llvm::Expected<GitRunner> GitRunner::create(llvm::StringRef repoDir) {
  if (!llvm::sys::fs::is_directory(repoDir))
    return llvm::createStringError(
        std::make_error_code(std::errc::not_a_directory),
        "repository '%s' is not a directory", repoDir.str().c_str());
  llvm::ErrorOr<std::string> git = llvm::sys::findProgramByName("git");
  if (!git)
    return llvm::createStringError(git.getError(),
                                   "cannot find 'git' on PATH");
  return GitRunner(*git, repoDir.str());
}

/// Quotes \p arg for display when a shell would split or expand it.
static std::string shellQuote(llvm::StringRef arg) {
  if (!arg.empty() && llvm::all_of(arg, [](char c) {
        return llvm::isAlnum(c) || llvm::StringRef("-_./=:@^~+,").contains(c);
      }))
    return arg.str();
  std::string quoted = "'";
  for (char c : arg)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// Reads and removes the temporary file \p path.
static std::string takeFile(llvm::StringRef path) {
  std::string contents;
  if (auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                                /*RequiresNullTerminator=*/false))
    contents = (*buffer)->getBuffer().str();
  llvm::sys::fs::remove(path);
  return contents;
}

llvm::Expected<std::string> GitRunner::run(llvm::ArrayRef<std::string> args) {
  std::vector<std::string> argv = {"git", "-C", repoDir};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string command;
  for (const std::string &arg : argv)
    command += (command.empty() ? "" : " ") + shellQuote(arg);
  commands.push_back(command);

  llvm::SmallString<128> outPath, errPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("fastci-git", "out", outPath))
    return llvm::createStringError(ec, "cannot create a temporary file");
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("fastci-git", "err", errPath)) {
    llvm::sys::fs::remove(outPath);
    return llvm::createStringError(ec, "cannot create a temporary file");
  }
  std::vector<llvm::StringRef> argRefs(argv.begin(), argv.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, outPath.str(),
                                                errPath.str()};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(git, argRefs, /*Env=*/std::nullopt,
                                         redirects, /*SecondsToWait=*/0,
                                         /*MemoryLimit=*/0, &message);
  std::string out = takeFile(outPath);
  std::string err = llvm::StringRef(takeFile(errPath)).trim().str();
  if (status != 0)
    return llvm::createStringError(
        std::make_error_code(std::errc::io_error), "'%s' failed: %s",
        command.c_str(),
        (!err.empty() ? err
         : !message.empty()
             ? message
             : llvm::formatv("exit status {0}", status).str())
            .c_str());
  return out;
}

llvm::Expected<std::string> GitRunner::getMergeBase(llvm::StringRef base,
                                                    llvm::StringRef head) {
  llvm::Expected<std::string> out =
      run({"merge-base", base.str(), head.str()});
  if (!out)
    return out.takeError();
  return llvm::StringRef(*out).trim().str();
}

llvm::Expected<std::string> GitRunner::getDiff(llvm::StringRef from,
                                               llvm::StringRef to,
                                               unsigned context) {
  return run({"-c", "core.quotePath=true", "diff", "--no-color",
              "--no-ext-diff", "--no-textconv", "--find-renames",
              "--src-prefix=a/", "--dst-prefix=b/",
              "-U" + std::to_string(context), from.str(), to.str(), "--"});
}

llvm::Expected<std::string> GitRunner::getFileAt(llvm::StringRef revision,
                                                 llvm::StringRef path) {
  return run({"show", (revision + ":" + path).str()});
}
