#!/usr/bin/env python3
"""The PyTorch baseline of bench_train's GPU rows: the same jobs in PyTorch eager on the same card.

   python3 bench/torch/train_torch.py --data-dir DIR [--models cnn,mlp_wide] [--steps 500]
                                      [--batch 256] [--warmup 20]

Same model (the CNN: conv 1->8 k3 p1, maxpool 2, relu, conv 8->16, maxpool 2, relu, fc 784->128,
relu, fc 128->10; mlp_wide: 784-4096-4096-10 with relu), same data (the Fashion-MNIST IDX files
in DIR, gzip or plain: the first 16384 training samples, as bench_train's spec.data.limit), same
batch (256), optimizer (Adam, lr 0.001) and precision (float32 with TF32 off, as the project's
cuBLAS calls use the default math mode) under DistributedDataParallel at world size 1 over NCCL
(the project's GPU rows run a world of one too). Each step takes a random batch from host memory,
copies it to the device, runs forward, cross-entropy, backward and the optimizer step. The timed
span is --steps steps after --warmup steps, between two device synchronisations.

Prints one JSON line per model: {"bench":"train_torch","model","workers":1,"samples_per_s",
"step_ms","steps","batch","device","torch"}; exit 77 when no CUDA device is visible.
"""
import argparse
import gzip
import json
import os
import sys
import tempfile
import time


def read_idx(path):
    import numpy as np
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(data_dir, stem):
    for name in (stem + ".gz", stem):
        if os.path.exists(os.path.join(data_dir, name)):
            return os.path.join(data_dir, name)
    raise FileNotFoundError(f"{stem}[.gz] not in {data_dir}")


def model_of(name, torch):
    nn = torch.nn
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.MaxPool2d(2), nn.ReLU(),
                             nn.Conv2d(8, 16, 3, padding=1), nn.MaxPool2d(2), nn.ReLU(),
                             nn.Flatten(), nn.Linear(16 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    if name == "mlp_wide":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 4096), nn.ReLU(), nn.Linear(4096, 4096),
                             nn.ReLU(), nn.Linear(4096, 10))
    raise ValueError(f"unknown model {name}")


def run(name, images, labels, args, torch, dist):
    device = torch.device("cuda", 0)
    torch.manual_seed(1)
    model = torch.nn.parallel.DistributedDataParallel(model_of(name, torch).to(device), device_ids=[0])
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(1)
    n = images.shape[0]

    def step():
        idx = torch.randint(0, n, (args.batch,), generator=gen)
        x = images[idx].to(device)
        y = labels[idx].to(device)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    return {"bench": "train_torch", "model": name, "workers": 1,
            "samples_per_s": args.steps * args.batch / elapsed, "step_ms": 1e3 * elapsed / args.steps,
            "steps": args.steps, "batch": args.batch, "final_loss": float(loss.item()),
            "device": torch.cuda.get_device_name(0), "torch": torch.__version__}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--models", default="cnn,mlp_wide")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--limit", type=int, default=16384)
    args = ap.parse_args()
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print(f"train_torch: skipped: PyTorch is not installed ({e})", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("train_torch: skipped: no CUDA device is visible", file=sys.stderr)
        return 77
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    raw = read_idx(find(args.data_dir, "train-images-idx3-ubyte"))[: args.limit]
    images = torch.from_numpy(raw.copy()).float().div_(255.0).unsqueeze(1)
    labels = torch.from_numpy(read_idx(find(args.data_dir, "train-labels-idx1-ubyte"))[: args.limit].copy()).long()
    with tempfile.TemporaryDirectory() as tmp:
        dist.init_process_group("nccl", init_method=f"file://{tmp}/store", rank=0, world_size=1,
                                device_id=torch.device("cuda", 0))
        try:
            for name in [m for m in args.models.split(",") if m]:
                print(json.dumps(run(name, images, labels, args, torch, dist)), flush=True)
        finally:
            dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
