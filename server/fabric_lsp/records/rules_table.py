"""The rules fabric-lsp reports, their codes and knowledge-base records: the one place that maps them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    code: str  # "FAB001"
    name: str  # "unmarked-forward-method"
    record_id: str  # id of the record in records/data/ that explains the runtime error
    summary: str  # one line, for `fabric-lsp rules` and rule docstrings


# FAB003's, FAB004's, FAB005's, FAB006's, FAB007's and FAB008's records are the project's own (records/data/
# ce209f7f268e625f.json, 5cc4a68dd37501f7.json, 232fae503d8e4e1d.json, 1530a0a419e77f8e.json, ...). Their ids
# follow the seeds' 16-hex shape: sha256("<repo>\n<filePath>\n<errorMessage>")[:16]
# of that record's fields. Other runtime paths to a record's root cause (FAB002 under torch FSDP and
# ModelParallel, FAB004's ValueError for "forward") are in records/paths.json.
RULES: tuple[Rule, ...] = (
    Rule(
        "FAB001",
        "unmarked-forward-method",
        "af391673c4dd180e",
        "Calling a custom method that runs a submodule on a Fabric-wrapped model without "
        "mark_forward_method raises RuntimeError under DDP/FSDP/DeepSpeed.",
    ),
    Rule(
        "FAB002",
        "missing-reset-parameters",
        "ac5b68eddc82d846",
        "A module that owns parameters or buffers but has no reset_parameters cannot be materialized "
        "from the meta device (TypeError; AttributeError under torch FSDP; garbage weights under ModelParallel).",
    ),
    Rule(
        "FAB003",
        "mark-forward-method-bound",
        "ce209f7f268e625f",
        "mark_forward_method(wrapped.m) passes the wrapper's plain function, which raises TypeError "
        'under a wrapping strategy or after torch.compile (Cls.m: on every strategy); pass the name "m".',
    ),
    Rule(
        "FAB004",
        "mark-forward-method-invalid-name",
        "5cc4a68dd37501f7",
        'mark_forward_method("x") where x is not a method of the model\'s class (a typo, an attribute, a '
        'property, a staticmethod) raises AttributeError on every strategy; "forward" raises ValueError.',
    ),
    Rule(
        "FAB005",
        "missing-launch",
        "232fae503d8e4e1d",
        "A Fabric whose strategy needs several processes (ddp, fsdp, deepspeed, devices>1, ...) used by setup, "
        "init_module or a collective before fabric.launch() raises RuntimeError, unless started by `fabric run`.",
    ),
    Rule(
        "FAB006",
        "loss-backward-on-wrapped-output",
        "1530a0a419e77f8e",
        "loss.backward() on a loss computed from a Fabric-wrapped model's output raises RuntimeError under mixed "
        "precision, FSDP or DeepSpeed (Lightning's backward hook); call fabric.backward(loss).",
    ),
    Rule(
        "FAB007",
        "setup-misuse",
        "aa5948b33c548d53",
        "Fabric's setup API refused before anything runs: a model set up twice (ValueError), no_backward_sync on "
        "a model never set up, setup_dataloaders with a list or Dataset (TypeError), setup_optimizers under "
        "DeepSpeed/XLA (RuntimeError).",
    ),
    Rule(
        "FAB008",
        "launch-misuse",
        "7affc520177ccdfc",
        "fabric.launch(train(fabric)) passes the function's result (TypeError: needs to be a callable); "
        "launch(fn) with fn taking no argument, and launch() without a function under a spawn strategy, raise TypeError.",
    ),
    Rule(
        "FAB009",
        "frozen-module-setup",
        "613222fb39e35191",
        "A module with no parameter that requires a gradient (a frozen EMA, teacher or VAE, a module of buffers) "
        "set up under DDP raises RuntimeError: DistributedDataParallel is not needed; move it with fabric.to_device.",
    ),
)

_BY_CODE = {rule.code: rule for rule in RULES}
_BY_NAME = {rule.name: rule for rule in RULES}
_BY_RECORD = {rule.record_id: rule for rule in RULES}


def rule_by_code(code_or_name: str) -> Rule | None:
    """The rule with this code ("FAB001", any case) or name ("unmarked-forward-method")."""
    key = code_or_name.strip()
    return _BY_CODE.get(key.upper()) or _BY_NAME.get(key.lower())


def rule_for_record(record_id: str) -> Rule | None:
    return _BY_RECORD.get(record_id)
