#pragma once
// Note [Data checks at submission]
// When the workers see the controller's filesystem (Launcher::sharesFilesystem: the local
// launcher), a job whose data are files gets the cheap checks at submission, so that a wrong
// path or a truncated file is refused with the others instead of failing every worker later:
// for `tokens`, each file of spec.data.train.path (and val.path) exists, has a valid llm.c
// header (or is a whole number of raw tokens of the declared dtype), is as long as its header
// says, and together they hold one window (contextLength + 1 tokens); for `text`, the files
// exist and hold one window of bytes. No file is read whole. What only reading finds (a token
// >= vocabSize) stays the worker's (a non-retryable failure naming the file and offset).
// Thread model: a pure function of the spec and the filesystem.

#include "common/jobspec/job_spec.h"
#include "common/status.h"

namespace ddp::controller {

// InvalidArgument / NotFound / PermissionDenied naming the field ("spec.data.train.path: ...")
// and the file; OK for datasets that are not files.
Status checkDataFiles(const JobSpec& spec);

}  // namespace ddp::controller
