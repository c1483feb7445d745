// ddp-worker: one training worker. All logic lives in worker/control (worker_entry.h).
#include "worker/control/worker_entry.h"

int main(int argc, char** argv) { return ddp::runtime::runWorker(argc, argv); }
