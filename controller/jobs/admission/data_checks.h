#pragma once
// Note [Data checks at submission]
// When the workers see the controller's filesystem (Launcher::sharesFilesystem: the local
// launcher), a job whose data are files gets the cheap checks at submission, so that a wrong
// path or a truncated file is refused with the others instead of failing every worker later:
// for `tokens`, each file of spec.data.train.path (and val.path) exists, has a valid llm.c
// header (or is a whole number of raw tokens of the declared dtype), is as long as its header
// says, and together they hold one window (contextLength + 1 tokens); for `text`, the files
// exist and hold one window of bytes; for `idx`, `npy` and `csv` the checks of
// common/datafiles/user_data_files.h (each file exists, its header parses, sizes agree with it,
// features and targets count the same samples, the CSV header has spec.data.target, both splits
// have one sample shape), then that a cnn gets 1x28x28 samples, that the targets are class
// labels (float targets need a regression loss), and that spec.data.standardize's lists have one
// value or one per feature. No file is read whole. What only reading finds (a token >=
// vocabSize, a non-numeric CSV cell, a label >= spec.data.classes) stays the worker's (a
// non-retryable failure naming the file and where in it). The worker runs the same file checks
// before its first step, for launchers whose workers see another filesystem.
// Thread model: a pure function of the spec and the filesystem.

#include <string>
#include <utility>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/status.h"

namespace ddp::controller {

// InvalidArgument / NotFound / PermissionDenied naming the field ("spec.data.train.path: ...")
// and the file; OK for datasets that are not files.
Status checkDataFiles(const JobSpec& spec);
// The user-data part of checkDataFiles (idx, npy, csv); OK for other datasets.
Status checkUserDataFiles(const JobSpec& spec);
// The files a spec's idx, npy or csv data names, with their fields ("spec.data.train.path"),
// for the path policy (Note [Allowed path roots]); empty for other datasets.
std::vector<std::pair<std::string, std::string>> userDataPaths(const JobSpec& spec);

}  // namespace ddp::controller
