#!/usr/bin/python3
"""The PyTorch baseline of bench_train's GPT rows: the same GPT job in PyTorch eager on the CPU.

   /usr/bin/python3 bench/torch/train_gpt_torch.py --tokens DIR [--workers 1|2] [--steps 100]
       [--warmup 5] [--total-steps N] [--batch 16] [--eval-every 0] [--eval-limit 256]
       [--loss-every 0]

Runs with Debian's python3-torch (1.13; `apt-get install python3-torch`), one intra-op thread,
one inter-op thread and one BLAS thread per process (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and
MKL_NUM_THREADS are set to 1 before torch loads). --workers 2 starts two processes of this
script that train under DistributedDataParallel over gloo (a file store in a temporary folder).

The same job as bench_train's GPT rows and examples/gpt-fortunes.yaml:
 - model: byte-level GPT-2 style, vocab 256, context 128, 4 layers, 4 heads, dModel 128, MLP
   4 x dModel; pre-norm LayerNorm (eps 1e-5), a fused QKV projection whose output row is
   [q (heads x headDim) | k | v], causal softmax attention (materialised, as the project's CPU
   ops), GELU (tanh), learned position embeddings, the LM head tied to the token embedding;
   GPT-2 init (N(0, 0.02), residual projections N(0, 0.02 / sqrt(2 layers)), biases 0). The
   init is not the project's bit for bit (another generator), only its distribution.
 - data: DIR/train.bin and DIR/val.bin, llm.c token files (`ddpctl tokenize --bytes`). Training
   windows are Note [Token windows] (worker/data/token_window_sampler.h) exactly: global
   sample i of step s starts at mix(mix(seed, s), i) mod (N - T), rank r takes the samples
   [r b, (r + 1) b); validation: window k starts at k T, the first --eval-limit of them.
 - loss and optimizer: the mean token cross-entropy; AdamW (lr 0.001, betas 0.9/0.95, eps
   1e-8, weight decay 0.1 on the 2-D weights of the linear layers only), the global gradient
   norm clipped to 1.0, the learning rate of the project's cosine schedule (lr_schedule.cc:
   linear warm-up over 100 steps, cosine to 1e-4 at --total-steps).

The timed span is --steps steps after --warmup untimed ones (both count as steps of the
schedule and the data); evaluation (every --eval-every steps and at the end) is outside it.
Prints, from rank 0: {"event":"loss","step","train_loss"} every --loss-every steps (the mean
over every rank's tokens of that step), {"event":"eval","step","val_loss"} and one summary line
{"bench":"train_torch","model":"gpt","workers","tokens_per_s","ms_per_step","steps","batch",
"final_val_loss","torch","threads"}. Exit 77 when PyTorch is not installed.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def split_mix_next(state):
    """SplitMixRng::next of common/split_mix_rng.h from `state`: the output."""
    z = (state + GOLDEN) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def mix(a, b):
    """SplitMixRng::mix(a, b)."""
    return split_mix_next((a ^ ((b + GOLDEN + ((a << 6) & MASK64) + (a >> 2)) & MASK64)) & MASK64)


def read_tokens(path):
    """An llm.c token file (Note [Token file format]) as a numpy array."""
    import numpy as np
    header = np.fromfile(path, dtype="<i4", count=256)
    if header.size != 256 or header[0] != 20240520 or header[1] not in (1, 2):
        raise ValueError(f"{path}: not an llm.c token file (magic 20240520, version 1 or 2)")
    dtype = "<u2" if header[1] == 1 else "<u4"
    tokens = np.memmap(path, dtype=dtype, mode="r", offset=1024)
    if tokens.size != header[2]:
        raise ValueError(f"{path}: the header says {header[2]} tokens, the file holds {tokens.size}")
    return tokens


def lr_at(step, args):
    """LrSchedule::lrAt for the cosine schedule (worker/training/lr_schedule.cc)."""
    if step < args.lr_warmup:
        return args.lr * (step + 1) / args.lr_warmup
    span = args.total_steps - args.lr_warmup
    if span <= 0:
        return args.min_lr
    t = min(max((step - args.lr_warmup) / span, 0.0), 1.0)
    return args.min_lr + (args.lr - args.min_lr) * 0.5 * (1.0 + math.cos(math.pi * t))


def build_model(args, torch):
    nn = torch.nn
    F = torch.nn.functional
    d, heads = args.d_model, args.heads

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(d, eps=1e-5)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.norm2 = nn.LayerNorm(d, eps=1e-5)
            self.fc = nn.Linear(d, 4 * d)
            self.mproj = nn.Linear(4 * d, d)

        def forward(self, x, mask):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(d, dim=2)
            q = q.view(b, t, heads, d // heads).transpose(1, 2)
            k = k.view(b, t, heads, d // heads).transpose(1, 2)
            v = v.view(b, t, heads, d // heads).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // heads))
            att = F.softmax(att.masked_fill(mask[:, :, :t, :t] == 0, float("-inf")), dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
            x = x + self.proj(y)
            return x + self.mproj(F.gelu(self.fc(self.norm2(x)), approximate="tanh"))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(args.vocab, d)
            self.positions = nn.Embedding(args.context, d)
            self.blocks = nn.ModuleList([Block() for _ in range(args.layers)])
            self.norm = nn.LayerNorm(d, eps=1e-5)
            t = args.context
            self.register_buffer("mask", torch.tril(torch.ones(t, t)).view(1, 1, t, t))

        def forward(self, idx, targets):
            pos = torch.arange(idx.shape[1], dtype=torch.long)
            x = self.tokens(idx) + self.positions(pos)
            for blk in self.blocks:
                x = blk(x, self.mask)
            logits = self.norm(x) @ self.tokens.weight.t()  # tied LM head
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))

    model = Gpt()
    residual_std = 0.02 / math.sqrt(2 * args.layers)
    for name, p in model.named_parameters():
        if p.dim() == 2:
            std = residual_std if name.endswith(("proj.weight",)) else 0.02
            torch.nn.init.normal_(p, 0.0, std)
        elif name.endswith("bias"):
            torch.nn.init.zeros_(p)
    return model


def window_batch(tokens, starts, t, torch):
    import numpy as np
    w = np.stack([np.asarray(tokens[s:s + t + 1], dtype=np.int64) for s in starts])
    w = torch.from_numpy(w)
    return w[:, :-1].contiguous(), w[:, 1:].contiguous()


def train_starts(args, step, rank):
    n = args.train_tokens - (args.context + 1) + 1
    first = rank * args.batch
    return [mix(mix(args.seed, step), first + i) % n for i in range(args.batch)]


def evaluate(model, val, args, torch):
    count = (val.size - 1) // args.context
    if args.eval_limit > 0:
        count = min(count, args.eval_limit)
    total, n = 0.0, 0
    with torch.no_grad():
        for k0 in range(0, count, args.batch):
            starts = [k * args.context for k in range(k0, min(count, k0 + args.batch))]
            x, y = window_batch(val, starts, args.context, torch)
            total += float(model(x, y)) * y.numel()
            n += y.numel()
    return total / max(n, 1)


def run_rank(args):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)
    train = read_tokens(os.path.join(args.tokens, "train.bin"))
    val = read_tokens(os.path.join(args.tokens, "val.bin"))
    args.train_tokens = train.size
    model = build_model(args, torch)
    ddp = model
    if args.workers > 1:
        dist.init_process_group("gloo", init_method=f"file://{args.store}", rank=args.rank,
                                world_size=args.workers)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and not n.startswith(("tokens", "positions"))]
    plain = [p for n, p in model.named_parameters() if not (p.dim() == 2 and not n.startswith(("tokens", "positions")))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": plain, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    rank0 = args.rank == 0
    losses = []
    elapsed = 0.0
    total = args.warmup + args.steps
    val_loss = None
    for step in range(total):
        if step == args.warmup:
            t0 = time.perf_counter()
        x, y = window_batch(train, train_starts(args, step, args.rank), args.context, torch)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args)
        opt.zero_grad(set_to_none=True)
        loss = ddp(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        last = step + 1 == total
        if (args.eval_every > 0 and (step + 1) % args.eval_every == 0) or last:
            if step >= args.warmup:
                elapsed += time.perf_counter() - t0
            if rank0:
                val_loss = evaluate(model, val, args, torch)
                print(json.dumps({"event": "eval", "step": step + 1, "val_loss": round(val_loss, 5)}), flush=True)
            if args.workers > 1:
                dist.barrier()
            t0 = time.perf_counter()
    mean = torch.tensor(losses, dtype=torch.float64)
    if args.workers > 1:
        dist.all_reduce(mean)
        mean /= args.workers
        dist.destroy_process_group()
    if not rank0:
        return 0
    if args.loss_every > 0:
        for s in range(0, total, args.loss_every):
            print(json.dumps({"event": "loss", "step": s, "train_loss": round(float(mean[s]), 5)}))
    tokens = args.steps * args.batch * args.context * args.workers
    print(json.dumps({"bench": "train_torch", "model": "gpt", "workers": args.workers,
                      "tokens_per_s": round(tokens / elapsed, 1), "ms_per_step": round(1e3 * elapsed / args.steps, 3),
                      "steps": args.steps, "batch": args.batch, "final_val_loss": round(val_loss, 5),
                      "torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", required=True, help="folder with train.bin and val.bin (llm.c token files)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--steps", type=int, default=100, help="timed steps")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    ap.add_argument("--total-steps", type=int, default=0, help="the schedule's length (0: warmup + steps)")
    ap.add_argument("--batch", type=int, default=16, help="windows per worker")
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--min-lr", type=float, default=0.0001)
    ap.add_argument("--lr-warmup", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=0)
    ap.add_argument("--eval-limit", type=int, default=256)
    ap.add_argument("--loss-every", type=int, default=0)
    ap.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    ap.add_argument("--store", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.total_steps <= 0:
        args.total_steps = args.warmup + args.steps
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"train_gpt_torch: skipped: PyTorch is not installed ({e})", file=sys.stderr)
        return 77
    if args.rank >= 0 or args.workers == 1:
        args.rank = max(args.rank, 0)
        return run_rank(args)
    with tempfile.TemporaryDirectory() as tmp:
        base = [sys.executable, os.path.abspath(__file__)] + sys.argv[1:]
        procs = [subprocess.Popen(base + ["--rank", str(r), "--store", os.path.join(tmp, "store")])
                 for r in range(args.workers)]
        deadline = time.monotonic() + 3600
        codes = []
        for p in procs:
            try:
                codes.append(p.wait(timeout=max(1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append(124)
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
