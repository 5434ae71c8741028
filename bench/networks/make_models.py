#!/usr/bin/env python3
"""make_models.py - writes the benchmark networks of issue 27 as ONNX files
with seeded random weights, built node by node with onnx.helper (no torch).

    make_models.py --out DIR [--seed S] [--only NAME,...] [--batch N] [--summary]
    make_models.py --summary [--only NAME,...]          (builds in memory, writes nothing)

Models (DIR/NAME.onnx):

    resnet18          torchvision resnet18 (BasicBlock), input [N,3,224,224], opset 13
    resnet50          torchvision resnet50 (Bottleneck, stride on the 3x3), opset 13
    mobilenet_v2      torchvision mobilenet_v2 (inverted residuals, ReLU6 as Clip), opset 13
    squeezenet1_1     torchvision squeezenet1_1 (Fire modules, ceil_mode max pools), opset 13
    bert_layer        one BERT-base encoder layer (HF BertLayer), input [N,128,768],
                      opset 17: LayerNormalization, Gelu as x*0.5*(1+Erf(x/sqrt(2)))
    bert_layer_opset13  the same layer and weights at opset 13: LayerNorm decomposed
                      (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add)
    small_cnn         a tiny CNN for CI, input [N,3,32,32] (milliseconds to run)
    inception_stack   torchvision GoogLeNet's inception (3a), (3b), max pool, (4a), (4b),
                      input [N,192,28,28], output [N,512,14,14], opset 13 (the third
                      branch's 5x5 as in the paper; torchvision has a 3x3 there)
    vit_block         one ViT-Base/16 encoder block (HF ViTLayer, pre-norm), input
                      [N,197,768], opset 17: bert_layer's attention and MLP

The graphs are written the way PyTorch's TorchScript exporter writes these
modules in eval mode (torch.onnx.export, static shapes): node names
"/scope/Op[_k]", outputs "<node>_output_0", weights named after the module
parameters ("layer1.0.conv1.weight"), Linear on 3-D input as MatMul with a
pre-transposed constant ("onnx::MatMul_N") followed by Add(bias, x), Dropout
dropped, adaptive average pooling as GlobalAveragePool, torch.flatten(x, 1)
as Flatten, Linear on 2-D input as Gemm(transB=1), ReLU6 as Clip with
Constant min / max inputs, F.relu in a module's forward in that module's
scope ("/inception3a/branch1/Relu"), torch.cat as Concat. One deliberate
difference: BatchNormalization nodes stay separate (the exporter folds them
into the Conv in eval mode; kept here, like the ONNX model zoo's models, so
that the importer's BatchNormalization folding is exercised).

Weights: convolutions He-normal over fan_in = C/groups*R*S (std sqrt(2/fan_in);
sqrt(1/fan_in) for MobileNet-V2's linear bottlenecks and ResNet's downsample
Convs, which no ReLU follows);
BatchNormalization scale 1 + 0.1*N(0,1) (clipped to [0.7, 1.3]), shift
0.1*N(0,1), running mean 0.1*N(0,1), running var U[0.5, 1.5], epsilon 1e-5
(1e-3 in GoogLeNet's BasicConv2d, as torchvision has it);
biases 0.05*N(0,1); a residual branch's last BatchNormalization has scale
U[0.2, 0.4] (with scales around 1 the residual sums grow block after block:
the last block's output RMS would be 22 in ResNet-18 and 1500 in ResNet-50,
against 0.6 after the stem);
classifier Gemms N(0, 1/fan_in). BERT: projections N(0, 1/fan_in) (query
and key N(0, 4/fan_in), so that the softmax of a random input is not flat),
biases 0.02*N(0,1), LayerNorm scale 1 + 0.1*N(0,1), shift 0.05*N(0,1); ViT
the same but query and key N(0, (4/3)/fan_in) (they read a LayerNorm's
output, of unit variance, where BERT's read the input, uniform [-1, 1)). Every
model draws from numpy's default_rng(SeedSequence([seed, model index])), so
--only gives the same weights as a full run; bert_layer and
bert_layer_opset13 share theirs.

--summary prints, per model: input shape, parameter count (weights, biases
and BatchNormalization scale / shift, torchvision's count; running mean and
var are counted apart), FLOPs (2 x the multiply-adds of every Conv, Gemm and
MatMul, from the shapes onnx.shape_inference gives) and the file size.

Every model is checked with onnx.checker.check_model(full_check=True), which
runs strict shape inference, before it is written.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 8  # what torch.onnx.export writes for opsets 13-17
PRODUCER = "rltune bench/networks/make_models.py"

MODELS = ["resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1",
          "bert_layer", "bert_layer_opset13", "small_cnn", "inception_stack", "vit_block"]
# The index each model's random stream is derived from (the BERT variants share one).
SEED_INDEX = {"resnet18": 1, "resnet50": 2, "mobilenet_v2": 3, "squeezenet1_1": 4,
              "bert_layer": 5, "bert_layer_opset13": 5, "small_cnn": 6,
              "inception_stack": 7, "vit_block": 8}


class Builder:
    """Collects nodes and initializers; names nodes as torch's exporter does:
    "<scope>/<Op>" then "<scope>/<Op>_1", ... per scope, outputs
    "<node>_output_0"."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.init_names: set[str] = set()
        self.counts: dict[tuple[str, str], int] = {}
        self.scope_uses: dict[str, int] = {}
        self.onnx_const = 0  # numbering of "onnx::Op_N" constants

    def node(self, op: str, inputs: list[str], scope: str = "", n_out: int = 1,
             **attrs) -> str | list[str]:
        key = (scope, op)
        k = self.counts.get(key, 0)
        self.counts[key] = k + 1
        name = f"{scope}/{op}" + (f"_{k}" if k else "")
        outputs = [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))
        return outputs[0] if n_out == 1 else outputs

    def reuse(self, scope: str) -> str:
        """The scope of a module called again (torch: "/relu", then "/relu_1", ...)."""
        k = self.scope_uses.get(scope, 0)
        self.scope_uses[scope] = k + 1
        return scope + (f"_{k}" if k else "")

    def init(self, name: str, arr: np.ndarray) -> str:
        assert name not in self.init_names, name
        self.init_names.add(name)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def onnx_init(self, op: str, arr: np.ndarray) -> str:
        """A folded constant the exporter names after its reader: onnx::MatMul_N."""
        self.onnx_const += 1
        return self.init(f"onnx::{op}_{self.onnx_const}", arr)

    def const(self, scope: str, arr: np.ndarray) -> str:
        """A Constant node (how the exporter writes scalars and shapes)."""
        key = (scope, "Constant")
        k = self.counts.get(key, 0)
        self.counts[key] = k + 1
        name = f"{scope}/Constant" + (f"_{k}" if k else "")
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(
            "Constant", [], [out], name=name, value=numpy_helper.from_array(arr)))
        return out

    # -- random tensors -------------------------------------------------------------

    def normal(self, shape, std: float) -> np.ndarray:
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    # -- layers -----------------------------------------------------------------------

    def conv(self, x: str, module: str, scope: str, cin: int, cout: int, k: int,
             stride: int = 1, pad: int = 0, groups: int = 1, bias: bool = False,
             gain: float = 2.0) -> str:
        fan_in = cin // groups * k * k
        w = self.init(f"{module}.weight", self.normal((cout, cin // groups, k, k),
                                                      math.sqrt(gain / fan_in)))
        inputs = [x, w]
        if bias:
            inputs.append(self.init(f"{module}.bias", self.normal((cout,), 0.05)))
        return self.node("Conv", inputs, scope, dilations=[1, 1], group=groups,
                         kernel_shape=[k, k], pads=[pad] * 4, strides=[stride, stride])

    def bn(self, x: str, module: str, scope: str, c: int, residual_end: bool = False,
           eps: float = 1e-5) -> str:
        rng = self.rng
        if residual_end:
            scale = rng.uniform(0.2, 0.4, c)
        else:
            scale = np.clip(1.0 + 0.1 * rng.standard_normal(c), 0.7, 1.3)
        shift = 0.1 * rng.standard_normal(c)
        mean = 0.1 * rng.standard_normal(c)
        var = rng.uniform(0.5, 1.5, c)
        ins = [x,
               self.init(f"{module}.weight", scale.astype(np.float32)),
               self.init(f"{module}.bias", shift.astype(np.float32)),
               self.init(f"{module}.running_mean", mean.astype(np.float32)),
               self.init(f"{module}.running_var", var.astype(np.float32))]
        return self.node("BatchNormalization", ins, scope, epsilon=eps, momentum=0.9)

    def relu6(self, x: str, scope: str) -> str:
        lo = self.const(scope, np.array(0.0, dtype=np.float32))
        hi = self.const(scope, np.array(6.0, dtype=np.float32))
        return self.node("Clip", [x, lo, hi], scope)

    def gemm(self, x: str, module: str, scope: str, fin: int, fout: int) -> str:
        w = self.init(f"{module}.weight", self.normal((fout, fin), math.sqrt(1.0 / fin)))
        b = self.init(f"{module}.bias", self.normal((fout,), 0.05))
        return self.node("Gemm", [x, w, b], scope, alpha=1.0, beta=1.0, transB=1)

    def linear3d(self, x: str, module: str, scope: str, fin: int, fout: int,
                 bias_std: float = 0.02, gain: float = 1.0) -> str:
        """nn.Linear on a 3-D input: MatMul by the transposed weight (folded into
        an onnx::MatMul_N initializer), then Add(bias, x)."""
        w = self.onnx_init("MatMul", self.normal((fin, fout), math.sqrt(gain / fin)))
        y = self.node("MatMul", [x, w], scope)
        b = self.init(f"{module}.bias", self.normal((fout,), bias_std))
        return self.node("Add", [b, y], scope)

    def finish(self, opset: int, inp: tuple[str, list[int]],
               out: tuple[str, str, list[int]]) -> onnx.ModelProto:
        # The last node writes the graph output under its own name, as the
        # exporter's output_names does.
        last = self.nodes[-1]
        old = out[0]
        assert last.output[0] == old
        last.output[0] = out[1]
        graph = helper.make_graph(
            self.nodes, "main_graph",  # torch.onnx.export's graph name
            [helper.make_tensor_value_info(inp[0], TensorProto.FLOAT, inp[1])],
            [helper.make_tensor_value_info(out[1], TensorProto.FLOAT, out[2])],
            initializer=self.inits)
        model = helper.make_model(graph, producer_name=PRODUCER, producer_version="1",
                                  opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = IR_VERSION
        return model


def scope_of(*parts: str) -> str:
    return "".join("/" + p for p in parts)


# ---- ResNet (torchvision.models.resnet) ------------------------------------------------


def resnet(b: Builder, batch: int, block: str, layers: list[int]) -> onnx.ModelProto:
    x = b.conv("input", "conv1", "/conv1", 3, 64, 7, stride=2, pad=3)
    x = b.bn(x, "bn1", "/bn1", 64)
    x = b.node("Relu", [x], b.reuse("/relu"))
    x = b.node("MaxPool", [x], "/maxpool", ceil_mode=0, kernel_shape=[3, 3],
               pads=[1, 1, 1, 1], strides=[2, 2])
    inplanes = 64
    expansion = 1 if block == "basic" else 4
    for li, (planes, n) in enumerate(zip([64, 128, 256, 512], layers)):
        for bi in range(n):
            stride = 2 if (li > 0 and bi == 0) else 1
            mod = f"layer{li + 1}.{bi}"
            sc = scope_of(f"layer{li + 1}", mod)
            identity = x
            if block == "basic":
                out = b.conv(x, f"{mod}.conv1", sc + "/conv1", inplanes, planes, 3, stride, 1)
                out = b.bn(out, f"{mod}.bn1", sc + "/bn1", planes)
                out = b.node("Relu", [out], b.reuse(sc + "/relu"))
                out = b.conv(out, f"{mod}.conv2", sc + "/conv2", planes, planes, 3, 1, 1)
                out = b.bn(out, f"{mod}.bn2", sc + "/bn2", planes, residual_end=True)
            else:  # Bottleneck, ResNet v1.5: the stride on the 3x3
                out = b.conv(x, f"{mod}.conv1", sc + "/conv1", inplanes, planes, 1)
                out = b.bn(out, f"{mod}.bn1", sc + "/bn1", planes)
                out = b.node("Relu", [out], b.reuse(sc + "/relu"))
                out = b.conv(out, f"{mod}.conv2", sc + "/conv2", planes, planes, 3, stride, 1)
                out = b.bn(out, f"{mod}.bn2", sc + "/bn2", planes)
                out = b.node("Relu", [out], b.reuse(sc + "/relu"))
                out = b.conv(out, f"{mod}.conv3", sc + "/conv3", planes, planes * 4, 1)
                out = b.bn(out, f"{mod}.bn3", sc + "/bn3", planes * 4, residual_end=True)
            if stride != 1 or inplanes != planes * expansion:
                ds = sc + "/downsample"
                identity = b.conv(x, f"{mod}.downsample.0", ds + "/downsample.0",
                                  inplanes, planes * expansion, 1, stride, 0, gain=1.0)
                identity = b.bn(identity, f"{mod}.downsample.1", ds + "/downsample.1",
                                planes * expansion)
            out = b.node("Add", [out, identity], sc)
            x = b.node("Relu", [out], b.reuse(sc + "/relu"))
            inplanes = planes * expansion
    x = b.node("GlobalAveragePool", [x], "/avgpool")
    x = b.node("Flatten", [x], "", axis=1)
    x = b.gemm(x, "fc", "/fc", 512 * expansion, 1000)
    return b.finish(13, ("input", [batch, 3, 224, 224]), (x, "output", [batch, 1000]))


# ---- MobileNet-V2 (torchvision.models.mobilenetv2) -------------------------------------


def mobilenet_v2(b: Builder, batch: int) -> onnx.ModelProto:
    def cna(x, mod, sc, cin, cout, k, stride=1, groups=1):
        """Conv2dNormActivation: Conv (no bias), BatchNorm, ReLU6; module indices 0, 1, 2."""
        last = mod.rsplit(".", 1)[-1]
        x = b.conv(x, f"{mod}.0", f"{sc}/{last}.0", cin, cout, k, stride, (k - 1) // 2, groups)
        x = b.bn(x, f"{mod}.1", f"{sc}/{last}.1", cout)
        return b.relu6(x, f"{sc}/{last}.2")

    x = cna("input", "features.0", "/features/features.0", 3, 32, 3, stride=2)
    cin = 32
    settings = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2],
                [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1]]
    idx = 1
    for t, c, n, s in settings:
        for i in range(n):
            stride = s if i == 0 else 1
            mod = f"features.{idx}"
            sc = f"/features/{mod}/conv"
            hidden = cin * t
            y = x
            j = 0
            if t != 1:
                y = cna(y, f"{mod}.conv.0", f"{sc}/conv.0", cin, hidden, 1)
                j = 1
            y = cna(y, f"{mod}.conv.{j}", f"{sc}/conv.{j}", hidden, hidden, 3, stride, hidden)
            # The linear bottleneck: no activation after it.
            y = b.conv(y, f"{mod}.conv.{j + 1}", f"{sc}/conv.{j + 1}", hidden, c, 1, gain=1.0)
            use_res = stride == 1 and cin == c
            y = b.bn(y, f"{mod}.conv.{j + 2}", f"{sc}/conv.{j + 2}", c, residual_end=use_res)
            if use_res:
                y = b.node("Add", [x, y], f"/features/{mod}")
            x = y
            cin = c
            idx += 1
    x = cna(x, "features.18", "/features/features.18", 320, 1280, 1)
    x = b.node("GlobalAveragePool", [x], "")
    x = b.node("Flatten", [x], "", axis=1)
    # classifier.0 is Dropout(0.2): gone in eval mode.
    x = b.gemm(x, "classifier.1", "/classifier/classifier.1", 1280, 1000)
    return b.finish(13, ("input", [batch, 3, 224, 224]),
                    (x, "output", [batch, 1000]))


# ---- SqueezeNet 1.1 (torchvision.models.squeezenet) ------------------------------------


def squeezenet1_1(b: Builder, batch: int) -> onnx.ModelProto:
    def fire(x, idx, cin, sq, e1, e3):
        mod = f"features.{idx}"
        sc = f"/features/{mod}"
        s = b.conv(x, f"{mod}.squeeze", sc + "/squeeze", cin, sq, 1, bias=True)
        s = b.node("Relu", [s], sc + "/squeeze_activation")
        a = b.conv(s, f"{mod}.expand1x1", sc + "/expand1x1", sq, e1, 1, bias=True)
        a = b.node("Relu", [a], sc + "/expand1x1_activation")
        c = b.conv(s, f"{mod}.expand3x3", sc + "/expand3x3", sq, e3, 3, pad=1, bias=True)
        c = b.node("Relu", [c], sc + "/expand3x3_activation")
        return b.node("Concat", [a, c], sc, axis=1)

    def pool(x, idx):
        return b.node("MaxPool", [x], f"/features/features.{idx}", ceil_mode=1,
                      kernel_shape=[3, 3], pads=[0, 0, 0, 0], strides=[2, 2])

    x = b.conv("input", "features.0", "/features/features.0", 3, 64, 3, stride=2, bias=True)
    x = b.node("Relu", [x], "/features/features.1")
    x = pool(x, 2)
    x = fire(x, 3, 64, 16, 64, 64)
    x = fire(x, 4, 128, 16, 64, 64)
    x = pool(x, 5)
    x = fire(x, 6, 128, 32, 128, 128)
    x = fire(x, 7, 256, 32, 128, 128)
    x = pool(x, 8)
    x = fire(x, 9, 256, 48, 192, 192)
    x = fire(x, 10, 384, 48, 192, 192)
    x = fire(x, 11, 384, 64, 256, 256)
    x = fire(x, 12, 512, 64, 256, 256)
    # classifier: Dropout(0.5) (gone), final_conv 1x1 512->1000, ReLU, AdaptiveAvgPool2d((1,1))
    x = b.conv(x, "classifier.1", "/classifier/classifier.1", 512, 1000, 1, bias=True)
    x = b.node("Relu", [x], "/classifier/classifier.2")
    x = b.node("GlobalAveragePool", [x], "/classifier/classifier.3")
    x = b.node("Flatten", [x], "", axis=1)
    return b.finish(13, ("input", [batch, 3, 224, 224]),
                    (x, "output", [batch, 1000]))


# ---- Inception blocks (torchvision.models.googlenet) -----------------------------------


def inception_stack(b: Builder, batch: int) -> onnx.ModelProto:
    """GoogLeNet's inception (3a), (3b), its 3x3/2 max pool, (4a) and (4b) as
    torchvision's GoogLeNet writes them, with the paper's 5x5 in the third
    branch."""
    def basic_conv(x, mod, sc, cin, cout, k):
        """BasicConv2d: Conv (no bias), BatchNorm (eps 0.001), F.relu."""
        x = b.conv(x, f"{mod}.conv", sc + "/conv", cin, cout, k, pad=(k - 1) // 2)
        x = b.bn(x, f"{mod}.bn", sc + "/bn", cout, eps=1e-3)
        return b.node("Relu", [x], sc)

    def inception(x, name, cin, c1, c3r, c3, c5r, c5, pool_proj):
        mod, sc = name, "/" + name
        y1 = basic_conv(x, f"{mod}.branch1", sc + "/branch1", cin, c1, 1)
        y2 = basic_conv(x, f"{mod}.branch2.0", sc + "/branch2/branch2.0", cin, c3r, 1)
        y2 = basic_conv(y2, f"{mod}.branch2.1", sc + "/branch2/branch2.1", c3r, c3, 3)
        y3 = basic_conv(x, f"{mod}.branch3.0", sc + "/branch3/branch3.0", cin, c5r, 1)
        y3 = basic_conv(y3, f"{mod}.branch3.1", sc + "/branch3/branch3.1", c5r, c5, 5)
        y4 = b.node("MaxPool", [x], sc + "/branch4/branch4.0", ceil_mode=1, kernel_shape=[3, 3],
                    pads=[1, 1, 1, 1], strides=[1, 1])
        y4 = basic_conv(y4, f"{mod}.branch4.1", sc + "/branch4/branch4.1", cin, pool_proj, 1)
        return b.node("Concat", [y1, y2, y3, y4], sc, axis=1), c1 + c3 + c5 + pool_proj

    x, c = inception("input", "inception3a", 192, 64, 96, 128, 16, 32, 32)   # 256
    x, c = inception(x, "inception3b", c, 128, 128, 192, 32, 96, 64)        # 480
    x = b.node("MaxPool", [x], "/maxpool3", ceil_mode=1, kernel_shape=[3, 3],
               pads=[0, 0, 0, 0], strides=[2, 2])                           # 28 -> 14
    x, c = inception(x, "inception4a", c, 192, 96, 208, 16, 48, 64)         # 512
    x, c = inception(x, "inception4b", c, 160, 112, 224, 24, 64, 64)        # 512
    return b.finish(13, ("input", [batch, 192, 28, 28]), (x, "output", [batch, c, 14, 14]))


# ---- transformer encoder layers (transformers BertLayer, ViTLayer) --------------------

SEQ, HIDDEN, HEADS, FFN = 128, 768, 12, 3072
VIT_SEQ = 197  # ViT-Base/16 at 224x224: 196 patches and the class token


def layer_norm(b: Builder, x: str, mod: str, sc: str, opset: int) -> str:
    gamma = b.init(f"{mod}.weight",
                   (1.0 + 0.1 * b.rng.standard_normal(HIDDEN)).astype(np.float32))
    beta = b.init(f"{mod}.bias", b.normal((HIDDEN,), 0.05))
    if opset >= 17:
        return b.node("LayerNormalization", [x, gamma, beta], sc, axis=-1, epsilon=1e-12)
    # torch's layer_norm symbolic before opset 17 (native_layer_norm)
    mean = b.node("ReduceMean", [x], sc, axes=[-1], keepdims=1)
    num = b.node("Sub", [x, mean], sc)
    two = b.const(sc, np.array(2.0, dtype=np.float32))
    sq = b.node("Pow", [num, two], sc)
    var = b.node("ReduceMean", [sq], sc, axes=[-1], keepdims=1)
    eps = b.const(sc, np.array(1e-12, dtype=np.float32))
    den = b.node("Sqrt", [b.node("Add", [var, eps], sc)], sc)
    norm = b.node("Div", [num, den], sc)
    return b.node("Add", [b.node("Mul", [norm, gamma], sc), beta], sc)


def self_attention(b: Builder, x: str, mod: str, sa: str, batch: int, seq: int,
                   qk_gain: float) -> str:
    """BertSelfAttention / ViTSelfAttention without a mask: [N,seq,768] ->
    the heads' context, back as [N,seq,768] (before the output projection)."""
    head = HIDDEN // HEADS
    i64 = np.int64

    def to_heads(t, perm):
        shape = b.const(sa, np.array([batch, seq, HEADS, head], dtype=i64))
        t = b.node("Reshape", [t, shape], sa)
        return b.node("Transpose", [t], sa, perm=perm)

    q = b.linear3d(x, f"{mod}.query", sa + "/query", HIDDEN, HIDDEN, gain=qk_gain)
    k = b.linear3d(x, f"{mod}.key", sa + "/key", HIDDEN, HIDDEN, gain=qk_gain)
    # key.transpose(-1, -2) after the permute: the exporter merges the two Transposes.
    k = to_heads(k, [0, 2, 3, 1])                              # [N,12,64,seq]
    v = b.linear3d(x, f"{mod}.value", sa + "/value", HIDDEN, HIDDEN)
    v = to_heads(v, [0, 2, 1, 3])                              # [N,12,seq,64]
    q = to_heads(q, [0, 2, 1, 3])                              # [N,12,seq,64]
    scores = b.node("MatMul", [q, k], sa)                      # [N,12,seq,seq]
    scores = b.node("Div", [scores, b.const(sa, np.array(math.sqrt(head), dtype=np.float32))], sa)
    probs = b.node("Softmax", [scores], sa, axis=-1)
    # Dropout on the probabilities: gone in eval mode. No attention mask.
    ctx = b.node("MatMul", [probs, v], sa)                     # [N,12,seq,64]
    ctx = b.node("Transpose", [ctx], sa, perm=[0, 2, 1, 3])
    return b.node("Reshape", [ctx, b.const(sa, np.array([batch, seq, HIDDEN], dtype=i64))], sa)


def gelu(b: Builder, h: str, act: str) -> str:
    """GELU, exact (erf) form, as torch exports F.gelu before opset 20."""
    e = b.node("Div", [h, b.const(act, np.array(math.sqrt(2.0), dtype=np.float32))], act)
    e = b.node("Erf", [e], act)
    e = b.node("Add", [e, b.const(act, np.array(1.0, dtype=np.float32))], act)
    g = b.node("Mul", [h, e], act)
    return b.node("Mul", [g, b.const(act, np.array(0.5, dtype=np.float32))], act)


def bert_layer(b: Builder, batch: int, opset: int) -> onnx.ModelProto:
    hs = "hidden_states"
    # Query and key at 4/fan_in: the scores' spread is then about 1.3, so that the
    # softmax is not flat on a random input.
    ctx = self_attention(b, hs, "attention.self", "/attention/self", batch, SEQ, 4.0)
    ao = "/attention/output"
    y = b.linear3d(ctx, "attention.output.dense", ao + "/dense", HIDDEN, HIDDEN)
    y = b.node("Add", [y, hs], ao)
    att = layer_norm(b, y, "attention.output.LayerNorm", ao + "/LayerNorm", opset)
    h = b.linear3d(att, "intermediate.dense", "/intermediate/dense", HIDDEN, FFN)
    g = gelu(b, h, "/intermediate/intermediate_act_fn")
    y = b.linear3d(g, "output.dense", "/output/dense", FFN, HIDDEN)
    y = b.node("Add", [y, att], "/output")
    y = layer_norm(b, y, "output.LayerNorm", "/output/LayerNorm", opset)
    return b.finish(opset, (hs, [batch, SEQ, HIDDEN]), (y, "output", [batch, SEQ, HIDDEN]))


def vit_block(b: Builder, batch: int) -> onnx.ModelProto:
    """One ViT-Base encoder block (transformers ViTLayer, pre-norm): the
    same attention and MLP as bert_layer, each after its LayerNorm, the
    residual added after."""
    hs = "hidden_states"
    x = layer_norm(b, hs, "layernorm_before", "/layernorm_before", 17)
    # The LayerNorm's output has unit variance (bert_layer's input, uniform
    # [-1, 1), a third): query and key at (4/3)/fan_in give the scores
    # bert_layer's spread.
    ctx = self_attention(b, x, "attention.attention", "/attention/attention", batch, VIT_SEQ,
                         4.0 / 3.0)
    y = b.linear3d(ctx, "attention.output.dense", "/attention/output/dense", HIDDEN, HIDDEN)
    y = b.node("Add", [y, hs], "")                             # attention_output + hidden_states
    x = layer_norm(b, y, "layernorm_after", "/layernorm_after", 17)
    h = b.linear3d(x, "intermediate.dense", "/intermediate/dense", HIDDEN, FFN)
    g = gelu(b, h, "/intermediate/intermediate_act_fn")
    z = b.linear3d(g, "output.dense", "/output/dense", FFN, HIDDEN)
    z = b.node("Add", [z, y], "/output")                      # ViTOutput: + input_tensor
    return b.finish(17, (hs, [batch, VIT_SEQ, HIDDEN]), (z, "output", [batch, VIT_SEQ, HIDDEN]))


# ---- small_cnn: the CI model -----------------------------------------------------------


def small_cnn(b: Builder, batch: int) -> onnx.ModelProto:
    """conv-bn-relu (3->16), a BasicBlock (16->16), MaxPool 2x2, depthwise 3x3 +
    BN + ReLU6, pointwise 1x1 16->32 with bias + ReLU, GlobalAveragePool,
    Flatten, Gemm 32->10."""
    x = b.conv("input", "conv1", "/conv1", 3, 16, 3, pad=1)
    x = b.bn(x, "bn1", "/bn1", 16)
    x = b.node("Relu", [x], b.reuse("/relu"))
    sc = "/block"
    out = b.conv(x, "block.conv1", sc + "/conv1", 16, 16, 3, pad=1)
    out = b.bn(out, "block.bn1", sc + "/bn1", 16)
    out = b.node("Relu", [out], b.reuse(sc + "/relu"))
    out = b.conv(out, "block.conv2", sc + "/conv2", 16, 16, 3, pad=1)
    out = b.bn(out, "block.bn2", sc + "/bn2", 16, residual_end=True)
    out = b.node("Add", [out, x], sc)
    x = b.node("Relu", [out], b.reuse(sc + "/relu"))
    x = b.node("MaxPool", [x], "/pool", ceil_mode=0, kernel_shape=[2, 2],
               pads=[0, 0, 0, 0], strides=[2, 2])
    x = b.conv(x, "dw.0", "/dw/dw.0", 16, 16, 3, pad=1, groups=16)
    x = b.bn(x, "dw.1", "/dw/dw.1", 16)
    x = b.relu6(x, "/dw/dw.2")
    x = b.conv(x, "pw", "/pw", 16, 32, 1, bias=True)
    x = b.node("Relu", [x], "/pw_relu")
    x = b.node("GlobalAveragePool", [x], "/avgpool")
    x = b.node("Flatten", [x], "", axis=1)
    x = b.gemm(x, "fc", "/fc", 32, 10)
    return b.finish(13, ("input", [batch, 3, 32, 32]), (x, "output", [batch, 10]))


# ---- driver ---------------------------------------------------------------------------


def build(name: str, seed: int, batch: int) -> onnx.ModelProto:
    rng = np.random.default_rng(np.random.SeedSequence([seed, SEED_INDEX[name]]))
    b = Builder(rng)
    if name == "resnet18":
        return resnet(b, batch, "basic", [2, 2, 2, 2])
    if name == "resnet50":
        return resnet(b, batch, "bottleneck", [3, 4, 6, 3])
    if name == "mobilenet_v2":
        return mobilenet_v2(b, batch)
    if name == "squeezenet1_1":
        return squeezenet1_1(b, batch)
    if name == "bert_layer":
        return bert_layer(b, batch, 17)
    if name == "bert_layer_opset13":
        return bert_layer(b, batch, 13)
    if name == "small_cnn":
        return small_cnn(b, batch)
    if name == "inception_stack":
        return inception_stack(b, batch)
    if name == "vit_block":
        return vit_block(b, batch)
    raise ValueError(name)


def dims(vi: onnx.ValueInfoProto) -> list[int]:
    return [d.dim_value for d in vi.type.tensor_type.shape.dim]


def summary(model: onnx.ModelProto) -> dict:
    """Input shape, parameters and FLOPs (2 x multiply-adds of Conv, Gemm, MatMul)."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    g = inferred.graph
    shapes = {vi.name: dims(vi) for vi in list(g.value_info) + list(g.input) + list(g.output)}
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    params = stats = 0
    for t in g.initializer:
        n = int(np.prod(t.dims)) if t.dims else 1
        if t.name.endswith((".running_mean", ".running_var")):
            stats += n
        else:
            params += n
    macs = 0
    for n in g.node:
        if n.op_type == "Conv":
            w = shapes[n.input[1]]
            y = shapes[n.output[0]]
            macs += int(np.prod(y)) * int(np.prod(w[1:]))
        elif n.op_type == "Gemm":
            a = shapes[n.input[0]]
            y = shapes[n.output[0]]
            trans_a = any(at.name == "transA" and at.i for at in n.attribute)
            macs += int(np.prod(y)) * (a[0] if trans_a else a[1])
        elif n.op_type == "MatMul":
            a = shapes[n.input[0]]
            y = shapes[n.output[0]]
            macs += int(np.prod(y)) * a[-1]
    return {"input": dims(g.input[0]), "output": dims(g.output[0]), "params": params,
            "bn_stats": stats, "flops": 2 * macs, "nodes": len(g.node)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="directory the .onnx files go to (made if missing)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", help="comma-separated model names (default: all)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--summary", action="store_true",
                    help="print input shape, parameters and FLOPs per model")
    args = ap.parse_args()
    if not args.out and not args.summary:
        ap.error("--out DIR is required (or --summary alone)")
    names = MODELS if not args.only else [n.strip() for n in args.only.split(",") if n.strip()]
    for n in names:
        if n not in MODELS:
            ap.error(f"unknown model '{n}'; models: {', '.join(MODELS)}")
    if args.batch < 1:
        ap.error("--batch must be >= 1")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    if args.summary:
        print(f"{'model':<20} {'opset':>5} {'input':<16} {'nodes':>5} {'params':>12} "
              f"{'BN stats':>9} {'FLOPs':>15} {'MB':>7}")
    for n in names:
        model = build(n, args.seed, args.batch)
        onnx.checker.check_model(model, full_check=True)
        data = model.SerializeToString()
        if args.out:
            path = os.path.join(args.out, n + ".onnx")
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        if args.summary:
            s = summary(model)
            print(f"{n:<20} {model.opset_import[0].version:>5} "
                  f"{'x'.join(map(str, s['input'])):<16} {s['nodes']:>5} {s['params']:>12,} "
                  f"{s['bn_stats']:>9,} {s['flops']:>15,} {len(data) / 1e6:>7.1f}")
        elif args.out:
            print(os.path.join(args.out, n + ".onnx"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
