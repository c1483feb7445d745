#!/usr/bin/env python3
"""Rows of the GPU check (scripts/gpu_check.sh): one JSON object per line in results.jsonl.

Every row has "kind" (env, library, test, job, bench, ratio), "name", "result" (passed, failed,
skipped, measured) and "message"; benchmark rows carry the benchmark's own fields. Subcommands:
  row RESULTS KIND NAME RESULT MESSAGE      one row
  gtest RESULTS BINARY JSON LOG RC GPUS     a gtest program's --gtest_output=json, one row per test
                                            (GPUS 0: a skip must name the missing device)
  bench RESULTS NAME FILE RC                a benchmark's JSON lines (rc 77: skipped)
  jobs RESULTS CPU_LOG CUDA_LOG             the same job on cpu and cuda: accuracy and loss curve
  ratios RESULTS                            ours against PyTorch, from the bench rows
  summary RESULTS                           a short table; exit 1 if any row failed
Standard library only (it runs on this machine's python3 and the GPU machine's).
"""
import json
import os
import re
import sys

ACCURACY_TOLERANCE = 0.015   # cuda vs cpu test accuracy, absolute (float rounding differs)
LOSS_TOLERANCE = 0.10        # mean relative gap of the step-loss curves
STEP_RATIO_TARGET = 1.0      # our step time over PyTorch eager's


def append(results, row):
    with open(results, "a") as f:
        f.write(json.dumps(row) + "\n")


def row(results, kind, name, result, message, **fields):
    append(results, dict(kind=kind, name=name, result=result, message=message, **fields))


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def skip_messages(log_path):
    """Test name -> the message of its GTEST_SKIP (gtest's JSON report leaves it out)."""
    out, current, lines = {}, None, []
    try:
        with open(log_path, errors="replace") as f:
            for line in f:
                if line.startswith("[ RUN      ] "):
                    current, lines = line[13:].strip(), []
                elif line.startswith("[  SKIPPED ] ") and current:
                    text = [l.strip() for l in lines if l.strip() and not l.rstrip().endswith(": Skipped")]
                    out[current] = " ".join(text) or "skipped"
                    current = None
                elif current:
                    lines.append(line)
    except OSError:
        pass
    return out


def gtest(results, binary, json_path, log_path, rc, gpus="1"):
    skips = skip_messages(log_path)
    try:
        with open(json_path) as f:
            report = json.load(f)
    except (OSError, ValueError):
        why = "timed out" if rc in ("124", "137") else f"exit status {rc}, no gtest report"
        row(results, "test", binary, "failed", f"{why}: {tail(log_path, 15)}")
        return
    for suite in report.get("testsuites", []):
        for t in suite.get("testsuite", []):
            name = f"{binary}.{suite['name']}.{t['name']}"
            failures = t.get("failures", [])
            if failures:
                msg = " | ".join(fl.get("failure", "")[:400] for fl in failures)
                row(results, "test", name, "failed", msg, seconds=t.get("time", ""))
            elif t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
                msg = skips.get(f"{suite['name']}.{t['name']}", "skipped")
                if gpus == "0" and not re.search(r"GPU|CUDA|device", msg, re.I):
                    # The rehearsal: a GPU test must say that the device is what it lacks.
                    row(results, "test", name, "failed", f"skipped without naming the missing device: {msg}")
                else:
                    row(results, "test", name, "skipped", msg)
            else:
                row(results, "test", name, "passed", "", seconds=t.get("time", ""))
    if rc not in ("0", "1"):
        row(results, "test", binary, "failed", f"exit status {rc}: {tail(log_path, 15)}")


def bench(results, name, path, rc):
    lines = []
    try:
        with open(path) as f:
            lines = [json.loads(l) for l in f if l.startswith("{")]
    except (OSError, ValueError) as e:
        row(results, "bench", name, "failed", f"unreadable output: {e}")
        return
    if rc == "77":
        row(results, "bench", name, "skipped", tail(path + ".err", 3).strip() or "skipped")
        return
    if rc != "0" or not lines:
        row(results, "bench", name, "failed", f"exit status {rc}: {tail(path + '.err', 15)}")
        return
    for data in lines:
        label = data.get("kernel") or data.get("model") or name
        result = "measured"
        if "meets_target" in data and not data["meets_target"]:
            result = "missed"
        append(results, dict(kind="bench", name=f"{name}.{label}", result=result, message="", **data))


def events(path):
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                line = line[line.find("{"):] if "{" in line else ""
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def jobs(results, cpu_log, cuda_log):
    cpu, cuda = events(cpu_log), events(cuda_log)
    def final_accuracy(ev):
        acc = [e["test_accuracy"] for e in ev if e.get("event") in ("eval", "done") and "test_accuracy" in e]
        return acc[-1] if acc else None
    a_cpu, a_cuda = final_accuracy(cpu), final_accuracy(cuda)
    if a_cpu is None or a_cuda is None:
        which = "cpu" if a_cpu is None else "cuda"
        log = cpu_log if a_cpu is None else cuda_log
        row(results, "job", "fashion_mnist_cuda_vs_cpu", "failed", f"the {which} run reported no accuracy: {tail(log, 15)}")
        return
    gap = abs(a_cpu - a_cuda)
    row(results, "job", "fashion_mnist_accuracy", "passed" if gap <= ACCURACY_TOLERANCE else "failed",
        f"test accuracy cpu {a_cpu:.4f} cuda {a_cuda:.4f} (gap {gap:.4f}, tolerance {ACCURACY_TOLERANCE})",
        cpu=a_cpu, cuda=a_cuda)
    l_cpu = {e["step"]: e["loss"] for e in cpu if e.get("event") == "step"}
    l_cuda = {e["step"]: e["loss"] for e in cuda if e.get("event") == "step"}
    common = sorted(set(l_cpu) & set(l_cuda))
    if not common:
        row(results, "job", "fashion_mnist_loss_curve", "failed", "no step lines in common")
        return
    rel = sum(abs(l_cpu[s] - l_cuda[s]) / max(abs(l_cpu[s]), 1e-6) for s in common) / len(common)
    row(results, "job", "fashion_mnist_loss_curve", "passed" if rel <= LOSS_TOLERANCE else "failed",
        f"mean relative loss gap {rel:.4f} over {len(common)} steps (tolerance {LOSS_TOLERANCE})", gap=rel)


def load(results):
    with open(results) as f:
        return [json.loads(l) for l in f if l.strip()]


def ratios(results):
    rows = load(results)
    ours = {r["model"]: r for r in rows if r.get("bench") == "train" and r.get("device") == "cuda"}
    torch = {r["model"]: r for r in rows if r.get("bench") == "train_torch"}
    for model in sorted(set(ours) | set(torch)):
        if model not in ours or model not in torch:
            missing = "ours" if model not in ours else "PyTorch's"
            row(results, "ratio", f"ddp_step_vs_torch.{model}", "skipped", f"no {missing} figure")
            continue
        ratio = torch[model]["samples_per_s"] / ours[model]["samples_per_s"]  # our time over theirs
        row(results, "ratio", f"ddp_step_vs_torch.{model}", "measured" if ratio <= STEP_RATIO_TARGET else "missed",
            f"our step time {ratio:.3f}x PyTorch eager's ({ours[model]['samples_per_s']:.0f} vs "
            f"{torch[model]['samples_per_s']:.0f} samples/s)", ratio=ratio, target=STEP_RATIO_TARGET)


def summary(results):
    rows = load(results)
    counts = {}
    for r in rows:
        counts[r["result"]] = counts.get(r["result"], 0) + 1
    out = ["GPU check: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))]
    for r in rows:
        if r["kind"] == "bench" and "fraction_of_copy" in r:
            out.append(f"  {r['result']:8} bench   {r['name']}: {r['gbps']:.0f} GB/s, {r['fraction_of_copy']:.2f}x copy")
        elif r["kind"] == "bench" and "samples_per_s" in r:
            out.append(f"  {r['result']:8} bench   {r['name']}: {r['samples_per_s']:.0f} samples/s")
        elif r["kind"] in ("ratio", "job", "env") or r["result"] in ("failed", "missed"):
            out.append(f"  {r['result']:8} {r['kind']:7} {r['name']}: {r['message'][:300]}")
    skipped = [r for r in rows if r["result"] == "skipped"]
    reasons = {}
    for r in skipped:
        reasons.setdefault(r["message"][:120], []).append(r["name"])
    for msg, names in sorted(reasons.items()):
        out.append(f"  skipped  {len(names)} row(s) ({names[0]}{', ...' if len(names) > 1 else ''}): {msg}")
    text = "\n".join(out)
    print(text)
    with open(os.path.join(os.path.dirname(results), "summary.txt"), "w") as f:
        f.write(text + "\n")
    return 1 if counts.get("failed") else 0


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "row":
        row(*args)
    elif cmd == "gtest":
        gtest(*args)
    elif cmd == "bench":
        bench(*args)
    elif cmd == "jobs":
        jobs(*args)
    elif cmd == "ratios":
        ratios(*args)
    elif cmd == "summary":
        return summary(*args)
    else:
        print(f"report.py: unknown subcommand {cmd}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
