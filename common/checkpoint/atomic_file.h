#pragma once
// Durable file I/O for checkpoints: a file is either absent or complete, never half written.
//
// Note [Atomic file write]
// writeFileAtomic writes to a temporary file in the same directory ("<name>.tmp.<pid>"),
// fsyncs it, renames it over the destination (rename is atomic within one filesystem), then
// fsyncs the directory so the rename itself survives a crash. A reader therefore sees either
// the old contents, no file, or the whole new file; a crash leaves at most a stray *.tmp.*
// file, which the checkpoint layer ignores and retention removes.
// Thread model: free functions, no shared state; concurrent writers of the same path are the
// caller's problem (each rank writes its own file).

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ddp::runtime {

// Writes `data` to `path` atomically and durably (Note [Atomic file write]).
Status writeFileAtomic(const std::string& path, std::string_view data);
// Reads the whole file. NotFound if absent; Unavailable for other I/O errors.
Result<std::string> readFile(const std::string& path);
// mkdir -p; fsyncs each parent whose entry it created.
Status makeDirs(const std::string& path);
// Removes a file or a directory tree; ok if absent.
Status removeAll(const std::string& path);
// Names of the entries in a directory (no "." or ".."), sorted. NotFound if absent.
Result<std::vector<std::string>> listDir(const std::string& path);
// fsync on a directory so entries created/renamed in it are durable.
Status syncDir(const std::string& path);
bool pathExists(const std::string& path);

}  // namespace ddp::runtime
