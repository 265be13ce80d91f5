//===- MarkChanged.cpp - The mark-changed pass ----------------------------===//
//
// mark-changed records a merge request in the Module of its head revision:
// the entities it changed (`change`) and the status and policy decision of
// every file it touched (`changed_file`). The diff comes from a file or from
// `git diff` run on a repository; the old versions of touched Python files,
// needed to name deleted and moved code and to tell cosmetic edits from real
// ones, come from `git show`, from the head checkout with the diff reversed,
// from the diff itself, or from a base-revision module. The mapping is
// ChangeMapper (lib/Diff); docs/Changes.md describes the whole mechanism.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/ChangeMapper.h"
#include "fastci/Diff/DiffAttrs.h"
#include "fastci/Diff/GitRunner.h"
#include "fastci/IR/Module.h"
#include "fastci/IR/Parser.h"
#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Python/Analyzer.h"
#include "fastci/Python/PythonAttrs.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

namespace {

struct MarkChangedPass : PassWrapper<MarkChangedPass> {
  llvm::StringRef getArgument() const override { return "mark-changed"; }
  llvm::StringRef getSummary() const override {
    return "Record a merge request's diff as changed entities and files";
  }
  llvm::StringRef getDescription() const override {
    return "Reads a unified diff (`diff=`) or runs `git diff` on a repository "
           "(`repo=`, `base=`, `head=`), maps every hunk of a Python file to "
           "the innermost entity it touches and classifies the change "
           "(`modified`, `cosmetic`, `added`, `deleted`, `moved`, "
           "`renamed`; a rename with edits is `renamed` with `modified = "
           "true` when the bodies are similar, `rename-similarity=`), and "
           "classifies every other file with the change "
           "policy (`policy=`, default embedded), recording `category`, "
           "`decision` and `reason` on each `changed_file` and "
           "`policy_all` on the module when a file forces every test.";
  }

  Option<std::string> diffFile{
      *this, "diff", llvm::cl::desc("Unified diff of the merge request")};
  Option<std::string> repoDir{
      *this, "repo", llvm::cl::desc("Git repository to diff instead")};
  Option<std::string> baseRev{
      *this, "base", llvm::cl::desc("Base revision (with repo=)")};
  Option<std::string> headRev{
      *this, "head", llvm::cl::desc("Head revision (with repo=)")};
  Option<unsigned> contextLines{
      *this, "context",
      llvm::cl::desc("Lines of context asked of git diff (with repo=)"),
      llvm::cl::init(3u)};
  Option<std::string> policyFile{
      *this, "policy",
      llvm::cl::desc("Change policy (default: the one FastCI ships)")};
  Option<std::string> baseModuleFile{
      *this, "base-module",
      llvm::cl::desc("Module of the base revision, for old entities")};
  Option<std::string> rootDir{
      *this, "root",
      llvm::cl::desc("Checkout of the head revision (default: the module's "
                     "`root` attribute), to rebuild old files from")};
  Option<double> renameSimilarity{
      *this, "rename-similarity",
      llvm::cl::desc("Least token similarity (0-1) at which a deleted and an "
                     "added entity of one scope are one entity renamed and "
                     "edited; 0 disables"),
      llvm::cl::init(kDefaultRenameSimilarity)};
  Option<bool> verbose{
      *this, "verbose",
      llvm::cl::desc("Report the git commands and each file's decision"),
      llvm::cl::init(false)};

  Statistic numFiles{this, "num-files", "Files the diff touches"};
  Statistic numPythonFiles{this, "num-python-files",
                           "Python files mapped to entities"};
  Statistic numChanges{this, "num-changes", "Changed entities recorded"};
  Statistic numCosmetic{this, "num-cosmetic", "Cosmetic-only changes"};
  Statistic numMoves{this, "num-moves", "Moves and renames paired"};
  Statistic numEditedMoves{this, "num-edited-moves",
                           "Moves and renames paired by body similarity"};
  Statistic numOldParsed{this, "num-old-parsed",
                         "Old versions of Python files parsed"};
  Statistic numAll{this, "num-files-forcing-all",
                   "Files that select every test"};

  ChangePolicy policy;
  /// The old texts of touched Python files by old path, as parsed for the
  /// old module, for comparing the bodies of deleted and added entities.
  llvm::StringMap<std::string> oldTexts;

  LogicalResult initialize(DiagnosticEngine &diag) override;
  void runOnModule() override;

private:
  LogicalResult readPatch(Patch &patch, std::optional<GitRunner> &git,
                          std::string &mergeBase);
  std::unique_ptr<Module> buildOldModule(const Patch &patch, GitRunner *git,
                                         llvm::StringRef mergeBase);
  std::string getRoot();
  LogicalResult fail(const llvm::Twine &message) {
    getDiagnostics().error(getLoc(), message);
    signalPassFailure();
    return failure();
  }
};

} // namespace

LogicalResult MarkChangedPass::initialize(DiagnosticEngine &diag) {
  auto error = [&](const llvm::Twine &message) {
    diag.error(getLoc(), "mark-changed: " + message);
    return failure();
  };
  bool fromDiff = !diffFile.getValue().empty();
  bool fromRepo = !repoDir.getValue().empty();
  if (fromDiff == fromRepo)
    return error("give either diff=<file> or repo=<dir> with base= and head=");
  if (fromRepo && (baseRev.getValue().empty() || headRev.getValue().empty()))
    return error("repo= needs both base= and head=");
  if (fromDiff && (!baseRev.getValue().empty() || !headRev.getValue().empty()))
    return error("base= and head= only apply with repo=");
  if (fromDiff && contextLines.getValue() != 3)
    return error("context= only applies with repo=");
  if (!(renameSimilarity.getValue() >= 0 && renameSimilarity.getValue() <= 1))
    return error("rename-similarity= must be between 0 and 1");

  std::unique_ptr<llvm::MemoryBuffer> buffer;
  if (policyFile.getValue().empty()) {
    buffer = llvm::MemoryBuffer::getMemBuffer(getDefaultChangePolicyText(),
                                              "<default change policy>");
  } else {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
        llvm::MemoryBuffer::getFile(policyFile.getValue(), /*IsText=*/false,
                                    /*RequiresNullTerminator=*/false);
    if (!file) {
      diag.emit(Severity::Error, policyFile.getValue(), 0, 0,
                "cannot read change policy: " + file.getError().message());
      return failure();
    }
    buffer = std::move(*file);
  }
  return ChangePolicy::parse(diag.addBuffer(std::move(buffer)), diag, policy);
}

LogicalResult MarkChangedPass::readPatch(Patch &patch,
                                         std::optional<GitRunner> &git,
                                         std::string &mergeBase) {
  DiagnosticEngine &diag = getDiagnostics();
  Module &module = getModule();
  if (!diffFile.getValue().empty()) {
    module.getAttrs().set(diff::attr::kChangeSource,
                          Attribute::getString(diffFile.getValue()));
    return parseUnifiedDiffFile(diffFile.getValue(), diag, patch);
  }

  llvm::Expected<GitRunner> runner = GitRunner::create(repoDir.getValue());
  if (!runner)
    return fail("mark-changed: " + llvm::toString(runner.takeError()));
  git.emplace(std::move(*runner));
  // `base...head` semantics: diff from the merge base, so that commits that
  // landed on the base branch meanwhile are not part of the change.
  llvm::Expected<std::string> base =
      git->getMergeBase(baseRev.getValue(), headRev.getValue());
  if (!base)
    return fail("mark-changed: " + llvm::toString(base.takeError()));
  mergeBase = *base;
  llvm::Expected<std::string> text =
      git->getDiff(mergeBase, headRev.getValue(), contextLines.getValue());
  if (!text)
    return fail("mark-changed: " + llvm::toString(text.takeError()));
  std::string name = "git diff " + baseRev.getValue() + "..." +
                     headRev.getValue();
  module.getAttrs().set(diff::attr::kChangeSource, Attribute::getString(name));
  unsigned id =
      diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(*text, name));
  return parseUnifiedDiff(id, diag, patch);
}

/// The head checkout: `root=`, else the module's `root` attribute.
std::string MarkChangedPass::getRoot() {
  std::string root = rootDir.getValue();
  if (root.empty())
    if (const Attribute *attr =
            getModule().getAttrs().lookup(python::attr::kRoot))
      root = attr->asString().value_or("").str();
  return root;
}

std::unique_ptr<Module>
MarkChangedPass::buildOldModule(const Patch &patch, GitRunner *git,
                                llvm::StringRef mergeBase) {
  DiagnosticEngine &diag = getDiagnostics();
  Module &module = getModule();
  oldTexts.clear();
  if (!baseModuleFile.getValue().empty())
    return parseModuleFile(baseModuleFile.getValue(), diag);

  std::string root = getRoot();

  auto old = std::make_unique<Module>();
  ModuleNamer namer(module);
  for (const FileDiff &file : patch.files) {
    if (file.oldPath.empty() || file.isBinary ||
        !policy.match(file.oldPath) ||
        policy.match(file.oldPath)->action != PolicyAction::Python)
      continue;
    // The old text, from the best source available.
    std::optional<std::string> text;
    if (git) {
      llvm::Expected<std::string> shown = git->getFileAt(mergeBase, file.oldPath);
      if (shown)
        text = std::move(*shown);
      else
        diag.warning(file.loc, llvm::toString(shown.takeError()));
    } else if (!root.empty() && !file.newPath.empty()) {
      llvm::SmallString<256> path(root);
      llvm::sys::path::append(path, file.newPath);
      if (auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                                    false))
        text = reconstructOldFile(file, (*buffer)->getBuffer());
      if (!text)
        diag.warning(file.loc, "cannot rebuild the old version of '" +
                                   file.oldPath + "' from '" + path + "'");
    }
    if (!text)
      text = reconstructOldFileFromDiff(file);
    if (!text)
      continue;

    std::string moduleName = namer.getName(file.oldPath);
    python::FileSummary summary =
        python::analyzePythonSource(*text, file.oldPath, moduleName);
    ++numOldParsed;
    EntityId fileId = old->addEntity(EntityKind::File, file.oldPath);
    EntityId moduleId = old->addEntity(
        EntityKind::Module, moduleName, fileId,
        {1, 0, std::max(summary.numLines, 1u), 0}, summary.moduleHash);
    std::vector<EntityId> ids;
    for (const python::EntitySummary &entity : summary.entities) {
      EntityId parent = entity.parent == python::kModuleScope
                            ? moduleId
                            : ids[entity.parent];
      EntityId id = old->addEntity(entity.kind,
                                   moduleName + "." + entity.qualname, parent,
                                   entity.range, entity.hash);
      if (!entity.decorators.empty()) {
        old->getEntity(id).attrs.set(
            python::attr::kDecorators,
            Attribute::getStringList(entity.decorators));
        // With the text at hand, place decorators spanning several lines.
        if (std::optional<uint32_t> line = findDecoratorStart(
                *text, entity.range.startLine, entity.decorators.size()))
          old->getEntity(id).attrs.set(diff::attr::kDecoratorLine,
                                       Attribute::getInt(*line));
      }
      ids.push_back(id);
    }
    oldTexts[file.oldPath] = std::move(*text);
  }
  return old;
}

void MarkChangedPass::runOnModule() {
  DiagnosticEngine &diag = getDiagnostics();
  Module &module = getModule();
  Patch patch;
  std::optional<GitRunner> git;
  std::string mergeBase;
  LogicalResult read = readPatch(patch, git, mergeBase);
  if (git)
    module.getAttrs().set(diff::attr::kGitCommands,
                          Attribute::getStringList(git->getCommands()));
  if (failed(read))
    return signalPassFailure();

  std::unique_ptr<Module> old =
      buildOldModule(patch, git ? &*git : nullptr, mergeBase);
  if (!old)
    return signalPassFailure();
  if (git)
    module.getAttrs().set(diff::attr::kGitCommands,
                          Attribute::getStringList(git->getCommands()));
  if (verbose && git)
    for (const std::string &command : git->getCommands())
      diag.emit(Severity::Remark, getLoc(), "mark-changed ran: " + command);

  ChangeMapper mapper(module, policy, diag, old.get());
  mapper.setRenameSimilarity(renameSimilarity.getValue());
  // Without them (base-module=), the mapper rebuilds old texts itself.
  if (!oldTexts.empty())
    mapper.setOldSourceReader(
        [this](llvm::StringRef path) -> std::optional<std::string> {
          auto it = oldTexts.find(path);
          if (it == oldTexts.end())
            return std::nullopt;
          return it->second;
        });
  // The module's ranges describe the head checkout, so its files are the
  // new versions whose decorators the mapper places. Without `root=`, the
  // repository's work tree is that checkout (parse-python ran on it).
  std::string root = getRoot();
  if (root.empty())
    root = repoDir.getValue();
  if (!root.empty())
    mapper.setNewSourceReader(
        [root](llvm::StringRef path) -> std::optional<std::string> {
          llvm::SmallString<256> full(root);
          llvm::sys::path::append(full, path);
          auto buffer =
              llvm::MemoryBuffer::getFile(full, /*IsText=*/false, false);
          if (!buffer)
            return std::nullopt;
          return (*buffer)->getBuffer().str();
        });
  if (failed(mapper.map(patch)))
    return signalPassFailure();
  const ChangeMapperStats &stats = mapper.getStats();
  numFiles += stats.files;
  numPythonFiles += stats.pythonFiles;
  numChanges += stats.changes;
  numCosmetic += stats.cosmetic;
  numMoves += stats.moves;
  numEditedMoves += stats.editedMoves;
  numAll += stats.filesForcingAll;

  if (verbose)
    for (const ChangedFile &file : module.getChangedFiles())
      diag.emit(Severity::Remark, getLoc(),
                "mark-changed: " + file.path + ": " +
                    file.attrs.get(diff::attr::kDecision).str() + " (" +
                    file.attrs.get(diff::attr::kReason).str() + ")");
}

namespace fastci {
void registerMarkChangedPasses() { PassRegistration<MarkChangedPass>(); }
} // namespace fastci
