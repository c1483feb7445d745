#!/usr/bin/python3
"""An independent safetensors reader and writer (numpy only) and numpy forward passes of the
exported models (docs/MODELS.md, "Exported models"), for ddpctl_export_test.

  safetensors_numpy.py write-odd OUT.safetensors     tensors of odd shapes and dtypes, as the
                                                     format's reference writer lays them out
  safetensors_numpy.py dump FILE.safetensors         name dtype shape sum, one line each
  safetensors_numpy.py forward FILE.safetensors IN.npy OUT.npy
      recomputes the model of FILE (its "model" metadata) on IN and compares with OUT (our
      outputs; rtol = atol = 1e-4); exit 0 when they match, 1 otherwise
"""
import json
import math
import re
import struct
import sys

import numpy as np

DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
          "U8": "u1", "BOOL": "?"}


def read(path):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    data = b[8 + n:]
    out = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=DTYPES[t["dtype"]]).reshape(t["shape"])
    return out, meta


def write(path, tensors, meta):
    """As the reference writer: names sorted, no padding of the header."""
    names = {np.dtype(v): k for k, v in DTYPES.items()}
    header, blobs, off = {}, [], 0
    if meta:
        header["__metadata__"] = meta
    for name in sorted(tensors):
        a = np.array(tensors[name], order="C")
        header[name] = {"dtype": names[a.dtype],
                        "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def flow_yaml(value):
    """A YAML flow value of plain keys and numbers ({conv2d: {out: 4}}, [1, 2], 3, true) as JSON."""
    return json.loads(re.sub(r'([{,]\s*)([A-Za-z_]\w*)\s*:', r'\1"\2":', value))


def parse_model(text):
    """The model metadata: a flat YAML mapping whose values are scalars or flow collections."""
    out = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        key, value = line.split(":", 1)
        value = value.strip()
        try:
            out[key.strip()] = flow_yaml(value)
        except ValueError:
            out[key.strip()] = value
    return out


def act(name, x):
    if name == "relu":
        return np.maximum(x, 0)
    if name == "tanh":
        return np.tanh(x)
    if name == "gelu":
        erf = np.vectorize(math.erf)
        return 0.5 * x * (1 + erf(x / math.sqrt(2)))
    if name in ("gelu_tanh", "gelu-tanh"):
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    raise ValueError("activation " + name)


def linear(w, prefix, x):
    return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]


def conv2d(x, weight, bias, pad, stride=1):
    n, c, h, wd = x.shape
    o, _, k, _ = weight.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    cols = np.empty((n, c, k, k, ho, wo), dtype=np.float64)
    for i in range(k):
        for j in range(k):
            cols[:, :, i, j] = xp[:, :, i:i + stride * (ho - 1) + 1:stride, j:j + stride * (wo - 1) + 1:stride]
    return np.einsum("nckluv,ockl->nouv", cols, weight) + bias[None, :, None, None]


def pool(x, k, stride, reduce):
    n, c, h, w = x.shape
    ho, wo = (h - k) // stride + 1, (w - k) // stride + 1
    out = np.empty((n, c, ho, wo))
    for i in range(ho):
        for j in range(wo):
            out[:, :, i, j] = reduce(x[:, :, i * stride:i * stride + k, j * stride:j * stride + k], axis=(2, 3))
    return out


def layers(w, stack, prefix, x):
    """A declared stack as torch.nn.Sequential runs it (entries named by their index)."""
    for i, layer in enumerate(stack):
        (kind, f), = layer.items()
        p = prefix + str(i)
        n = x.shape[0]
        if kind == "linear":
            x = x.reshape(n, -1) @ w[p + ".weight"].T + w[p + ".bias"]
        elif kind == "conv2d":
            x = conv2d(x, w[p + ".weight"], w[p + ".bias"], f.get("padding", 0), f.get("stride", 1) or 1)
        elif kind in ("maxpool2d", "avgpool2d"):
            x = pool(x, f["kernel"], f.get("stride", 0) or f["kernel"], np.max if kind == "maxpool2d" else np.mean)
        elif kind == "flatten":
            x = x.reshape(n, -1)
        elif kind == "layernorm":
            flat = x.reshape(n, -1)
            mu = flat.mean(-1, keepdims=True)
            var = ((flat - mu) ** 2).mean(-1, keepdims=True)
            x = ((flat - mu) / np.sqrt(var + f.get("eps", 1e-5)) * w[p + ".weight"] + w[p + ".bias"]).reshape(x.shape)
        elif kind == "dropout":
            pass
        elif kind == "sigmoid":
            x = 1 / (1 + np.exp(-x))
        elif kind == "residual":
            x = x + layers(w, f["layers"], p + ".", x)
        else:
            x = act(kind, x)
    return x


def sequential(w, m, x):
    return layers(w, m["stack"], "", x.reshape([x.shape[0]] + m["input"])).reshape(x.shape[0], -1)


def maxpool2(x):
    n, c, h, w = x.shape
    x = x[:, :, :h // 2 * 2, :w // 2 * 2]
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def mlp(w, m, x):
    hidden = m["hidden"]
    for i in range(len(hidden) + 1):
        x = linear(w, str(2 * i), x)
        if i < len(hidden):
            x = act(m["activation"], x)
    return x


def cnn(w, m, x):
    x = x.reshape([x.shape[0]] + m["input"])
    k = m["kernelSize"]
    for i in range(len(m["convChannels"])):
        p = str(3 * i)
        x = np.maximum(maxpool2(conv2d(x, w[p + ".weight"], w[p + ".bias"], k // 2)), 0)
    x = x.reshape(x.shape[0], -1)
    base = 3 * len(m["convChannels"]) + 1
    hidden = m["hidden"]
    for i in range(len(hidden) + 1):
        x = linear(w, str(base + 2 * i), x)
        if i < len(hidden):
            x = act(m["activation"], x)
    return x


def norm(w, prefix, x, m):
    g = w[prefix + ".weight"]
    if m["norm"] == "rmsnorm":
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + m["normEps"]) * g
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + m["normEps"]) * g + w[prefix + ".bias"]


def attention(qkv, heads):
    n, t, three_d = qkv.shape
    d = three_d // 3
    hd = d // heads
    q, k, v = (qkv[:, :, i * d:(i + 1) * d].reshape(n, t, heads, hd).transpose(0, 2, 1, 3) for i in range(3))
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
    s = s + np.triu(np.full((t, t), -np.inf), 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(n, t, d)


def gpt(w, m, tokens):
    if m.get("rope"):
        raise ValueError("this reader does not do rotary positions")
    tokens = tokens.astype(np.int64)
    x = w["transformer.wte.weight"][tokens] + w["transformer.wpe.weight"][np.arange(tokens.shape[1])]
    for i in range(m["layers"]):
        p = "transformer.h.%d." % i
        x = x + linear(w, p + "attn.c_proj", attention(linear(w, p + "attn.c_attn", norm(w, p + "ln_1", x, m)),
                                                        m["heads"]))
        x = x + linear(w, p + "mlp.c_proj", act("gelu_tanh", linear(w, p + "mlp.c_fc", norm(w, p + "ln_2", x, m))))
    x = norm(w, "transformer.ln_f", x, m)
    head = w["transformer.wte.weight"] if m["tiedEmbeddings"] else w["lm_head.weight"]
    return x @ head.T


def forward(path, inputs, expected):
    tensors, meta = read(path)
    w = {k: v.astype(np.float64) for k, v in tensors.items()}
    m = parse_model(meta["model"])
    x = np.load(inputs)
    ours = np.load(expected)
    theirs = {"mlp": mlp, "cnn": cnn, "gpt": gpt, "sequential": sequential}[m["type"]](w, m, x if m["type"] == "gpt" else x.astype(np.float64))
    err = float(np.max(np.abs(theirs - ours))) if ours.size else 0.0
    print("%s: %d outputs, max |numpy - ours| = %.3g" % (m["type"], ours.size, err))
    return 0 if theirs.shape == ours.shape and np.allclose(theirs, ours, rtol=1e-4, atol=1e-4) else 1


def write_odd(path):
    rng = np.random.default_rng(7)
    tensors = {
        "a.weight": rng.standard_normal((3, 5)).astype("<f4"),
        "b": rng.standard_normal((1, 1, 7)).astype("<f8"),
        "empty": np.zeros((0, 4), dtype="<f4"),
        "scalar": np.array(2.5, dtype="<f4"),
        "ids": np.arange(-3, 6, dtype="<i8").reshape(3, 3),
        "half": np.array([1.5, -2.0, 65504.0], dtype="<f2"),
        "bytes": np.arange(5, dtype="u1"),
    }
    write(path, tensors, {"who": "numpy", "note": "odd shapes"})
    return 0


def dump(path):
    tensors, meta = read(path)
    for name in sorted(tensors):
        a = tensors[name]
        print("%s %s %s %.6g" % (name, a.dtype.str, list(a.shape), float(a.astype(np.float64).sum())))
    for k in sorted(meta):
        print("meta %s=%s" % (k, json.dumps(meta[k])))
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "write-odd":
        sys.exit(write_odd(sys.argv[2]))
    if cmd == "dump":
        sys.exit(dump(sys.argv[2]))
    if cmd == "forward":
        sys.exit(forward(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit("unknown command " + cmd)
