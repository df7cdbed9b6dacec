"""YOLOX#1907 (2026-08-29, on torch 2.13.0): tools/export_onnx.py calls `torch.onnx._export`.

A small YOLOX-shaped model (Focus stem, SiLU convs, a decoupled head) stands in for the
checkpoint; the export call is the script's own, as the thread quotes it.
"""

import argparse

import torch
from torch import nn


class Focus(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(cin * 4, cout, 3, 1, 1), nn.SiLU())

    def forward(self, x):
        tl, bl = x[..., ::2, ::2], x[..., 1::2, ::2]
        tr, br = x[..., ::2, 1::2], x[..., 1::2, 1::2]
        return self.conv(torch.cat((tl, bl, tr, br), dim=1))


class TinyYOLOX(nn.Module):
    def __init__(self, num_classes: int = 80) -> None:
        super().__init__()
        self.stem = Focus(3, 16)
        self.dark = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.SiLU())
        self.head = nn.Conv2d(32, 5 + num_classes, 1)

    def forward(self, x):
        out = self.head(self.dark(self.stem(x)))
        return out.flatten(start_dim=2).permute(0, 2, 1)


def main():
    parser = argparse.ArgumentParser("YOLOX onnx deploy")
    parser.add_argument("--output-name", type=str, default="yolox.onnx")
    parser.add_argument("--input", default="images", type=str)
    parser.add_argument("--output", default="output", type=str)
    parser.add_argument("-o", "--opset", default=11, type=int)
    parser.add_argument("--dynamic", action="store_true")
    args = parser.parse_args()
    model = TinyYOLOX().eval()
    dummy_input = torch.randn(1, 3, 64, 64)
    torch.onnx._export(  # @yolox-private-export
        model,
        dummy_input,
        args.output_name,
        input_names=[args.input],
        output_names=[args.output],
        dynamic_axes={args.input: {0: "batch"}, args.output: {0: "batch"}}
        if args.dynamic
        else None,
        opset_version=args.opset,
    )
    print("generated onnx model named {}".format(args.output_name))


if __name__ == "__main__":
    main()
