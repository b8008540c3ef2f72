#pragma once
// Internal: writing a file atomically (temporary file, fsync, rename, directory fsync).

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

}  // namespace kiln::io
