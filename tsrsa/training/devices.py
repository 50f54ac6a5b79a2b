"""Where and in which precision a network runs; threads for CPU work."""
from __future__ import annotations

import contextlib

import torch

ACCELERATORS = ("auto", "cpu", "gpu", "cuda", "mps")
PRECISIONS = ("32", "32-true", "bf16-mixed", "16-mixed")


def check_accelerator(accelerator, devices) -> None:
    if accelerator not in ACCELERATORS:
        raise ValueError(f"accelerator={accelerator!r} is not supported; use one of {ACCELERATORS}")
    if devices in (None, "auto"):
        return
    if isinstance(devices, bool) or not isinstance(devices, (int, list, tuple)):
        raise TypeError(f"devices must be None, 'auto', a count or a list of device indices; got {devices!r}")
    count = devices if isinstance(devices, int) else len(devices)
    if count < 1:
        raise ValueError(f"devices={devices!r} names no device; use a count >= 1 or a list of indices")
    if not isinstance(devices, int) and (
        len(set(devices)) != len(devices)
        or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in devices)
    ):
        raise ValueError(f"devices={devices!r} must list distinct non-negative device indices")
    if count > 1 and accelerator == "mps":
        raise ValueError(f"devices={devices!r}: there is one Apple GPU; use devices=1 with accelerator='mps'")


def resolve_device(accelerator: str = "auto", devices=None) -> torch.device:
    """The torch device a fit runs on."""
    check_accelerator(accelerator, devices)
    index = devices[0] if isinstance(devices, (list, tuple)) else None
    if accelerator == "auto":
        accelerator = "cuda" if torch.cuda.is_available() else "cpu"
    if accelerator in ("gpu", "cuda"):
        if not torch.cuda.is_available():
            raise ValueError(
                f"accelerator={accelerator!r} but torch sees no CUDA device; use accelerator='cpu' "
                "or 'auto', or install a CUDA build of torch (see the README)"
            )
        return torch.device("cuda", index if index is not None else torch.cuda.current_device())
    if accelerator == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError("accelerator='mps' but torch sees no Apple GPU; use accelerator='cpu'")
        return torch.device("mps")
    return torch.device("cpu")


def resolve_devices(accelerator: str = "auto", devices=None) -> list[torch.device]:
    """One torch device per data-parallel worker: ``devices`` CPU processes, or CUDA devices
    0..k-1 (or the listed indices)."""
    check_accelerator(accelerator, devices)
    first = resolve_device(accelerator, None)
    count = devices if isinstance(devices, int) else 1 if devices in (None, "auto") else len(devices)
    if first.type != "cuda":
        return [first] * count
    indices = list(range(count)) if not isinstance(devices, (list, tuple)) else list(devices)
    available = torch.cuda.device_count()
    if max(indices) >= available:
        raise ValueError(f"devices={devices!r} but torch sees {available} CUDA device(s)")
    return [torch.device("cuda", i) for i in indices]


def check_precision(precision) -> str:
    """The precision as a canonical string ("32", "bf16-mixed", "16-mixed")."""
    value = str(precision)
    if value not in PRECISIONS and value not in ("16", "bf16"):
        raise ValueError(f"precision={precision!r} is not supported; use one of {PRECISIONS}")
    return {"32-true": "32", "16": "16-mixed", "bf16": "bf16-mixed"}.get(value, value)


def check_compile(compile) -> None:
    """``compile`` is False, True or the name of a ``torch.compile`` backend."""
    if isinstance(compile, bool):
        return
    if not isinstance(compile, str):
        raise TypeError(f"compile must be True, False or the name of a torch.compile backend; got {compile!r}")
    backends = torch._dynamo.list_backends(exclude_tags=())
    if compile not in backends:
        raise ValueError(f"compile={compile!r} names no torch.compile backend; use True (the default backend) "
                         f"or one of {sorted(backends)}")


def autocast(device: torch.device, precision: str):
    """Context manager running the forward pass in the requested precision."""
    precision = check_precision(precision)
    if precision == "32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16-mixed" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


@contextlib.contextmanager
def torch_threads(num_threads: int | None):
    """Use ``num_threads`` threads inside the block, torch's intra-op threads and the BLAS pools numpy and
    scipy call (the least squares of a statistical start), then restore the caller's
    settings. None leaves both as they are.

    Both matter beside another busy process: a second thread spinning in OpenMP or OpenBLAS while the core
    it waits for is taken makes a fit several times slower (benchmarks/threads.py).
    """
    if num_threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(int(num_threads))
    try:
        with threadpool_limits(limits=int(num_threads), user_api="blas"):
            yield
    finally:
        torch.set_num_threads(before)
