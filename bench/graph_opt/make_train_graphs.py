#!/usr/bin/env python3
"""make_train_graphs.py - the graphs the shipped graph-rewrite policy
(models/graph_rewrite.rlp) is trained on: small networks of the kinds the
benchmark models are made of, with other sizes, so that bench/graph_opt can
measure the policy on models it never trained on (all six of them).

    make_train_graphs.py --out DIR [--seed S]

Graphs (DIR/NAME.onnx), each checked with onnx.checker (full_check):

    incep_0 .. incep_3   one to four Inception-style blocks (1x1 branches
                         beside 1x1 -> 3x3 and 1x1 -> 5x5 ones and a pool
                         branch, Conv + BatchNormalization + Relu, concatenated),
                         other channel counts and sizes than inception_stack
    attn_0 .. attn_2     one transformer encoder layer (Q, K, V projections
                         with biases, heads, softmax, output projection,
                         residual, LayerNormalization, a GELU MLP), pre- or
                         post-norm, other widths and lengths than bert_layer /
                         vit_block
    convmix_0, convmix_1 Convs followed by per-channel Mul and Add, Identity
                         and Dropout, Relus before a Concat, sibling 1x1 and
                         3x3 convolutions: the folding and moving rules
Built with make_models.py's Builder (exporter-style names, seeded weights).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "networks"))
from make_models import Builder  # noqa: E402


def basic_conv(b: Builder, x: str, mod: str, cin: int, cout: int, k: int) -> str:
    x = b.conv(x, f"{mod}.conv", f"/{mod}/conv", cin, cout, k, pad=(k - 1) // 2)
    x = b.bn(x, f"{mod}.bn", f"/{mod}/bn", cout, eps=1e-3)
    return b.node("Relu", [x], f"/{mod}")


def inception(b: Builder, x: str, name: str, cin: int, c1: int, c3r: int, c3: int, c5r: int, c5: int,
              pp: int) -> tuple[str, int]:
    y1 = basic_conv(b, x, f"{name}.b1", cin, c1, 1)
    y2 = basic_conv(b, basic_conv(b, x, f"{name}.b2r", cin, c3r, 1), f"{name}.b2", c3r, c3, 3)
    y3 = basic_conv(b, basic_conv(b, x, f"{name}.b3r", cin, c5r, 1), f"{name}.b3", c5r, c5, 5)
    y4 = b.node("MaxPool", [x], f"/{name}/pool", ceil_mode=1, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                strides=[1, 1])
    y4 = basic_conv(b, y4, f"{name}.b4", cin, pp, 1)
    return b.node("Concat", [y1, y2, y3, y4], f"/{name}", axis=1), c1 + c3 + c5 + pp


def incep(b: Builder, k: int) -> onnx.ModelProto:
    r = b.rng
    cin = int(r.choice([64, 96, 128]))
    hw = int(r.choice([14, 20]))
    x, c = "input", cin
    for blk in range(k + 1):
        m = lambda: 16 * int(r.integers(1, 7))  # noqa: E731
        x, c = inception(b, x, f"block{blk}", c, m(), m(), m(), 16, m(), m())
    return b.finish(13, ("input", [1, cin, hw, hw]), (x, "output", [1, c, hw, hw]))


def layer_norm(b: Builder, x: str, mod: str, d: int) -> str:
    g = b.init(f"{mod}.weight", (1.0 + 0.1 * b.rng.standard_normal(d)).astype(np.float32))
    beta = b.init(f"{mod}.bias", b.normal((d,), 0.05))
    return b.node("LayerNormalization", [x, g, beta], f"/{mod}", axis=-1, epsilon=1e-12)


def attention(b: Builder, x: str, seq: int, d: int) -> str:
    heads, head = d // 64, 64
    i64 = np.int64

    def to_heads(t: str, perm: list[int]) -> str:
        t = b.node("Reshape", [t, b.const("/attn", np.array([1, seq, heads, head], dtype=i64))], "/attn")
        return b.node("Transpose", [t], "/attn", perm=perm)

    q = to_heads(b.linear3d(x, "attn.query", "/attn/query", d, d, gain=4.0 / 3.0), [0, 2, 1, 3])
    k = to_heads(b.linear3d(x, "attn.key", "/attn/key", d, d, gain=4.0 / 3.0), [0, 2, 3, 1])
    v = to_heads(b.linear3d(x, "attn.value", "/attn/value", d, d), [0, 2, 1, 3])
    s = b.node("MatMul", [q, k], "/attn")
    s = b.node("Div", [s, b.const("/attn", np.array(math.sqrt(head), dtype=np.float32))], "/attn")
    ctx = b.node("MatMul", [b.node("Softmax", [s], "/attn", axis=-1), v], "/attn")
    ctx = b.node("Transpose", [ctx], "/attn", perm=[0, 2, 1, 3])
    return b.node("Reshape", [ctx, b.const("/attn", np.array([1, seq, d], dtype=i64))], "/attn")


def gelu(b: Builder, h: str) -> str:
    e = b.node("Div", [h, b.const("/act", np.array(math.sqrt(2.0), dtype=np.float32))], "/act")
    e = b.node("Add", [b.node("Erf", [e], "/act"), b.const("/act", np.array(1.0, dtype=np.float32))], "/act")
    return b.node("Mul", [b.node("Mul", [h, e], "/act"), b.const("/act", np.array(0.5, dtype=np.float32))], "/act")


def attn(b: Builder, k: int) -> onnx.ModelProto:
    seq = [64, 96, 160][k]
    d = [256, 384, 512][k]
    pre_norm = k != 1
    x = "hidden_states"
    a = layer_norm(b, x, "ln1", d) if pre_norm else x
    y = b.linear3d(attention(b, a, seq, d), "attn.out", "/attn/out", d, d)
    y = b.node("Add", [y, x], "/res1")
    if not pre_norm:
        y = layer_norm(b, y, "ln1", d)
    m = layer_norm(b, y, "ln2", d) if pre_norm else y
    h = gelu(b, b.linear3d(m, "mlp.fc1", "/mlp/fc1", d, 4 * d))
    z = b.node("Add", [b.linear3d(h, "mlp.fc2", "/mlp/fc2", 4 * d, d), y], "/res2")
    if not pre_norm:
        z = layer_norm(b, z, "ln2", d)
    return b.finish(17, (x, [1, seq, d]), (z, "output", [1, seq, d]))


def convmix(b: Builder, k: int) -> onnx.ModelProto:
    r = b.rng
    c, hw = [32, 48][k], [28, 20][k]
    x = b.node("Identity", ["input"], "/id")
    x = b.node("Dropout", [x], "/drop")
    y = b.conv(x, "c0", "/c0", c, c, 3, pad=1, bias=True)
    y = b.node("Mul", [y, b.init("scale0", (1 + 0.1 * r.standard_normal((1, c, 1, 1))).astype(np.float32))], "/s0")
    y = b.node("Add", [y, b.init("shift0", b.normal((1, c, 1, 1), 0.1))], "/s0")
    y = b.node("Relu", [y], "/c0")
    a = b.node("Relu", [b.conv(y, "c1", "/c1", c, c, 1, bias=True)], "/c1")
    bb = b.node("Relu", [b.conv(y, "c2", "/c2", c, c, 3, pad=1, bias=True)], "/c2")
    z = b.node("Concat", [a, bb], "/cat", axis=1)
    z = b.conv(z, "c3", "/c3", 2 * c, c, 1, bias=True)
    z = b.node("Mul", [z, b.init("scale3", (1 + 0.1 * r.standard_normal((1, c, 1, 1))).astype(np.float32))], "/s3")
    return b.finish(13, ("input", [1, c, hw, hw]), (z, "output", [1, c, hw, hw]))


def build(name: str, seed: int) -> onnx.ModelProto:
    kind, k = name.rsplit("_", 1)
    index = {"incep": 0, "attn": 10, "convmix": 20}[kind] + int(k)
    b = Builder(np.random.default_rng(np.random.SeedSequence([seed, 100 + index])))
    return {"incep": incep, "attn": attn, "convmix": convmix}[kind](b, int(k))


NAMES = ["incep_0", "incep_1", "incep_2", "incep_3", "attn_0", "attn_1", "attn_2", "convmix_0", "convmix_1"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        model = build(name, args.seed)
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, out / f"{name}.onnx")
        print(out / f"{name}.onnx")
    return 0


if __name__ == "__main__":
    sys.exit(main())
