"""Fused kernels: native extension when built, pure PyTorch otherwise.

``minitron/csrc/fused_kernels.cpp`` implements the attention softmax fusion
as the extension ``minitron_fused_kernels``.  It is looked up by name at
import time; CI machines and the unit tests normally run the fallback, which
is numerically the reference the kernel is tested against.  The native
kernel is forward-only, so it is only used when autograd is not recording.
"""

import importlib

import torch

EXTENSION_NAME = "minitron_fused_kernels"


def _load_extension():
    try:
        return importlib.import_module(EXTENSION_NAME)
    except ImportError:
        return None


_EXTENSION = _load_extension()


def native_available():
    return _EXTENSION is not None


def scale_mask_softmax_reference(scores, mask, scale):
    """softmax(scores * scale) with masked positions excluded; fp32 math."""
    scaled = scores.float() * scale
    scaled = scaled.masked_fill(mask, torch.finfo(torch.float32).min)
    return torch.softmax(scaled, dim=-1)


def scale_mask_softmax(scores, mask, scale):
    if _EXTENSION is not None and not torch.is_grad_enabled():
        return _EXTENSION.scale_mask_softmax_forward(scores.float().contiguous(), mask, scale)
    return scale_mask_softmax_reference(scores, mask, scale)
