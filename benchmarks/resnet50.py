"""The ResNet-50 parameter set, by hand: torchvision's ``resnet50()`` layout.

161 learnable tensors (conv weights, BatchNorm gamma/beta, the classifier's
weight and bias) holding 25,557,032 float32 values, in torchvision's
``named_parameters()`` order and names. Derived from the architecture, not
downloaded, so the benchmark needs neither torch nor a network.
"""
from __future__ import annotations

from typing import List, Tuple

RESNET50_KEYS = 161
RESNET50_PARAMS = 25_557_032

# (planes, blocks) per stage; the bottleneck expands planes by 4.
_STAGES = ((64, 3), (128, 4), (256, 6), (512, 3))
_EXPANSION = 4


def _bn(prefix: str, channels: int) -> List[Tuple[str, Tuple[int, ...]]]:
    return [(prefix + ".weight", (channels,)), (prefix + ".bias", (channels,))]


def resnet50_param_shapes(num_classes: int = 1000) -> List[Tuple[str, Tuple[int, ...]]]:
    """Return ``[(name, shape), ...]`` for ResNet-50's 161 parameters.

    >>> shapes = resnet50_param_shapes()
    >>> len(shapes), shapes[0]
    (161, ('conv1.weight', (64, 3, 7, 7)))
    """
    out: List[Tuple[str, Tuple[int, ...]]] = [("conv1.weight", (64, 3, 7, 7))]
    out += _bn("bn1", 64)
    inplanes = 64
    for stage, (planes, blocks) in enumerate(_STAGES, start=1):
        width = planes * _EXPANSION
        for b in range(blocks):
            p = "layer%d.%d" % (stage, b)
            out.append((p + ".conv1.weight", (planes, inplanes, 1, 1)))
            out += _bn(p + ".bn1", planes)
            out.append((p + ".conv2.weight", (planes, planes, 3, 3)))
            out += _bn(p + ".bn2", planes)
            out.append((p + ".conv3.weight", (width, planes, 1, 1)))
            out += _bn(p + ".bn3", width)
            if b == 0:  # stride or width change: projection shortcut
                out.append((p + ".downsample.0.weight", (width, inplanes, 1, 1)))
                out += _bn(p + ".downsample.1", width)
            inplanes = width
    out.append(("fc.weight", (num_classes, inplanes)))
    out.append(("fc.bias", (num_classes,)))
    if num_classes == 1000:
        total = sum(_numel(s) for _, s in out)
        if len(out) != RESNET50_KEYS or total != RESNET50_PARAMS:
            raise RuntimeError("ResNet-50 parameter set is wrong: %d keys, %d values "
                               "(expected %d, %d)" % (len(out), total,
                                                      RESNET50_KEYS, RESNET50_PARAMS))
    return out


def _numel(shape: Tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


if __name__ == "__main__":
    shapes = resnet50_param_shapes()
    print(len(shapes), sum(_numel(s) for _, s in shapes))
