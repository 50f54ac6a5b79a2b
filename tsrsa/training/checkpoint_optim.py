"""What the optimiser's, the schedule's and the gradient scaler's states in a checkpoint must be.

The loop hands these states to torch as they are (``load_state_dict``), and torch takes a group's
options and a schedule's fields from the file without a question, so each is checked first against
a template: the state of an AdamW (and of the schedule the run steps) made as the loop makes them,
on one throwaway parameter, with the run's learning rate and weight decay. Every option and field
of the template must be in the file and of its kind (a flag or a name equal to the template's, a
count an int, a rate a finite number); the first group's options and the schedule's fields that do
not move with the steps must equal the template's, and the moments of each parameter must be
finite tensors of a weight's shape (of its own parameter's, given the run's optimiser). A fault
raises :class:`Fault`.
"""
from __future__ import annotations

import math

import torch

#: the schedules the loop steps, each made as tsrsa.training.loop.make_scheduler makes it
SCHEDULES = {
    "cosine": lambda optimizer: torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=100),
    "onecycle": lambda optimizer: torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=[group["lr"] for group in optimizer.param_groups], total_steps=100),
    "halving": lambda optimizer: torch.optim.lr_scheduler.StepLR(optimizer, step_size=100, gamma=0.5),
}
#: fields of a schedule that move with the steps or depend on the steps of an epoch
STEPPED = ("total_steps", "T_max", "step_size", "last_epoch", "_step_count", "_last_lr", "_schedule_phases")
#: options of a group that a schedule moves during the run
MOVED = ("lr", "betas")
#: what a gradient scaler's state holds: name -> least value
SCALER = {"scale": 0.0, "growth_factor": 1.0, "backoff_factor": 0.0, "growth_interval": 1, "_growth_tracker": 0}


class Fault(ValueError):
    """One thing wrong with a checkpoint's contents (worded to follow "the checkpoint ...")."""


def templates(limits) -> tuple[dict, dict | None]:
    """The options of an AdamW group and the schedule's state (None: no schedule) of the run of ``limits``."""
    parameter = torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.AdamW([parameter], lr=limits.learning_rate, weight_decay=limits.weight_decay)
    schedule = SCHEDULES[limits.schedule](optimizer) if limits.schedule in SCHEDULES else None
    group = {k: v for k, v in optimizer.param_groups[0].items() if k != "params"}
    return group, None if schedule is None else schedule.state_dict()


def check_optimizer(saved, weights: dict, limits=None, optimizer=None) -> None:
    """AdamW's state: groups of distinct parameter numbers 0..n-1 whose options are the template's, and
    finite moments of a weight's shape (of its parameter's, given the live ``optimizer``)."""
    if not isinstance(saved, dict) or not isinstance(saved.get("param_groups"), list) \
            or not isinstance(saved.get("state"), dict) or not saved["param_groups"]:
        raise Fault("its optimizer state is not a dict of 'state' and 'param_groups'")
    template = templates(limits)[0] if limits is not None else None
    numbers = []
    for index, group in enumerate(saved["param_groups"]):
        if not isinstance(group, dict) or not isinstance(group.get("params"), list) \
                or not all(type(i) is int for i in group["params"]):
            raise Fault("its optimizer has a parameter group without a list of parameter numbers")
        check_group(index, group, template)
        numbers += group["params"]
    if sorted(numbers) != list(range(len(numbers))) or len(numbers) > len(weights):
        raise Fault(f"its optimizer numbers {len(numbers)} parameters oddly for a network of {len(weights)} tensors")
    shapes = parameter_shapes(saved, optimizer) if optimizer is not None else None
    allowed = {tuple(w.shape) for w in weights.values()}
    for number, moments in saved["state"].items():
        if number not in numbers or not isinstance(moments, dict):
            raise Fault(f"its optimizer holds moments of parameter {number!r}, which no group has")
        check_moments(number, moments, shapes[number] if shapes is not None else None, allowed)


def check_group(index: int, group: dict, template: dict | None) -> None:
    """One group's options: finite rates, betas in [0, 1); like ``template`` (the first group: equal
    to it, but for the options a schedule moves)."""
    options = {k: v for k, v in group.items() if k != "params"}
    for key, value in options.items():
        if key == "betas":
            if not (isinstance(value, (tuple, list)) and len(value) == 2 and all(
                    is_number(b) and 0 <= b < 1 for b in value)):
                raise Fault(f"its optimizer's group {index} has betas {value!r}")
        elif not (value is None or isinstance(value, bool) or (is_number(value) and value >= 0)):
            raise Fault(f"its optimizer's group {index} has {key}={value!r}")
    if template is None:
        return
    for key, expected in template.items():
        if key not in options:
            raise Fault(f"its optimizer's group {index} has no {key!r}")
        value = options[key]
        if isinstance(expected, bool) or (expected is None and key != "foreach" and key != "fused"):
            same = value is expected
        elif key in ("foreach", "fused"):
            same = value is None or isinstance(value, bool)
        elif key == "betas":
            same = index > 0 or value[1] == expected[1]
        else:
            same = is_number(value) and (index > 0 or key in MOVED or value == expected)
        if not same:
            raise Fault(f"its optimizer's group {index} has {key}={value!r}, where this fit's has {expected!r}")
    peak = max(v for k, v in template.items() if is_number(v) and k.endswith("lr"))
    if index == 0 and options["lr"] > peak * (1 + 1e-9):
        raise Fault(f"its optimizer's learning rate {options['lr']!r} is above this fit's peak rate")


def parameter_shapes(saved: dict, optimizer) -> dict:
    """The shape of each parameter number of the live ``optimizer``, whose groups ``saved`` must have."""
    groups = optimizer.param_groups
    if [len(g["params"]) for g in saved["param_groups"]] != [len(g["params"]) for g in groups]:
        raise Fault(f"its optimizer has groups of {[len(g['params']) for g in saved['param_groups']]} parameters, "
                    f"where this fit's has {[len(g['params']) for g in groups]}")
    return dict(enumerate(tuple(p.shape) for g in groups for p in g["params"]))


def check_moments(number: int, moments: dict, shape, allowed: set) -> None:
    """One parameter's AdamW state: a finite step count (a one-number tensor) and finite moments of its
    shape (or, without the run's optimiser, of one of the ``allowed`` shapes)."""
    step = moments.get("step")
    if not (torch.is_tensor(step) and step.numel() == 1 and step.is_floating_point() and 0 <= float(step) < math.inf):
        raise Fault(f"its optimizer's step count of parameter {number} is {step!r}")
    for key in ("exp_avg", "exp_avg_sq"):
        value = moments.get(key)
        if not torch.is_tensor(value) or not value.is_floating_point() or not bool(torch.isfinite(value).all()):
            raise Fault(f"its optimizer's {key} of parameter {number} is not a tensor of finite values")
        if (tuple(value.shape) != shape) if shape is not None else (tuple(value.shape) not in allowed):
            raise Fault(f"its optimizer's {key} of parameter {number} has shape {tuple(value.shape)}, which is "
                        f"{'not ' + str(shape) if shape is not None else 'the shape of no weight of the network'}")
    if bool((moments["exp_avg_sq"] < 0).any()):
        raise Fault(f"its optimizer's exp_avg_sq of parameter {number} is negative")


def check_schedule(saved, limits, groups: int) -> None:
    """The schedule's state: None when the run steps none; else the template's fields, each of its kind
    (flags and names equal, counts ints at least the template's, rates finite and not negative, one
    rate per group), equal to it where the steps do not move them."""
    if limits is None:
        if saved is not None and not isinstance(saved, dict):
            raise Fault("its scheduler state is not a dict")
        return
    template = templates(limits)[1]
    if (saved is None) != (template is None):
        raise Fault("its scheduler state is missing, but this fit uses one" if saved is None else
                    "it has a scheduler state, but this fit uses none")
    if saved is None:
        return
    if not isinstance(saved, dict) or set(saved) != set(template):
        raise Fault(f"its scheduler state holds {sorted(saved)[:8] if isinstance(saved, dict) else saved!r}, where "
                    f"this fit's schedule has {sorted(template)}")
    for key, expected in template.items():
        value = saved[key]
        if not like(value, expected, groups) or (key not in STEPPED and (  # the first group's, where lists
                value[:1] != expected[:1] if isinstance(expected, list) else value != expected)):
            raise Fault(f"its scheduler's {key} is {value!r}, where this fit's is like {expected!r}")
    if "total_steps" in saved and saved["last_epoch"] > saved["total_steps"]:
        raise Fault(f"its scheduler has taken {saved['last_epoch']} of {saved['total_steps']} steps")
    ends = [phase["end_step"] for phase in saved.get("_schedule_phases", ())]
    if any(b <= a for a, b in zip([-1, *ends], ends)):
        raise Fault(f"its scheduler's phases end at steps {ends}, not one after another")


def like(value, template, groups: int) -> bool:
    """Whether ``value`` is of the kind of ``template`` (see :func:`check_schedule`)."""
    if isinstance(template, (bool, str)) or template is None:
        return type(value) is type(template) and value == template
    if isinstance(template, int):
        return type(value) is int and value >= min(template, 1)
    if isinstance(template, float):
        return is_number(value) and value >= 0
    if isinstance(template, dict):
        return isinstance(value, dict) and set(value) == set(template) and all(
            like(value[k], t, groups) for k, t in template.items())
    if isinstance(template, list) and template and isinstance(template[0], dict):
        return isinstance(value, list) and len(value) == len(template) and all(
            like(v, t, groups) for v, t in zip(value, template))
    if isinstance(template, list):
        return isinstance(value, list) and len(value) == groups and all(like(v, template[0], groups) for v in value)
    return False


def check_scaler(saved, limits) -> None:
    """The gradient scaler's state: None when the run scales no gradients; else SCALER's fields."""
    if limits is not None and (saved is None) == limits.scaled:
        raise Fault("its grad_scaler state is missing, but this fit uses one" if saved is None else
                    "it has a grad_scaler state, but this fit uses none")
    if saved is None:
        return
    if not isinstance(saved, dict) or set(saved) != set(SCALER) or not all(
            is_number(saved[k]) and saved[k] >= least and (type(least) is float or type(saved[k]) is int)
            for k, least in SCALER.items()) or not saved["scale"] > 0:
        raise Fault(f"its grad_scaler state is not {sorted(SCALER)} of finite values")


def is_number(value) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
