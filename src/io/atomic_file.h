#pragma once
// Internal: writing files atomically (temporary file, fsync, rename, directory fsync).

#include <functional>
#include <iosfwd>
#include <string>

namespace kiln::io {

/// Writes the file at `path` atomically. `write` fills a stream backed by a temporary file in the
/// same directory ("<path>.tmp.<pid>.<random>"); the temporary is then flushed, fsync'ed and
/// renamed over `path`, and the directory is fsync'ed so the rename survives a crash. Readers
/// see either the old file or the complete new one, never a partial file.
///
/// On failure the temporary is removed and `path` is left as it was: a failed system call or a
/// stream that `write` leaves failed is a kiln::Error naming the path and the errno text; an
/// exception thrown by `write` propagates unchanged. (If only the final directory fsync fails,
/// the new file is in place but the Error reports that its durability is not guaranteed.)
void WriteFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write);

/// WriteFileAtomically in steps, for writers that commit several files in an order of their own
/// (a checkpoint renames its weights before the record that refers to them): the constructor
/// writes and fsyncs the temporary, Commit renames it over `path`, and SyncDirectory makes the
/// renames durable. Until Commit, the destructor removes the temporary.
class StagedFile {
 public:
  /// Writes "<path>.tmp.<pid>.<random>" through `write`, then flushes, fsyncs and closes it.
  /// Errors as WriteFileAtomically's, the temporary removed.
  StagedFile(std::string path, const std::function<void(std::ostream&)>& write);
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  /// Renames the temporary over the path (the directory is not fsync'ed). A failure is a
  /// kiln::Error naming both files.
  void Commit();

 private:
  std::string path_;
  std::string temp_;
  bool committed_ = false;
};

/// fsyncs the directory `dir`, so that the renames and removals in it survive a crash (file
/// systems that cannot fsync directories are left as they are). A failure is a kiln::Error
/// naming the directory and the errno text.
void SyncDirectory(const std::string& dir);

}  // namespace kiln::io
