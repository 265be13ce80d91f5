//===- LogicalResult.h - Success/failure without exceptions -----*- C++ -*-===//
//
// A two-state result type for operations that report their problems through
// the diagnostic engine and only need to tell the caller whether they
// succeeded, in the style of mlir::LogicalResult. I/O boundaries that carry
// their own message use llvm::Error / llvm::Expected instead.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SUPPORT_LOGICALRESULT_H
#define FASTCI_SUPPORT_LOGICALRESULT_H

namespace fastci {

/// The outcome of an operation whose errors were already reported.
class [[nodiscard]] LogicalResult {
public:
  /// Builds a successful result when \p isSuccess is true.
  static LogicalResult success(bool isSuccess = true) {
    return LogicalResult(isSuccess);
  }
  /// Builds a failed result when \p isFailure is true.
  static LogicalResult failure(bool isFailure = true) {
    return LogicalResult(!isFailure);
  }
  /// True if the operation succeeded.
  bool succeeded() const { return isSuccess; }
  /// True if the operation failed.
  bool failed() const { return !isSuccess; }

private:
  explicit LogicalResult(bool isSuccess) : isSuccess(isSuccess) {}
  bool isSuccess;
};

/// Shorthand for LogicalResult::success.
inline LogicalResult success(bool isSuccess = true) {
  return LogicalResult::success(isSuccess);
}
/// Shorthand for LogicalResult::failure.
inline LogicalResult failure(bool isFailure = true) {
  return LogicalResult::failure(isFailure);
}
/// True if \p result is a success.
inline bool succeeded(LogicalResult result) { return result.succeeded(); }
/// True if \p result is a failure.
inline bool failed(LogicalResult result) { return result.failed(); }

} // namespace fastci

#endif // FASTCI_SUPPORT_LOGICALRESULT_H
