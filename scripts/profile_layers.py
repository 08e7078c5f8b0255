#!/usr/bin/python3
"""profile_layers.py: times the forward and backward pass of a model's layers
(embedding, one transformer block, head) with PyTorch on this machine and writes
an ampplan profile with them as "measured" points (AMP, Li et al. 2022, Sec. 3.2:
per GPU type, TP degree and micro-batch size). Dimensions come from `ampplan
profile`. With --tp T > 1 one GPU's Megatron TP shard is timed (heads/T,
kv_heads/T (at least 1), ffn/T, vocab/T), without the TP collectives (ampplan
adds its own estimate). Every error, bad arguments included, exits 1."""
import argparse
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import time

PROG = "profile_layers.py"
WARMUP = 3  # untimed runs before the timed ones


def fail(msg):
    sys.stderr.write(f"{PROG}: error: {msg}\n")
    sys.exit(1)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        fail(message)


def positive(text):
    v = int(text) if text.strip().isdigit() else 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not '{text}'")
    return v


def parse_args():
    p = Parser(prog=PROG, description="Measure per-layer forward/backward times "
               "with PyTorch and write an ampplan profile with measured points.")
    arg = p.add_argument
    arg("--model", required=True, metavar="FILE", help="ampplan profile or HF config.json")
    arg("--out", required=True, metavar="FILE", help="the profile to write")
    arg("--gpu", metavar="NAME", help="GPU type name as in the cluster file "
        "(default: torch.cuda.get_device_name(), or 'cpu')")
    arg("--device", choices=["cuda", "cpu"], help="default: cuda if available")
    arg("--mbs", type=lambda t: sorted({positive(x) for x in t.split(",")}),
        default=[1, 2, 4], metavar="LIST",
        help="micro-batch sizes, comma-separated (default 1,2,4)")
    arg("--seq", type=positive, metavar="N", help="sequence length (default: the profile's)")
    arg("--tp", type=positive, default=1, metavar="N",
        help="TP degree whose per-GPU shard is timed (default 1)")
    arg("--repeat", type=positive, default=10, metavar="N",
        help=f"timed runs after {WARMUP} warm-up runs; the median counts (default 10)")
    arg("--dtype", choices=["bf16", "fp32"], help="default: the profile's on cuda, fp32 on cpu")
    arg("--ampplan", default="./ampplan", metavar="PATH", help="default ./ampplan")
    a = p.parse_args()
    if a.gpu is not None and not a.gpu.strip():
        p.error("argument --gpu: needs a non-empty name")
    return a


def base_profile(a):
    """The profile JSON of `ampplan profile --model FILE [--seq N]`; fails
    for what this script cannot time (MoE, heads that --tp does not split)."""
    cmd = [a.ampplan, "profile", "--model", a.model] + (["--seq", str(a.seq)] if a.seq else [])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        fail(f"cannot run '{a.ampplan}': {e.strerror}")
    if r.returncode != 0:
        fail(f"'{' '.join(cmd)}' failed: {r.stderr.strip()}")
    prof = json.loads(r.stdout)
    if prof.get("num_experts", 0):
        fail(f"'{a.model}': MoE models are not supported")
    heads, kv = prof["num_attention_heads"], prof["num_kv_heads"]
    if heads % a.tp or (kv % a.tp and a.tp % kv):
        fail(f"--tp {a.tp} must divide the {heads} attention heads and divide or "
             f"be a multiple of the {kv} KV heads")
    return prof


def build(torch, prof, tp, dtype, dev):
    """The embedding, one block and the head of prof as TP shards of degree tp:
    per kind (inputs(b) for b sequences, forward(*inputs) -> the output whose
    backward is timed), and a ModuleList holding every parameter. A Llama block
    (RMSNorm, RoPE, GQA, SwiGLU), or GPT-2's (biases, LayerNorm, GeLU)."""
    nn, F = torch.nn, torch.nn.functional
    h, d, seq = prof["hidden_size"], prof["head_dim"], prof["seq_length"]
    a, g = prof["num_attention_heads"] // tp, max(1, prof["num_kv_heads"] // tp)
    ffn, vocab = math.ceil(prof["ffn_hidden_size"] / tp), math.ceil(prof["vocab_size"] / tp)
    bias, swiglu = prof.get("bias", False), prof["ffn_kind"] == "swiglu"
    learned = prof.get("position_embedding") == "learned"

    class RMSNorm(nn.Module):  # torch >= 2.4 has nn.RMSNorm; Debian 12 has 1.13
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))

        def forward(self, x):
            r = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)
            return x * r.to(x.dtype) * self.weight

    lin = functools.partial(nn.Linear, bias=bias)
    norm = nn.LayerNorm if bias else RMSNorm  # GPT-2 or Llama
    half = d // 2
    ang = torch.outer(torch.arange(seq, device=dev).float(),
                      10000 ** (-torch.arange(half, device=dev).float() * 2 / d))
    cos, sin = ang.cos().to(dtype), ang.sin().to(dtype)

    def rope(x):  # x: (b, heads, s, d); the two halves rotated (GPT-NeoX style)
        x1, x2, rest = x[..., :half], x[..., half:2 * half], x[..., 2 * half:]
        return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos, rest), -1)

    def attention(q, k, v):
        k, v = k.repeat_interleave(a // g, 1), v.repeat_interleave(a // g, 1)
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        s = q @ k.transpose(-2, -1) / math.sqrt(d)
        mask = torch.ones(seq, seq, dtype=torch.bool, device=dev).triu(1)
        return s.masked_fill(mask, float("-inf")).softmax(-1) @ v

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = norm(h), norm(h)
            self.qkv, self.proj = lin(h, (a + 2 * g) * d), lin(a * d, h)
            self.up, self.down = lin(h, (2 if swiglu else 1) * ffn), lin(ffn, h)

        def forward(self, x):
            b = x.shape[0]
            q, k, v = self.qkv(self.n1(x)).split([a * d, g * d, g * d], -1)
            q, k, v = (t.view(b, seq, -1, d).transpose(1, 2) for t in (q, k, v))
            if not learned:
                q, k = rope(q), rope(k)
            x = x + self.proj(attention(q, k, v).transpose(1, 2).reshape(b, seq, a * d))
            u = self.up(self.n2(x))
            u = F.silu(u[..., :ffn]) * u[..., ffn:] if swiglu else F.gelu(u)
            return x + self.down(u)

    emb = nn.Embedding(vocab, h).to(dev, dtype)
    pos = nn.Embedding(prof["max_position_embeddings"], h).to(dev, dtype) if learned else None
    block, hnorm, lm = Block().to(dev, dtype), norm(h).to(dev, dtype), lin(h, vocab).to(dev, dtype)
    ids = torch.arange(seq, device=dev)

    def tokens(b):
        return (torch.randint(vocab, (b, seq), device=dev),)

    def hidden(b):
        return (torch.randn(b, seq, h, device=dev, dtype=dtype, requires_grad=True),)

    def embed(t):
        return emb(t) + pos(ids) if learned else emb(t)

    def head(x, labels):
        return F.cross_entropy(lm(hnorm(x)).float().view(-1, vocab), labels.view(-1))

    layers = {"embedding": (tokens, embed), "block": (hidden, block),
              "head": (lambda b: hidden(b) + tokens(b), head)}
    return layers, nn.ModuleList([m for m in (emb, pos, block, hnorm, lm) if m is not None])


def time_layer(torch, layer, mods, b, repeat, sync):
    """Median forward and backward seconds of one micro-batch of b sequences
    through layer = (make inputs, forward) over repeat timed runs; sync()
    waits for the device."""
    inputs, forward = layer

    def now():
        sync()
        return time.perf_counter()
    fwd, bwd = [], []
    for i in range(WARMUP + repeat):
        mods.zero_grad(set_to_none=True)
        x = inputs(b)
        t0 = now()
        y = forward(*x)
        t1 = now()
        y.backward(torch.ones_like(y))
        t2 = now()
        if i >= WARMUP:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
    return max(statistics.median(fwd), 1e-9), max(statistics.median(bwd), 1e-9)


def merge(entry, points):
    """Adds points to entry["measured"], replacing those of the same key."""
    def key(p):
        return (p["gpu"], p["tp"], p["micro_batch_size"], p["seq_length"])
    new = {key(p) for p in points}
    entry["measured"] = [p for p in entry.get("measured", []) if key(p) not in new] + points


def write_atomic(path, prof):
    """Writes prof as JSON to path through a temporary file and a rename."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "x") as f:
            json.dump(prof, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        fail(f"cannot write '{path}': {e.strerror}")


def main():
    a = parse_args()
    if not os.access(os.path.dirname(a.out) or ".", os.W_OK):
        fail(f"cannot write '{a.out}': its directory is missing or not writable")
    prof = base_profile(a)
    try:
        import torch
    except ImportError:
        fail(f"'{sys.executable}' cannot import torch (Debian: apt-get install python3-torch)")
    dev = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if dev == "cuda" and not torch.cuda.is_available():
        fail("--device cuda, but torch sees no CUDA device")
    gpu = a.gpu or (torch.cuda.get_device_name() if dev == "cuda" else "cpu")
    dt = a.dtype or ("fp32" if dev == "cpu" or prof.get("dtype") == "fp32" else "bf16")
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    torch.manual_seed(0)
    layers, mods = build(torch, prof, a.tp, torch.bfloat16 if dt == "bf16" else torch.float32, dev)
    seq = prof["seq_length"]
    note = f"{PROG}: torch {torch.__version__}, {dev}, {dt}, median of {a.repeat}"
    points = {kind: [] for kind in layers}
    for b in a.mbs:
        for kind, layer in layers.items():
            try:
                fwd, bwd = time_layer(torch, layer, mods, b, a.repeat, sync)
            except RuntimeError as e:  # CUDA out of memory among others
                fail(f"{kind} at micro-batch size {b}: {str(e).splitlines()[0]}")
            points[kind].append({"gpu": gpu, "tp": a.tp, "micro_batch_size": b,
                                 "seq_length": seq, "forward_s": fwd, "backward_s": bwd,
                                 "note": note})
    for entry in prof["layers"]:
        merge(entry, points[entry["kind"]])
    write_atomic(a.out, prof)
    print(f"{PROG}: wrote '{a.out}': points for '{gpu}' at tp {a.tp}, seq {seq}, "
          f"mbs {','.join(map(str, a.mbs))}", file=sys.stderr)


if __name__ == "__main__":
    main()
