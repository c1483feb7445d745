// ddp-worker: one training worker. All logic lives in worker/runtime (worker_entry.h).
#include "worker/runtime/worker_entry.h"

int main(int argc, char** argv) { return ddp::runtime::runWorker(argc, argv); }
